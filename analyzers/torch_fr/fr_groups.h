// FrGroup: one process group of a Flight Recorder run, job-wide, with what each rank's dump
// says it issued in it, in sequence order — what the hang and mismatch rules compare.
//
// Groups are matched across ranks by their job-wide name (the entries' `process_group`
// name: "0" for the default group, then "1", "2", ... or a hash), not by `pg_id`, which is
// rank-local. Collectives are ordered by `collective_seq_id`; point-to-point ops, by
// `p2p_seq_id`, form a group of their own (`p2p`).
//
// An op is `done` on a rank when its dump says so — state "completed", `retired` (Gloo's
// entries stay "scheduled" when they finish and are retired), or the group's pg_status
// `last_completed_collective` at or past it — or when another rank completed the same
// collective (it could not complete without every member).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzers/torch_fr/fr_run.h"

namespace dsdiag::analyzers::torch_fr {

struct FrOp {
  int64_t seq = 0;
  const FrEntry* entry = nullptr;
  bool done = false;
};

struct FrRankOps {
  int rank = 0;
  const FrRankDump* dump = nullptr;
  std::vector<FrOp> ops;  // by seq

  const FrOp* Last() const { return ops.empty() ? nullptr : &ops.back(); }
  const FrOp* LastDone() const;
  const FrOp* At(int64_t seq) const;
  // The op this rank waits in: its last, when not done.
  const FrOp* Waiting() const;
  // The oldest op not done after the last done one: where a rank with several queued (NCCL
  // queues them on one stream) is held.
  const FrOp* FirstPending() const;
};

struct FrGroup {
  const FrGroupName* id = nullptr;
  std::vector<FrRankOps> ranks;  // the ranks whose dumps hold entries of the group, by rank

  const std::string& name() const { return id->name; }
  const std::string& desc() const { return id->desc; }
  bool p2p() const { return id->p2p; }
  bool is_default() const { return id->is_default; }
  const FrRankOps* Of(int rank) const;
  int64_t MaxSeq() const;
  // "group 0 (default_pg)", "group 1", "group 0 (default_pg) p2p".
  std::string Label() const;
};

// The default group first, then in the order the run met them.
std::vector<FrGroup> BuildGroups(const FrRun& run);

}  // namespace dsdiag::analyzers::torch_fr
