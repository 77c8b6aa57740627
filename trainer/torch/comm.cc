// Backends are compile-guarded the way LibTorch guards them: TorchConfig.cmake exports
// USE_C10D_GLOO / USE_C10D_NCCL for the backends the library was built with (Debian's
// LibTorch: Gloo, no NCCL).
#include "trainer/torch/comm.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "probes/collective_probe.h"
#include "trainer/torch/error_text.h"

namespace dsdiag::trainer {
namespace {

#ifdef USE_C10D_GLOO
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::shared_ptr<gloo::transport::Device> GlooDevice(const std::string& master_addr) {
  // GLOO_SOCKET_IFNAME is what torch.distributed honours too.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  // A single-host job talks over loopback; otherwise bind to this host's address.
  if (IsLoopback(master_addr)) {
    return c10d::ProcessGroupGloo::createDeviceForHostname(master_addr);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

std::string ResolveBackend(const CommOptions& options) {
  if (!options.backend.empty()) return options.backend;
  return options.device == "cuda" ? "nccl" : "gloo";
}

}  // namespace

const char* DtypeName(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat:
      return "f32";
    case torch::kDouble:
      return "f64";
    case torch::kHalf:
      return "f16";
    case torch::kBFloat16:
      return "bf16";
    case torch::kLong:
      return "i64";
    case torch::kInt:
      return "i32";
    case torch::kByte:
      return "u8";
    case torch::kBool:
      return "bool";
    default:
      return "other";
  }
}

std::unique_ptr<Comm> Comm::Connect(const launch::DistEnv& env, const CommOptions& options) {
  std::unique_ptr<Comm> comm(new Comm());
  comm->rank_ = env.rank;
  comm->world_size_ = env.world_size;
  comm->timeout_ = options.timeout;
  comm->store_timeout_ = std::max(options.timeout, options.connect_timeout);
  comm->host_ = env.master_addr;
  comm->port_ = env.master_port;
  comm->backend_ = ResolveBackend(options);

  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(env.master_port);
  store_options.isServer = env.rank == 0;
  store_options.numWorkers = static_cast<size_t>(env.world_size);
  store_options.waitWorkers = true;
  store_options.timeout = comm->store_timeout_;
  try {
    comm->store_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw std::runtime_error("rendezvous at " + env.master_addr + ":" +
                             std::to_string(env.master_port) + " failed (rank " +
                             std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                             "): " + ErrorText(e));
  }

  // The group's rendezvous keys live under their own prefix so that dsdiag's own keys
  // (run id, clock, errors) cannot collide with them.
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("pg0", comm->store_);
  try {
    if (comm->backend_ == "gloo") {
#ifdef USE_C10D_GLOO
      // Gloo 1.13 applies the group's timeout to every collective (it ignores the
      // per-op one), so the group gets --timeout; its error names the stuck operation.
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
      gloo_options->devices.push_back(GlooDevice(env.master_addr));
      comm->group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(group_store, env.rank,
                                                                 env.world_size, gloo_options);
#else
      throw std::runtime_error("this LibTorch was built without Gloo; use --backend nccl");
#endif
    } else if (comm->backend_ == "nccl") {
#ifdef USE_C10D_NCCL
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = options.timeout;
      comm->group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_store, env.rank,
                                                                 env.world_size, nccl_options);
#else
      throw std::runtime_error("this LibTorch was built without NCCL; use --backend gloo");
#endif
    } else {
      throw std::runtime_error("unknown backend '" + comm->backend_ + "' (expected gloo or nccl)");
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("creating the " + comm->backend_ +
                             " process group failed: " + ErrorText(e));
  }
  return comm;
}

Comm::~Comm() = default;

template <typename Issue>
void Comm::Run(std::string_view op, const torch::Tensor* tensor, std::string_view tag,
               probes::SourceLocation where, Issue issue) {
  if (probe_ == nullptr) throw std::logic_error("Comm: collective before set_probe()");
  const int64_t n = tensor ? tensor->numel() : 0;
  const char* dtype = tensor ? DtypeName(tensor->scalar_type()) : "none";
  const int64_t bytes = tensor ? n * static_cast<int64_t>(tensor->element_size()) : 0;
  probes::CollectiveScope scope(probe_, /*pg=*/0, op, dtype, n, bytes, tag, where);
  try {
    c10::intrusive_ptr<c10d::Work> work = issue();
    scope.Started();
    // Gloo enforces the same timeout itself, with a better message: give it the first word.
    // Given a timeout, NCCL's wait() too blocks this thread until the collective completed
    // on the device (not only queued), so the scope's end is the collective's on both.
    work->wait(timeout_ + std::chrono::seconds(2));
  } catch (const std::exception& e) {
    const std::string error = ErrorText(e);
    throw CollectiveError(std::string(op) + " " + std::string(tag) + " (seq " +
                              std::to_string(scope.seq()) + ", " + std::to_string(n) + " " + dtype +
                              "): " + error,
                          error.find("imed out") != std::string::npos);
  }
}

void Comm::AllReduce(torch::Tensor& tensor, c10d::ReduceOp::RedOpType op, std::string_view tag,
                     probes::SourceLocation where) {
  Run("allreduce", &tensor, tag, where, [&] {
    std::vector<torch::Tensor> tensors{tensor};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp(op);
    opts.timeout = timeout_;
    return group_->allreduce(tensors, opts);
  });
}

void Comm::Broadcast(torch::Tensor& tensor, int root, std::string_view tag,
                     probes::SourceLocation where) {
  Run("broadcast", &tensor, tag, where, [&] {
    std::vector<torch::Tensor> tensors{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = timeout_;
    return group_->broadcast(tensors, opts);
  });
}

void Comm::Barrier(std::string_view tag, probes::SourceLocation where) {
  Run("barrier", nullptr, tag, where, [&] {
    c10d::BarrierOptions opts;
    opts.timeout = timeout_;
    return group_->barrier(opts);
  });
}

}  // namespace dsdiag::trainer
