// CollectiveTemplate: what lets trace format v2 write a step's collectives as one `colls`
// record — the ops a rank ran in its last step, per process group, in file order.
//
// A training step issues the same collectives every step (one allreduce per gradient
// bucket): op, element type, count, bytes and tag repeat, only the times and sequence
// numbers move. So when a step's ops on a group equal, position by position, those of the
// group's last step with as many ops, the writer records their times only (keyed by the
// count, a step that adds a health check every 10 steps does not break the run of the
// others):
//
//   {"type":"colls","ts":T,"step":8,"pg":0,"seq":42,"at_us":[0,812,...],"dur_us":[...]}
//
// and the reader turns it back into the five `coll` records of v1 (seq 42..46, each op's
// value (trace/collective.h: what repeats, all but the times and the sequence number) from
// the template, ts T + at_us[i] µs, times to the microsecond). Writer
// (probes/records/collective_steps) and reader (trace/compact_records) keep one CollectiveTemplate
// each, fed the same `coll` records in the same order, so they agree on what "the previous step"
// was.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trace/collective.h"

namespace dsdiag::trace {

class CollectiveTemplate {
 public:
  // A `coll` record of group `pg` written (or read) with step `step`, in file order.
  void Add(int pg, int64_t step, Collective op);

  // The ops a `colls` record of `ops` ops on group `pg` in step `step` stands for: those of
  // the group's last step before `step` that had `ops` ops. Null when there is none, or when
  // `step` has `coll` records of its own on the group already (a `colls` is a whole step).
  const std::vector<Collective>* PreviousStep(int pg, int64_t step, size_t ops) const;

  // Records that the ops of PreviousStep(pg, step, ops) ran again in `step`.
  void Repeat(int pg, int64_t step, size_t ops);

 private:
  using Ops = std::vector<Collective>;
  struct Group {
    int64_t step = INT64_MIN;      // the step `current` belongs to
    Ops current;                   // that step's ops so far
    std::map<size_t, Ops> before;  // the last earlier step with that many ops, by count
  };
  // Starts step `step` on the group when it is a new one.
  static void Enter(Group* g, int64_t step);
  std::map<int, Group> groups_;
};

}  // namespace dsdiag::trace
