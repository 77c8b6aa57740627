// `dsdiag compare` on the real torch 2.13 Gloo dumps of fixtures/torch_fr/scenarios/: the jobs
// of tests/python/jobs/fr_scenarios.py, each dumped both ways jobs dump — in flight (a watchdog
// asks every rank while the bad collective is pending, as NCCL's does) and after the failure
// (the job's except handler once the collective raised, its SIGTERM handler when torchrun
// stopped a stuck rank, no dump from a crashed one), where Gloo records the collective that
// timed out or failed as completed. Each scenario's culprit must be named alone both ways;
// a clean job's dumps give nothing to warn of. fr_scenarios.TRUTH says what each job did.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"

namespace dsdiag::analyzers {
namespace {

using testing::EvidenceText;
using testing::Listing;
namespace fs = std::filesystem;

struct Scenario {
  const char* name;
  std::string_view kind;  // the error that names the culprit; empty: a clean job
  std::vector<int> culprits;
  const char* group;
  int64_t seq;
  const char* basis_in_flight;  // a mismatch's basis; "" for the others
  const char* basis_after;
};

// fr_scenarios.TRUTH, and its `after` overrides.
const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario> all = {
      {"skip", kind::kHang, {1}, "0", 6, "", ""},
      {"blocked", kind::kHang, {1}, "0", 3, "", ""},
      {"size_mismatch", kind::kCollectiveMismatch, {1}, "0", 4, "history", "call-site history"},
      {"dtype_mismatch", kind::kCollectiveMismatch, {0}, "0", 4, "majority", "history"},
      {"op_mismatch", kind::kCollectiveMismatch, {0}, "0", 4, "history", "history"},
      {"subgroup_hang", kind::kHang, {3}, "1", 3, "", ""},
      {"died", kind::kRankDied, {2}, "", 3, "", ""},
      {"rank0_skips", kind::kHang, {0}, "0", 6, "", ""},
      {"recv_unsent", kind::kHang, {1}, "0", 6, "", ""},
      {"skip_same_size", kind::kCollectiveMismatch, {1}, "0", 12, "majority", "majority"},
      {"subgroup_blocked", kind::kHang, {2}, "1", 3, "", ""},
      {"subgroup_died", kind::kRankDied, {3}, "", 3, "", ""},
      {"clean", "", {}, "", 0, "", ""},
  };
  return all;
}

std::string Fixture(const std::string& when, const std::string& scenario) {
  return (fs::path(DSDIAG_SOURCE_DIR) / "fixtures/torch_fr/scenarios" / when / scenario).string();
}

void ExpectCulpritAlone(const std::string& when, const Scenario& s) {
  SCOPED_TRACE(when + "/" + s.name);
  const CompareResult r = RunCompare(Fixture(when, s.name));
  std::vector<const Finding*> ours;
  for (const Finding& f : r.findings) {
    if (f.severity == Severity::kInfo) continue;
    if (s.kind.empty()) ADD_FAILURE() << "a clean job's finding:\n" << Listing(r.findings);
    for (int rank : f.ranks)
      EXPECT_NE(std::find(s.culprits.begin(), s.culprits.end(), rank), s.culprits.end())
          << "names healthy rank " << rank << ":\n"
          << Listing(r.findings);
    if (!s.kind.empty() && f.kind == s.kind && f.severity == Severity::kError) ours.push_back(&f);
  }
  if (s.kind.empty()) return;
  ASSERT_EQ(ours.size(), 1u) << Listing(r.findings);
  EXPECT_EQ(ours[0]->ranks, s.culprits) << ours[0]->summary;
  if (std::string(s.group).empty()) return;
  EXPECT_EQ(EvidenceText(*ours[0], "group"), s.group) << ours[0]->summary;
  EXPECT_EQ(EvidenceText(*ours[0], "seq"), std::to_string(s.seq)) << ours[0]->summary;
  const std::string basis = when == "after" ? s.basis_after : s.basis_in_flight;
  if (!basis.empty()) {
    EXPECT_EQ(EvidenceText(*ours[0], "basis"), basis) << ours[0]->summary;
  }
}

TEST(TorchFrScenarios, DumpsWrittenInFlightNameEachCulpritAlone) {
  for (const Scenario& s : Scenarios()) ExpectCulpritAlone("in-flight", s);
}

TEST(TorchFrScenarios, DumpsWrittenAfterTheFailureNameEachCulpritAlone) {
  for (const Scenario& s : Scenarios()) ExpectCulpritAlone("after", s);
}

TEST(TorchFrScenarios, AfterTheFailureTheBlockedRankIsSaidToBeOutsideAnyCollective) {
  const CompareResult r = RunCompare(Fixture("after", "blocked"));
  ASSERT_FALSE(r.findings.empty());
  const Finding& hang = r.findings.front();
  EXPECT_EQ(EvidenceText(hang, "dumps"), "after the failure");
  EXPECT_NE(hang.summary.find("rank 1 was outside any recorded collective"), std::string::npos)
      << hang.summary;
  EXPECT_NE(hang.summary.find("never issued all_reduce group 0 (default_pg) seq 3"),
            std::string::npos)
      << hang.summary;
}

TEST(TorchFrScenarios, TheSameSizeSkipIsNamedWhereTheStreamsPartedWithBothLines) {
  for (const char* when : {"in-flight", "after"}) {
    SCOPED_TRACE(when);
    const CompareResult r = RunCompare(Fixture(when, "skip_same_size"));
    const Finding* parted = nullptr;
    for (const Finding& f : r.findings)
      if (f.kind == kind::kCollectiveMismatch) parted = &f;
    ASSERT_NE(parted, nullptr) << Listing(r.findings);
    EXPECT_EQ(EvidenceText(*parted, "parted"), "skipped");
    // rank 1 issued the gradients' all_reduce where ranks 0 and 2 issued the metrics'.
    EXPECT_NE(parted->summary.find("rank 1 issued the all_reduce at fr_scenarios.py:"),
              std::string::npos)
        << parted->summary;
    EXPECT_NE(parted->summary.find("where ranks 0,2 issued the one at fr_scenarios.py:"),
              std::string::npos)
        << parted->summary;
    EXPECT_NE(parted->summary.find("rank 1 skipped that all_reduce"), std::string::npos);
  }
}

TEST(TorchFrScenarios, AnAbortedRanksMissingDumpIsTheMismatchsFollowOn) {
  const CompareResult r = RunCompare(Fixture("after", "size_mismatch"));
  const Finding* died = nullptr;
  for (const Finding& f : r.findings)
    if (f.kind == kind::kRankDied) died = &f;
  ASSERT_NE(died, nullptr) << Listing(r.findings);
  EXPECT_EQ(died->severity, Severity::kInfo);
  EXPECT_EQ(died->ranks, std::vector<int>{0});
  EXPECT_EQ(EvidenceText(*died, "follows_from"), "collective-mismatch");
}

}  // namespace
}  // namespace dsdiag::analyzers
