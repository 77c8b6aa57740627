#include "analyzers/framework/finding.h"

#include <gtest/gtest.h>

namespace dsdiag::analyzers {
namespace {

Finding Make(Severity s, std::optional<int64_t> step, std::string kind, std::vector<int> ranks) {
  Finding f;
  f.severity = s;
  f.step = step;
  f.kind = std::move(kind);
  f.ranks = std::move(ranks);
  return f;
}

TEST(FindingTest, SeverityNamesRoundTrip) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kError})
    EXPECT_EQ(ParseSeverity(SeverityName(s)), s);
  EXPECT_FALSE(ParseSeverity("fatal"));
  EXPECT_FALSE(ParseSeverity("Error"));
}

TEST(FindingTest, OrderIsSeverityThenStepNullLastThenKindThenRanks) {
  std::vector<Finding> findings = {
      Make(Severity::kInfo, 0, "a", {0}),  Make(Severity::kError, std::nullopt, "a", {0}),
      Make(Severity::kError, 5, "b", {1}), Make(Severity::kError, 5, "a", {2}),
      Make(Severity::kError, 5, "a", {1}), Make(Severity::kWarning, 1, "z", {0}),
      Make(Severity::kError, 2, "z", {3}),
  };
  SortFindings(&findings);
  std::vector<std::tuple<Severity, std::optional<int64_t>, std::string, std::vector<int>>> got;
  for (const auto& f : findings) got.emplace_back(f.severity, f.step, f.kind, f.ranks);
  using V = std::vector<int>;
  const decltype(got) want = {
      {Severity::kError, 2, "z", V{3}},
      {Severity::kError, 5, "a", V{1}},
      {Severity::kError, 5, "a", V{2}},
      {Severity::kError, 5, "b", V{1}},
      {Severity::kError, std::nullopt, "a", V{0}},
      {Severity::kWarning, 1, "z", V{0}},
      {Severity::kInfo, 0, "a", V{0}},
  };
  EXPECT_EQ(got, want);
}

TEST(FindingTest, NormalizeRanksSortsAndDedups) {
  std::vector<int> ranks = {3, 1, 3, 0};
  NormalizeRanks(&ranks);
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 3}));
}

TEST(FindingTest, RankRangesAreCompact) {
  EXPECT_EQ(FormatRankRanges({}), "");
  EXPECT_EQ(FormatRankRanges({4}), "4");
  EXPECT_EQ(FormatRankRanges({0, 1}), "0,1");
  EXPECT_EQ(FormatRankRanges({0, 1, 2, 3, 5, 7, 8}), "0-3,5,7,8");
}

}  // namespace
}  // namespace dsdiag::analyzers
