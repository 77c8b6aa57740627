// PeerOp: one point-to-point message — a send to one peer or a recv from one (torch's send,
// recv, isend, irecv, each op of batch_isend_irecv) — as CollectiveOp is for a collective: a
// flight-recorder entry in the recorder's p2p ring from its issue, a `p2p` record once it
// completed (trace/records/p2p_record.h). Its sequence number is its pair's
// (CollectiveProbe::TakePairSeq): messages never take a number of the group's collective
// sequence, which hang and straggler align every rank on.
//
//   PeerOp op(&collectives, {0, "recv", /*peer=*/1, /*group_peer=*/1, 0, "f32", n, 4 * n,
//             "irecv"});  // posted
//   op.Waiting();          // the job waits on it (wait(), or a blocking recv)
//   op.Completed();        // it arrived
//   op.Write();            // `p2p` record
//
// A recv from any source (peer -1) is numbered when SetPeer says who sent it. Write() before
// Completed() records it as failed. With probes off every call is one branch; the pair's
// number still advances.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "probes/collective_probe.h"
#include "probes/op_end.h"

namespace dsdiag::probes {

struct PeerMessage {
  int pg = 0;
  std::string op;           // "send" or "recv"
  int64_t peer = -1;        // global rank; -1: a recv from any source
  int64_t group_peer = -1;  // the peer's rank in group `pg`
  int64_t match_tag = 0;    // the job's tag
  std::string dtype;
  int64_t count = 0, bytes = 0;
  std::string tag;  // the call: "send", "isend", "batch_isend_irecv", ...
};

class PeerOp {
 public:
  PeerOp(CollectiveProbe* probe, PeerMessage message) noexcept;
  PeerOp(const PeerOp&) = delete;
  PeerOp& operator=(const PeerOp&) = delete;

  // A recv from any source learned its sender (global and group rank); numbered now.
  void SetPeer(int64_t peer, int64_t group_peer) noexcept;
  // The rank waits in it now (the entry is "started": from here on it can time out).
  void Waiting() noexcept;
  // From any thread; `failed`: the backend reported an error (the entry stays pending).
  void Completed(bool failed = false) noexcept;
  // Once, on the thread that writes the rank's records (later calls do nothing).
  void Write() noexcept;

  int64_t seq() const noexcept { return seq_; }
  int64_t peer() const noexcept { return m_.peer; }
  bool completed() const noexcept { return end_.done(); }

 private:
  CollectiveProbe* probe_;
  PeerMessage m_;
  int64_t seq_ = -1;
  int64_t enter_ns_ = 0;
  int64_t handle_ = 0;
  OpEnd end_;
  bool written_ = false;
};

}  // namespace dsdiag::probes
