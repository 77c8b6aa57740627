// Who to name when ranks split on a value they should share and only a vote can say which
// side is odd: the largest group is the reference and every other rank is odd — unless no
// group is larger than every other (two ranks that disagree, 2 against 2 of 4): then there
// is no majority, nothing tells the healthy side from the broken one, and the verdict names
// every rank of the split. Never one side alone: at two ranks a vote would blame the
// healthy rank half the time.
//
// Analyzers that have evidence of their own (a rank's records show it changed a value after
// a point where every rank agreed, a rank that is the source by design) use that first;
// this is what is left when they do not.
#pragma once

#include <string>
#include <vector>

#include "analyzers/kinds/common/rank_groups.h"
#include "trace/json_value.h"

namespace dsdiag::analyzers {

struct SplitVerdict {
  std::vector<int> named;      // the odd ranks; every rank of the split when no majority
  std::vector<int> reference;  // the majority's ranks; empty when there is none
  bool majority = true;
};

template <typename T>
SplitVerdict JudgeSplit(const std::vector<RankGroup<T>>& groups) {
  SplitVerdict v;
  if (groups.empty()) return v;
  v.majority = groups.size() == 1 || groups[0].ranks.size() > groups[1].ranks.size();
  if (v.majority) {
    v.reference = groups[0].ranks;
    v.named = OddRanks(groups);
    return v;
  }
  for (const auto& g : groups) v.named.insert(v.named.end(), g.ranks.begin(), g.ranks.end());
  std::sort(v.named.begin(), v.named.end());
  return v;
}

// "no majority: the ranks split 1 against 1, and nothing in the traces says which side is
// right", for a summary.
template <typename T>
std::string NoMajorityClause(const std::vector<RankGroup<T>>& groups) {
  std::string sizes;
  for (const auto& g : groups) {
    if (!sizes.empty()) sizes += " against ";
    sizes += std::to_string(g.ranks.size());
  }
  return "no majority: the ranks split " + sizes +
         ", and nothing in the traces says which side is right";
}

// The clause in parentheses after a summary, or nothing when there is a majority.
template <typename T>
std::string NoMajorityText(const std::vector<RankGroup<T>>& groups, const SplitVerdict& v) {
  return v.majority ? "" : " (" + NoMajorityClause(groups) + ")";
}

}  // namespace dsdiag::analyzers
