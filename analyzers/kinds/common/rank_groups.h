// Grouping ranks by a value they should share (a hash, a flag, a size), largest group first
// (groups of equal size: the one holding the lowest rank first, for a stable order). Whether
// the first group is a majority, and whom to name when it is not, is split_verdict.h's call:
// two ranks that disagree have no odd one.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace dsdiag::analyzers {

template <typename T>
struct RankGroup {
  T value;
  std::vector<int> ranks;  // ascending
};

// `values` holds (rank, value) pairs in ascending rank order. Returns the groups, the
// reference first.
template <typename T>
std::vector<RankGroup<T>> GroupRanks(const std::vector<std::pair<int, T>>& values) {
  std::vector<RankGroup<T>> groups;
  for (const auto& [rank, value] : values) {
    // C++17 lambdas cannot capture a structured binding (clang rejects it): name it.
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&value = value](const RankGroup<T>& g) { return g.value == value; });
    if (it == groups.end())
      groups.push_back({value, {rank}});
    else
      it->ranks.push_back(rank);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const RankGroup<T>& a, const RankGroup<T>& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  return groups;
}

// Every rank outside the reference group, ascending.
template <typename T>
std::vector<int> OddRanks(const std::vector<RankGroup<T>>& groups) {
  std::vector<int> odd;
  for (size_t i = 1; i < groups.size(); ++i)
    odd.insert(odd.end(), groups[i].ranks.begin(), groups[i].ranks.end());
  std::sort(odd.begin(), odd.end());
  return odd;
}

}  // namespace dsdiag::analyzers
