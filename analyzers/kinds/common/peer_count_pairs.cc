#include "analyzers/kinds/common/peer_count_pairs.h"

#include <algorithm>

namespace dsdiag::analyzers {
namespace {

// Where `rank` sits in `c`'s group (its group rank), or -1.
int64_t GroupIndex(const trace::PeerCounts& c, int rank) {
  if (c.peers.empty()) return rank < static_cast<int64_t>(c.recv.size()) ? rank : -1;
  const auto it = std::find(c.peers.begin(), c.peers.end(), rank);
  return it == c.peers.end() ? -1 : it - c.peers.begin();
}

}  // namespace

std::vector<CountPair> DisagreeingPairs(const std::map<int, const trace::PeerCounts*>& counts) {
  std::vector<CountPair> pairs;
  for (const auto& [from, sender] : counts) {
    for (size_t k = 0; k < sender->send.size(); ++k) {
      const int to = static_cast<int>(sender->GlobalRank(k));
      const auto receiver = counts.find(to);
      if (receiver == counts.end()) continue;
      const int64_t at = GroupIndex(*receiver->second, from);
      if (at < 0) continue;
      const int64_t expected = receiver->second->recv[static_cast<size_t>(at)];
      if (sender->send[k] != expected) pairs.push_back({from, to, sender->send[k], expected});
    }
  }
  return pairs;
}

PairVerdict JudgePairs(const std::vector<CountPair>& pairs) {
  std::map<int, int> in_pairs;  // rank -> disagreeing pairs it is in
  for (const CountPair& p : pairs) {
    ++in_pairs[p.from];
    if (p.to != p.from) ++in_pairs[p.to];
  }
  int most = 0;
  for (const auto& [rank, n] : in_pairs) most = std::max(most, n);
  PairVerdict v;
  for (const auto& [rank, n] : in_pairs)
    if (n == most) v.named.push_back(rank);
  v.majority = v.named.size() < in_pairs.size() || in_pairs.size() == 1;
  return v;
}

}  // namespace dsdiag::analyzers
