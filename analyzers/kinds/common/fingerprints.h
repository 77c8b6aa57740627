// Fingerprint records (`fp`) and how ranks' fingerprints differ, shared by the grad-desync
// and the init-/replica-divergence analyzers.
//
//   {"type":"fp","step":3,"what":"grad","why":"after-sync","gran":"bucket","h":["9f..","1c.."]}
// `h` is aligned with the `params` table (gran "param") or its buckets (gran "bucket").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/kinds/common/hash_list.h"
#include "analyzers/kinds/common/rank_groups.h"
#include "analyzers/kinds/common/rank_slots.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {

struct FingerprintRecord {
  std::string what;  // "grad", "param"
  std::string why;   // "after-sync", "init", "resume", "periodic", "final"
  bool per_param = false;
  bool device_sum = false;  // `fn` "dsum": comparable only with other device sums
  HashList hashes;
};

// One point's fingerprints (a step's "after-sync", the "init" ones) of every rank.
using RankFingerprints = RankSlots<FingerprintRecord>;

// Nullopt when the record lacks a field or a hash is malformed.
std::optional<FingerprintRecord> ReadFingerprint(const trace::Record& record);

// One tensor (or bucket) whose fingerprint is not the same on every rank.
struct IndexDivergence {
  int index = 0;
  std::vector<RankGroup<uint64_t>> groups;  // reference group first
};

// Compares the ranks' fingerprints index by index. Ranks whose granularity, hash function
// or length differs from the lowest rank's are left out of the comparison (a config
// mismatch).
std::vector<IndexDivergence> DiffByIndex(const RankFingerprints& by_rank);

// The ranks of both maps whose fingerprint at `index` differs between `before` and `after`
// (same granularity and length): the ranks whose own tensor changed in between.
std::vector<int> ChangedRanks(const RankFingerprints& before, const RankFingerprints& after,
                              int index);
// The same over the whole vector.
std::vector<int> ChangedRanks(const RankFingerprints& before, const RankFingerprints& after);

// Ranks grouped by their whole fingerprint vector (replicas that agree with each other).
std::vector<RankGroup<uint64_t>> GroupByVector(const RankFingerprints& by_rank);

// [{"ranks":[0,2,3]},{"ranks":[1]}] for evidence.
trace::JsonValue GroupsJson(const std::vector<RankGroup<uint64_t>>& groups);

}  // namespace dsdiag::analyzers
