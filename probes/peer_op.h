// PeerOp: one point-to-point message — a send to one peer or a recv from one (torch's send,
// recv, isend, irecv, each op of batch_isend_irecv) — as CollectiveOp is for a collective: a
// flight-recorder entry in the recorder's p2p ring from its issue, a `p2p` record once it
// completed (trace/records/p2p_record.h). Its sequence number is its pair's
// (CollectiveProbe::TakePairSeq): messages never take a number of the group's collective
// sequence, which hang and straggler align every rank on.
//
//   PeerOp op(&collectives, {0, {"recv", "f32", n, 4 * n, "irecv"}, /*peer=*/1,
//                            /*group_peer=*/1});  // posted
//   op.Waiting();          // the job waits on it (wait(), or a blocking recv)
//   op.Completed();        // it arrived
//   op.Write();            // `p2p` record
//
// A recv from any source (peer -1) is numbered when SetPeer says who sent it. Write() before
// Completed() records it as failed. With probes off every call is one branch; the pair's
// number still advances.
#pragma once

#include <cstdint>

#include "probes/collective_probe.h"
#include "probes/op_end.h"
#include "probes/peer_message.h"
#include "trace/records/p2p_record.h"

namespace dsdiag::probes {

class PeerOp {
 public:
  // `where`: the call site, unless `message.what.site` names one (the Python package's).
  PeerOp(CollectiveProbe* probe, PeerMessage message,
         SourceLocation where = SourceLocation::Current()) noexcept;
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
  bool sends() const noexcept { return m_.what.op == trace::records::kP2PSend; }
  CollectiveProbe* probe_;
  PeerMessage m_;
  int64_t seq_ = -1;
  int64_t enter_ns_ = 0;
  int64_t handle_ = 0;
  OpEnd end_;
  bool written_ = false;
};

}  // namespace dsdiag::probes
