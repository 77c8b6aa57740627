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

#include <optional>
#include <string>
#include <string_view>
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

// Why a split's reference is the side it is (a finding's evidence.basis): the largest
// group (JudgeSplit's majority); the group's history — of two sides without a majority, the
// one whose value every rank agreed on earlier, when the other's value is new (a rank that
// changed its call is odd; the one that kept it is not); or nothing, and every rank of the
// split is named. collective-mismatch uses it over traces and over Flight Recorder dumps.
enum class SplitBasis { kMajority, kHistory, kNone };

inline std::string_view SplitBasisName(SplitBasis b) {
  switch (b) {
    case SplitBasis::kMajority:
      return "majority";
    case SplitBasis::kHistory:
      return "history";
    case SplitBasis::kNone:
      break;
  }
  return "none";
}

// The history rule for a split without a majority: `known[i]` says whether side i's value is
// one every rank agreed on earlier. The side history vouches for, or nullopt when it does not
// tell (not two sides, both known, neither known).
inline std::optional<size_t> SideHistoryVouchesFor(const std::vector<bool>& known) {
  if (known.size() != 2 || known[0] == known[1]) return std::nullopt;
  return known[0] ? 0 : 1;
}

// The clause in parentheses after a summary, or nothing when there is a majority.
template <typename T>
std::string NoMajorityText(const std::vector<RankGroup<T>>& groups, const SplitVerdict& v) {
  return v.majority ? "" : " (" + NoMajorityClause(groups) + ")";
}

}  // namespace dsdiag::analyzers
