// The hang verdict: which collective the run is stuck in, who waits in it, who got past
// it, and who never entered it (the culprits) — or, when every rank waits, whether some of
// them were cut off from the others (hang_analyzer.cc says the rules in full).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analyzers/kinds/hang/hang_evidence.h"

namespace dsdiag::analyzers::hang {

struct Stuck {
  CollectiveKey key;
  bool known = false;
  bool inferred = false;
  std::string op, tag;
  std::optional<int64_t> step;
};

struct HangVerdict {
  Stuck stuck;
  std::vector<int> waiters;   // ranks waiting in it
  std::vector<int> passed;    // ranks that completed it (and may wait in a later one)
  std::vector<int> culprits;  // ranks that never entered it, or the cut-off ones
  std::vector<int> no_trace;  // ranks without a trace (missing)
  std::vector<int> reached;   // cut off: the failed ranks that reached the store
  bool cut_off = false;
};

HangVerdict JudgeHang(const HangRun& run, const std::vector<Witness>& witnesses);

}  // namespace dsdiag::analyzers::hang
