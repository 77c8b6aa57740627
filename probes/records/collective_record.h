// The `coll` record (docs/trace-format.md): one collective as it ended — its group and
// sequence number, op, element type and count, bytes, duration and tag, `failed` when it did
// not complete — also counted in the step's collective totals. Written by CollectiveScope
// (the op's scope) and CollectiveOp (an op completed away from where it was issued).
// Torch-free; the caller has checked that the session is on.
#pragma once

#include <cstdint>

#include "probes/records/session_fwd.h"
#include "trace/collective.h"
#include "trace/peer_counts.h"

namespace dsdiag::probes::records {

struct CollectiveRecord {
  int pg = 0;
  int64_t seq = 0;
  const trace::Collective* what = nullptr;  // op, dtype, count, bytes, tag
  int64_t enter_ns = 0;                     // the record's ts
  int64_t started_ns = 0;  // 0: never started (the wait is then the whole duration)
  int64_t done_ns = 0;
  bool failed = false;
  const trace::PeerCounts* counts = nullptr;  // per-peer sizes, or null
};
void WriteCollective(probes::Session* session, const CollectiveRecord& r) noexcept;

}  // namespace dsdiag::probes::records
