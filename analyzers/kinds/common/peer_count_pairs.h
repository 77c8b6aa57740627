// The per-peer sizes of one all-to-all, checked pair by pair: rank i's send to j must equal
// j's recv from i (trace/peer_counts.h). A pair that disagrees makes the backend hand j too
// many or too few bytes: Gloo aborts j ("160 vs 128"), NCCL corrupts or hangs. The receiver
// is usually the rank that dies; the rank to blame is the one whose sizes disagree with the
// most peers. One wrong rank of four disagrees with all three others, each of them with it
// alone; with two ranks every disagreement involves both, and nothing says which is wrong.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "trace/peer_counts.h"

namespace dsdiag::analyzers {

// One direction of a pair that disagrees: `from` sends `sent` elements to `to`, which
// expects `expected` from it. `from == to` is a rank whose own two splits disagree.
struct CountPair {
  int from = 0;
  int to = 0;
  int64_t sent = 0;
  int64_t expected = 0;
};

// Every pair that disagrees, by `from` then `to`. `counts` holds each rank's sizes by global
// rank; a peer absent from it (no record) is not checked.
std::vector<CountPair> DisagreeingPairs(const std::map<int, const trace::PeerCounts*>& counts);

struct PairVerdict {
  std::vector<int> named;  // the ranks in the most disagreeing pairs, ascending
  bool majority = true;    // false: every rank in a pair is in as many (no odd one out)
};
PairVerdict JudgePairs(const std::vector<CountPair>& pairs);

}  // namespace dsdiag::analyzers
