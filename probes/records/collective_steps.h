// CollectiveSteps: writes a rank's `coll` records, and in light mode (trace format v2) a
// step whose collectives repeat the previous step's as one `colls` record
// (trace/collective_template.h says what "repeat" means and what the reader makes of it).
//
// Collectives issued on the loop's thread (the one calling BeginStep) are held until the
// step ends; then, per process group, either one `colls` record (same ops as the group's
// previous step, consecutive sequence numbers) or their `coll` records as in v1. Anything
// else is written at once, as a `coll` record: an op that failed, one completed on another
// thread (a backend's callback), one with per-peer sizes, every op in full mode. Held ops are
// written whole whenever the trace must be complete up to now — an error, a signal, a dump, the end
// — so a hang or a crash reads as it did in v1. Torch-free; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "probes/records/collective_record.h"
#include "probes/records/session_fwd.h"
#include "trace/collective_template.h"
#include "trace/records/colls_record.h"

namespace dsdiag::probes::records {

class CollectiveSteps {
 public:
  // Light mode: hold the loop thread's ops (`compact`); full mode writes every op at once.
  explicit CollectiveSteps(bool compact) : compact_(compact) {}

  // The loop's thread begins step `step`: whatever is still held is written first.
  void BeginStep(probes::Session* session);
  // Writes or holds one op (the session has counted it in the step totals).
  void Write(probes::Session* session, const CollectiveRecord& r);
  // The step ends: the held ops go out, as `colls` where they repeat the previous step.
  // Returns how many ops went into `colls` records.
  int64_t EndStep(probes::Session* session);
  // Writes every held op as a `coll` record (the trace must be complete up to now).
  void FlushHeld(probes::Session* session);

 private:
  struct HeldOp {
    trace::Collective what;
    int64_t seq = 0, enter_ns = 0, done_ns = 0;
  };
  bool Holds(const CollectiveRecord& r) const;
  void WriteFull(probes::Session* session, int pg, const HeldOp& op, bool failed,
                 const trace::PeerCounts* counts = nullptr);
  // Returns the ops written as one `colls` record (0: as `coll` records).
  int64_t WriteGroup(probes::Session* session, int pg, const std::vector<HeldOp>& ops);
  bool Repeats(int pg, int64_t step, const std::vector<HeldOp>& ops) const;
  void FlushHeldLocked(probes::Session* session);

  const bool compact_;
  std::mutex mu_;
  std::thread::id loop_thread_;
  std::map<int, std::vector<HeldOp>> held_;  // by process group
  trace::CollectiveTemplate template_;       // what the reader will know, record by record
  trace::records::CollsRecord colls_;        // the `colls` record being written, reused
};

}  // namespace dsdiag::probes::records
