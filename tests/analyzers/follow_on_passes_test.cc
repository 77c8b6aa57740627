// The follow-on passes beyond the hang's (hang_analyzer_test.cc has those): a collective
// mismatch's failures and a desync's divergence become info follow-ons with the cause in
// their evidence; independent causes stay errors.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/framework/run_context.h"
#include "tests/analyzers/analyzer_test_util.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;

Finding Make(std::string_view kind, int rank, std::optional<int64_t> step,
             Severity s = Severity::kError) {
  Finding f;
  f.kind = std::string(kind);
  f.severity = s;
  f.ranks = {rank};
  f.step = step;
  f.summary = std::string(kind) + " on rank " + std::to_string(rank);
  return f;
}

Finding Mismatch() {
  Finding f = Make(kind::kCollectiveMismatch, 2, 7);
  f.subject = "pg 0 seq 36";
  f.evidence.Set("pg", 0);
  f.evidence.Set("seq", 36);
  return f;
}

Finding Died(int rank, int64_t step, std::optional<int64_t> waiting_seq, const char* signal) {
  Finding f = Make(kind::kRankDied, rank, step);
  if (waiting_seq) {
    trace::JsonValue w = trace::JsonValue::Object();
    w.Set("pg", 0);
    w.Set("seq", *waiting_seq);
    f.evidence.Set("waiting_in", std::move(w));
  }
  if (signal) f.evidence.Set("signal", signal);
  return f;
}

void ApplyAll(std::vector<Finding>* findings) {
  for (const auto& pass : CreateAllFindingsPasses()) pass->Apply(RunContext{}, findings);
}

std::vector<std::string> Errors(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings)
    if (f.severity == Severity::kError) out.push_back(f.kind + " " + FormatRankRanges(f.ranks));
  return out;
}

// The 4-rank run: rank 2 issued a bigger allreduce, Gloo failed on rank 1, the
// launcher stopped the rest. One error on screen: the mismatch.
TEST(MismatchFollowOnTest, TheFailuresAndStopsAfterAMismatchAreItsFollowOns) {
  std::vector<Finding> findings = {Mismatch(), Died(1, 7, 36, nullptr), Died(0, 7, 36, "SIGTERM"),
                                   Died(2, 7, std::nullopt, "SIGTERM"), Died(3, 7, 40, nullptr)};
  Finding hang = Make(kind::kHang, 2, 7);
  hang.evidence.Set("pg", 0);
  hang.evidence.Set("seq", 36);
  hang.evidence.Set("culprit_count", int64_t{1});
  findings.push_back(hang);
  ApplyAll(&findings);
  EXPECT_EQ(Errors(findings), std::vector<std::string>{"collective-mismatch 2"});
  for (size_t i = 1; i < findings.size(); ++i) {
    EXPECT_EQ(Evidence(findings[i], "follow_on_of"),
              "{\"kind\":\"collective-mismatch\",\"subject\":\"pg 0 seq 36\",\"culprits\":[2]}")
        << findings[i].kind << " " << findings[i].summary;
    EXPECT_NE(findings[i].summary.find("a follow-on of the collective mismatch at pg 0 seq 36"),
              std::string::npos)
        << findings[i].summary;
  }
}

// Not every death in such a run is the mismatch's: a crash before it, or one in another
// process group's collective, is a cause of its own.
TEST(MismatchFollowOnTest, ACrashBeforeTheMismatchOrElsewhereStaysAnError) {
  std::vector<Finding> findings = {Mismatch(), Died(1, 3, std::nullopt, nullptr),
                                   Died(3, 3, std::nullopt, "SIGSEGV")};
  ApplyAll(&findings);
  EXPECT_EQ(Errors(findings),
            (std::vector<std::string>{"collective-mismatch 2", "rank-died 1", "rank-died 3"}));
}

