// PeerMessage: one point-to-point message (a send to one peer or a recv from one) as the
// probes hold it — the collective value (trace/collective.h: op "send" or "recv", dtype,
// count, bytes, the call as its tag) and its other end. Held by PeerOp (probes/peer_op.h) and
// the flight recorder's p2p ring; its sequence number is its pair's, kept beside it.
#pragma once

#include <cstdint>

#include "trace/collective.h"

namespace dsdiag::probes {

struct PeerMessage {
  int pg = 0;
  trace::Collective what;   // op "send" or "recv"; tag: "send", "isend", "batch_isend_irecv", ...
  int64_t peer = -1;        // global rank; -1: a recv from any source
  int64_t group_peer = -1;  // the peer's rank in group `pg`
  int64_t match_tag = 0;    // the job's tag
};

}  // namespace dsdiag::probes
