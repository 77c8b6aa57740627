// Comm: this rank's link to the others — the c10d rendezvous store and one process group
// (Gloo on CPU; NCCL on CUDA when LibTorch has it). Every collective goes through the
// probes' CollectiveScope (a `coll` record and a flight-recorder entry, process group 0)
// and blocks until done; a failure or timeout throws CollectiveError naming it.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include "launch/dist_env.h"
#include "probes/call_sites.h"

namespace dsdiag::probes {
class CollectiveProbe;
}

namespace dsdiag::trainer {

// What a backend is in c10d: LibTorch 1.13's ProcessGroupGloo/NCCL are ProcessGroups; from
// 2.0 on they are Backends (a ProcessGroup dispatches to one per device type). Both offer
// the same allreduce / broadcast / barrier the trainer calls, so it holds the backend itself.
#if TORCH_VERSION_MAJOR >= 2
using CommGroup = c10d::Backend;
#else
using CommGroup = c10d::ProcessGroup;
#endif

// A collective failed (peer gone, size mismatch, timeout). The message names the
// collective: "allreduce grad-bucket-2 (seq 41, 14080 f32): <c10d's message>".
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(const std::string& message, bool timed_out)
      : std::runtime_error(message), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

struct CommOptions {
  std::chrono::milliseconds timeout{60000};  // every collective (--timeout)
  // Rendezvous, connecting the group and store operations: at least this long whatever
  // --timeout says, since ranks of a loaded host start seconds apart.
  std::chrono::milliseconds connect_timeout{60000};
  std::string backend;         // "gloo", "nccl"; empty: by device
  std::string device = "cpu";  // "cpu", "cuda"
};

class Comm {
 public:
  // Rendezvous at env.master_addr:master_port (rank 0 hosts the TCPStore), then builds
  // the process group. Throws std::runtime_error saying which step failed.
  static std::unique_ptr<Comm> Connect(const launch::DistEnv& env, const CommOptions& options);
  ~Comm();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& backend() const { return backend_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::chrono::milliseconds store_timeout() const { return store_timeout_; }
  // The rendezvous store; main thread only (a watcher thread opens its own client).
  c10d::Store& store() { return *store_; }
  const std::string& store_host() const { return host_; }
  int store_port() const { return port_; }

  // Required before the first collective (the session starts after the rendezvous).
  void set_probe(probes::CollectiveProbe* probe) { probe_ = probe; }

  // Blocking collectives; throw CollectiveError. `where`: the trainer's line that issued it
  // (the `coll` record's call site).
  void AllReduce(torch::Tensor& tensor, c10d::ReduceOp::RedOpType op, std::string_view tag,
                 probes::SourceLocation where = probes::SourceLocation::Current());
  void Broadcast(torch::Tensor& tensor, int root, std::string_view tag,
                 probes::SourceLocation where = probes::SourceLocation::Current());
  void Barrier(std::string_view tag,
               probes::SourceLocation where = probes::SourceLocation::Current());

 private:
  Comm() = default;
  template <typename Issue>
  void Run(std::string_view op, const torch::Tensor* tensor, std::string_view tag,
           probes::SourceLocation where, Issue issue);

  int rank_ = 0;
  int world_size_ = 1;
  std::string backend_;
  std::chrono::milliseconds timeout_{60000};
  std::chrono::milliseconds store_timeout_{60000};
  std::string host_;
  int port_ = 0;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<CommGroup> group_;
  probes::CollectiveProbe* probe_ = nullptr;
};

// "f32", "bf16", "f16", "f64", "i64", ...: the trace's dtype spelling.
const char* DtypeName(torch::ScalarType type);

}  // namespace dsdiag::trainer
