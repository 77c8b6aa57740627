// The `p2p` record (trace/records/p2p_record.h): one point-to-point message as it ended — its
// group, direction, peer, the pair's sequence number, element type and count, duration, the
// call that sent it, `failed` when it did not complete. Written by PeerOp. Unlike a `coll`
// record it is written at once and counted in no step total: a message is no collective of
// its group. Torch-free; the caller has checked that the session is on.
#pragma once

#include <cstdint>

#include "probes/peer_message.h"
#include "probes/records/session_fwd.h"

namespace dsdiag::probes::records {

struct P2PMessageRecord {
  const PeerMessage* m = nullptr;
  int64_t seq = -1;      // the pair's
  int64_t enter_ns = 0;  // the record's ts
  int64_t done_ns = 0;
  bool failed = false;
};
void WriteP2P(probes::Session* session, const P2PMessageRecord& r) noexcept;

}  // namespace dsdiag::probes::records
