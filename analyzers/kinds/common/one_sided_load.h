// A checkpoint loaded into the DDP model on some ranks only, after the wrap:
//   model = DDP(net)
//   if rank == 0: model.module.load_state_dict(torch.load(path))
// DDP broadcast rank 0's parameters in its constructor, before the load; nothing makes the
// replicas equal again, so they differ from the load on, and the drift shows only at the next
// parameter fingerprint (light mode: step 9), naming no one. The evidence is each rank's
// own: the loading ranks wrote `fp` param `resume` (the Python package fingerprints the DDP
// model after load_state_dict into it), the others did not, and the loaded parameters differ
// from what the others held (their last fingerprint at or before the load, DDP's `init`).
// The replicas must still differ at the first later point every rank fingerprinted (light
// mode: every 10 steps): a load followed by a broadcast is equal again there, a rank that
// died in its own load reaches none. A load on every rank, or before the wrap, is no finding.
//
// Input, per rank in record order: its first kMaxParamFps `fp` records of what "param"
// (init, resume, periodic, pre-step, final). Torch-free, as every analyzer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/kinds/common/fingerprints.h"
#include "analyzers/kinds/common/name_table.h"

namespace dsdiag::analyzers {

inline constexpr size_t kMaxParamFps = 64;  // per rank: loads happen early (a resume, weights)

struct OneSidedLoadVerdict {
  std::vector<int> loaded;      // the ranks that loaded: named
  std::vector<int> not_loaded;  // the ranks that kept the broadcast parameters
  int64_t step = 0;             // the first load's step
  int64_t still_differ_at = 0;  // the first later point every rank fingerprinted
};

class OneSidedLoad {
 public:
  void Add(int rank, int64_t step, const FingerprintRecord& fp);
  std::optional<OneSidedLoadVerdict> Judge() const;

 private:
  // What Judge compares of a fingerprint: its `why` and whether its hashes equal another
  // point's (`what` is always "param"). Kept for every rank of the run, so 32 bytes: the
  // hashes as one digest (equal lists, equal digests; unequal ones collide with chance
  // 2^-64), the `why` interned.
  struct Point {
    int64_t step;
    uint64_t digest;
    InternedName why;
  };
  // The rank's points after index `from` whose (step, why) every rank has, the earliest.
  std::optional<std::pair<int64_t, std::string>> FirstCommonPointAfter(
      const std::map<int, size_t>& from) const;

  std::map<int, std::vector<Point>> points_;  // rank -> its param fingerprints, in order
  NameTable whys_;
};

}  // namespace dsdiag::analyzers
