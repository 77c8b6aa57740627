// collective-mismatch at group creation (analyzers/kinds/group_wiring_analyzer.cc): the
// `group` records of a 2 x 2 tensor- x data-parallel run in which one rank created its
// groups in another order, and of one in which every rank agrees.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/records/group_record.h"

namespace dsdiag::analyzers {
namespace {

namespace records = trace::records;
using testing::Evidence;
using testing::Listing;
using testing::RunOne;
using testing::TestRun;

using Groups = std::vector<std::pair<std::string, std::vector<int>>>;  // name -> ranks

// What each rank records of the groups it is in, as torch names them.
void WriteGroups(TestRun* run, const std::vector<Groups>& by_rank) {
  const int world = static_cast<int>(by_rank.size());
  for (int rank = 0; rank < world; ++rank) {
    auto w = run->Open(TestRun::Header(rank, world));
    for (const auto& [name, ranks] : by_rank[rank]) {
      records::GroupRecord g;
      g.pg = records::GroupNumber(name, false);
      g.name = name;
      g.ranks = &ranks;
      TestRun::Write(w.get(), g);
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

// Data-parallel groups 1 = {0,2}, 2 = {1,3}, then tensor-parallel 3 = {0,1}, 4 = {2,3}.
const std::vector<Groups> kAgreed = {{{"1", {0, 2}}, {"3", {0, 1}}},
                                     {{"2", {1, 3}}, {"3", {0, 1}}},
                                     {{"1", {0, 2}}, {"4", {2, 3}}},
                                     {{"2", {1, 3}}, {"4", {2, 3}}}};

TEST(GroupWiringTest, GroupsEveryRankNumberedAlikeAreNoFinding) {
  TestRun run;
  WriteGroups(&run, kAgreed);
  EXPECT_TRUE(RunOne(CreateGroupWiringAnalyzer(), run.dir()).empty());
}

TEST(GroupWiringTest, ARankThatCreatedItsGroupsInAnotherOrderIsNamed) {
  std::vector<Groups> by_rank = kAgreed;
  by_rank[0] = {{"1", {0, 1}}, {"3", {0, 2}}};  // tensor-parallel first
  TestRun run;
  WriteGroups(&run, by_rank);
  const auto findings = RunOne(CreateGroupWiringAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{0});
  EXPECT_EQ(f.subject, "process groups");
  EXPECT_EQ(Evidence(f, "basis"), "\"group creation order\"");
  EXPECT_EQ(Evidence(f, "wiring"), "true");
  EXPECT_NE(f.summary.find("group 1 is ranks 0,1 on rank 0 but ranks 0,2 on rank 2; group 3 is "
                           "ranks 0,2 on rank 0 but ranks 0,1 on rank 1"),
            std::string::npos)
      << f.summary;
}

// The odd rank in the middle of the order: its group 1 is ranks 0,1 where ranks 0 and 2
// both hold it as 0,2 (the others' groups never complete): outvoted, it alone is named.
TEST(GroupWiringTest, AClaimMoreRanksHoldOutvotesTheOddRanks) {
  TestRun run;
  WriteGroups(&run, {{{"1", {0, 2}}}, {{"1", {0, 1}}}, {{"1", {0, 2}}}, {}});
  const auto findings = RunOne(CreateGroupWiringAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(findings[0], "majority"), "true");
}

TEST(GroupWiringTest, TwoRanksThatDisagreeOnOneGroupAreBothNamedWithNoMajority) {
  TestRun run;
  WriteGroups(&run, {{{"1", {0, 1}}}, {{"1", {1, 2}}}, {}});
  const auto findings = RunOne(CreateGroupWiringAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u) << Listing(findings);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
}

}  // namespace
}  // namespace dsdiag::analyzers