// A send larger than its recv: Gloo aborts the receiver (rank 0) and the launcher stops rank
// 2. The message's seq is its pair's: a death waiting in collective seq 36 is not compared
// with it; the receiver's death from the message's step on is its follow-on, a crash of
// another rank before it is not.
TEST(MismatchFollowOnTest, TheReceiverOfAMismatchedMessageDiesAsItsFollowOn) {
  Finding message = Make(kind::kCollectiveMismatch, 1, 5);
  message.subject = "pg 0 p2p 1->0 #5";
  message.evidence.Set("pg", 0);
  message.evidence.Set("p2p", true);
  message.evidence.Set("pair_seq", 5);
  message.evidence.Set("majority", false);
  trace::JsonValue pairs = trace::JsonValue::Array();
  trace::JsonValue pair = trace::JsonValue::Object();
  pair.Set("from", 1);
  pair.Set("to", 0);
  pairs.Push(std::move(pair));
  message.evidence.Set("pairs", std::move(pairs));
  std::vector<Finding> findings = {message, Died(0, 5, std::nullopt, nullptr),
                                   Died(2, 5, std::nullopt, "SIGTERM"),
                                   Died(3, 4, std::nullopt, nullptr)};
  ApplyAll(&findings);
  EXPECT_EQ(Errors(findings), (std::vector<std::string>{"collective-mismatch 1", "rank-died 3"}));
  EXPECT_NE(findings[1].summary.find("it received the message its sender sized differently"),
            std::string::npos)
      << findings[1].summary;
  EXPECT_NE(findings[1].summary.find("disagree on a message's size there, with no majority"),
            std::string::npos)
      << findings[1].summary;
}

// Replicas that drift after a gradient desync drift because of it.
TEST(DivergenceFollowOnTest, ReplicaDivergenceAfterAGradDesyncIsItsFollowOn) {
  std::vector<Finding> findings = {Make(kind::kGradDesync, 0, 5),
                                   Make(kind::kReplicaDivergence, 0, 10)};
  findings[1].ranks = {0, 1};
  ApplyAll(&findings);
  EXPECT_EQ(Errors(findings), std::vector<std::string>{"grad-desync 0"});
  EXPECT_EQ(Evidence(findings[1], "follow_on_of"),
            "{\"kind\":\"grad-desync\",\"subject\":null,\"culprits\":[0]}");
  EXPECT_EQ(findings[1].ranks, (std::vector<int>{0, 1}));  // kind, ranks and step stay
  EXPECT_EQ(findings[1].step, 10);
}

// Two independent causes in one run are both named: a gradient desync, then a crash.
TEST(DivergenceFollowOnTest, AGradDesyncAndALaterCrashAreBothErrors) {
  std::vector<Finding> findings = {Make(kind::kGradDesync, 0, 5),
                                   Died(1, 12, std::nullopt, nullptr),
                                   Make(kind::kReplicaDivergence, 0, 3)};
  ApplyAll(&findings);
  // The divergence before the desync's step is no consequence of it.
  EXPECT_EQ(Errors(findings),
            (std::vector<std::string>{"grad-desync 0", "rank-died 1", "replica-divergence 0"}));
}

TEST(UnsplitDataFollowOnTest, TheTorchCpuCollisionOfAnUnsplitDatasetIsItsFollowOn) {
  Finding unsplit = Make(kind::kShardOverlap, 0, 0);
  unsplit.subject = "data loader";
  unsplit.evidence.Set("basis", "identical batches");
  Finding sampler = Make(kind::kRngCollision, 0, 8, Severity::kWarning);
  sampler.subject = "torch-cpu";
  Finding numpy = Make(kind::kRngCollision, 0, 8, Severity::kWarning);
  numpy.subject = "numpy";
  std::vector<Finding> findings = {unsplit, sampler, numpy};
  ApplyAll(&findings);
  EXPECT_EQ(findings[1].severity, Severity::kInfo);
  EXPECT_NE(Evidence(findings[1], "follow_on_of").find("shard-overlap"), std::string::npos);
  EXPECT_EQ(findings[2].severity, Severity::kWarning);  // another stream: its own story
  // A sampler's overlap (another basis) says nothing of torch-cpu.
  std::vector<Finding> seeded = {Make(kind::kShardOverlap, 1, 0), sampler};
  ApplyAll(&seeded);
  EXPECT_EQ(seeded[1].severity, Severity::kWarning);
}

}  // namespace
}  // namespace dsdiag::analyzers
