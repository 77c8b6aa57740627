// missing-grad, grad-desync, init-divergence and replica-divergence on small hand-made runs:
// exact kind, ranks, step and subject.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

const std::vector<std::string> kNames = {"embed.weight", "blocks.0.attn.qkv.weight",
                                         "blocks.0.moe.experts.1.w_in.weight",
                                         "blocks.0.moe.experts.1.w_out.weight"};

void WriteParams(trace::TraceWriter* w) {
  auto r = w->Begin(trace::rec::kParams);
  auto& l = r.line();
  l.BeginArray("names");
  for (const auto& n : kNames) l.Add(n);
  l.EndArray().BeginArray("buckets");
  l.BeginArray().Add(3).Add(2).EndArray();
  l.BeginArray().Add(1).Add(0).EndArray();
  l.EndArray();
}

void WriteGrad(trace::TraceWriter* w, const std::vector<int>* missing) {
  auto r = w->Begin(trace::rec::kGradient);
  auto& l = r.line();
  l.Field("norm", 1.0).Field("n_missing", int64_t{missing ? int64_t(missing->size()) : 0});
  if (missing) {
    l.BeginArray("missing");
    for (int i : *missing) l.Add(i);
    l.EndArray();
  }
}

void WriteFp(trace::TraceWriter* w, const char* what, const char* why, const char* gran,
             const std::vector<uint64_t>& hashes) {
  auto r = w->Begin(trace::rec::kFingerprint);
  auto& l = r.line();
  l.Field("what", what).Field("why", why).Field("gran", gran).BeginArray("h");
  for (uint64_t h : hashes) l.AddHex(h);
  l.EndArray();
}

// An `fp` record as the Python package's device path writes it: `fn` "dsum" between `gran`
// and `h` (trace/records/fp_record.h).
void WriteDeviceFp(trace::TraceWriter* w, const char* why, const std::vector<uint64_t>& hashes) {
  auto r = w->Begin(trace::rec::kFingerprint);
  auto& l = r.line();
  l.Field("what", "grad").Field("why", why).Field("gran", "param").Field("fn", "dsum");
  l.BeginArray("h");
  for (uint64_t h : hashes) l.AddHex(h);
  l.EndArray();
}

// Writes `world` ranks of `steps` steps; `per_step(rank, step, writer)` adds the records of
// interest inside each step.
void WriteRun(TestRun* run, int world, int steps,
              const std::function<void(int, int, trace::TraceWriter*)>& per_step,
              const std::function<void(int, trace::TraceWriter*)>& before = nullptr) {
  for (int rank = 0; rank < world; ++rank) {
    auto w = run->Open(TestRun::Header(rank, world));
    WriteParams(w.get());
    if (before) before(rank, w.get());
    for (int step = 0; step < steps; ++step) {
      w->SetStep(step);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      per_step(rank, step, w.get());
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000});
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

TEST(MissingGradAnalyzerTest, ASubmoduleSkippedOnOneRankIsOneErrorNamingItsFirstParam) {
  TestRun run;
  const std::vector<int> none, skipped = {3, 2};
  WriteRun(&run, 2, 5, [&](int rank, int step, trace::TraceWriter* w) {
    // The list is written on the first step only, as the probe does when nothing changes.
    WriteGrad(w, step == 0 ? (rank == 1 ? &skipped : &none) : nullptr);
  });
  auto findings = RunOne(CreateMissingGradAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kMissingGrad);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 0);
  EXPECT_EQ(f.subject, "blocks.0.moe.experts.1.w_in.weight");
  EXPECT_EQ(Evidence(f, "steps_affected"), "5");
  EXPECT_EQ(Evidence(f, "params"),
            "[\"blocks.0.moe.experts.1.w_in.weight\",\"blocks.0.moe.experts.1.w_out.weight\"]");
  EXPECT_EQ(Evidence(f, "ranks_with_grad_at_first_step"), "[0]");
  EXPECT_NE(f.hint.find("find_unused_parameters"), std::string::npos);
  EXPECT_NE(f.hint.find("expert"), std::string::npos);
}

TEST(MissingGradAnalyzerTest, UnusedOnEveryRankIsInfoAndLaterChangesGiveTheirStep) {
  TestRun run;
  const std::vector<int> unused = {0}, later = {0, 1};
  WriteRun(&run, 3, 6, [&](int rank, int step, trace::TraceWriter* w) {
    if (step == 0) return WriteGrad(w, &unused);
    if (step == 4 && rank == 2) return WriteGrad(w, &later);
    WriteGrad(w, nullptr);
  });
  auto findings = RunOne(CreateMissingGradAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 2u);
  // Sorted: the error first.
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].step, 4);
  EXPECT_EQ(findings[0].subject, "blocks.0.attn.qkv.weight");
  EXPECT_EQ(Evidence(findings[0], "steps_affected"), "2");
  EXPECT_EQ(findings[1].severity, Severity::kInfo);
  EXPECT_EQ(findings[1].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(findings[1].subject, "embed.weight");
  EXPECT_EQ(Evidence(findings[1], "steps_affected"), "6");
}

TEST(MissingGradAnalyzerTest, EveryParamWithGradientGivesNothing) {
  TestRun run;
  const std::vector<int> none;
  WriteRun(&run, 4, 3, [&](int, int step, trace::TraceWriter* w) {
    WriteGrad(w, step == 0 ? &none : nullptr);
  });
  EXPECT_TRUE(RunOne(CreateMissingGradAnalyzer(), run.dir()).empty());
}

TEST(GradDesyncAnalyzerTest, TheMinorityRankAndBucketAtTheFirstStep) {
  TestRun run;
  WriteRun(&run, 4, 6, [&](int rank, int step, trace::TraceWriter* w) {
    uint64_t b1 = 100 + step;
    if (rank == 2 && step == 3) b1 = 999;
    WriteFp(w, "grad", "after-sync", "bucket", {uint64_t(step), b1});
  });
  auto findings = RunOne(CreateGradDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kGradDesync);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.subject, "bucket 1 (blocks.0.attn.qkv.weight, embed.weight)");
  EXPECT_EQ(Evidence(f, "groups"), "[{\"ranks\":[0,1,3]},{\"ranks\":[2]}]");
}

// Device fingerprints (`fn` "dsum") are compared with each other as xxHash3 ones are; a rank
// whose hashes come from the other function is left out, never counted as a disagreement.
TEST(GradDesyncAnalyzerTest, DeviceSumsAreComparedWithDeviceSumsOnly) {
  TestRun run;
  WriteRun(&run, 4, 6, [&](int rank, int step, trace::TraceWriter* w) {
    if (rank == 3) return WriteFp(w, "grad", "after-sync", "param", {7, 8, 9, 10});
    uint64_t h2 = 100 + step;
    if (rank == 1 && step == 4) h2 = 555;
    WriteDeviceFp(w, "after-sync", {1, 2, h2, 4});
  });
  auto findings = RunOne(CreateGradDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].step, 4);
  EXPECT_EQ(findings[0].subject, "blocks.0.moe.experts.1.w_in.weight");
  EXPECT_EQ(Evidence(findings[0], "groups"), "[{\"ranks\":[0,2]},{\"ranks\":[1]}]");
}

// Two ranks that disagree after the sync, with nothing else to go by: no majority, both named.
TEST(GradDesyncAnalyzerTest, ATieAtTwoRanksNamesBothAndSaysThereIsNoMajority) {
  TestRun run;
  WriteRun(&run, 2, 3, [&](int rank, int step, trace::TraceWriter* w) {
    std::vector<uint64_t> h = {1, 2, 3, 4};
    if (rank == 1 && step >= 1) h[2] = 7;
    WriteFp(w, "grad", "after-sync", "param", h);
  });
  auto findings = RunOne(CreateGradDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(findings[0].step, 1);
  EXPECT_EQ(findings[0].subject, "blocks.0.moe.experts.1.w_in.weight");
  EXPECT_EQ(Evidence(findings[0], "steps_affected"), "2");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"no majority\"");
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
  EXPECT_NE(findings[0].summary.find("no majority"), std::string::npos) << findings[0].summary;
}

// The evidence at any world size: every rank agreed at the allreduce's completion, and the
// rank whose own gradient then changed before the optimizer step is the one named — rank 0
// here, which a vote at two ranks would have passed over.
TEST(GradDesyncAnalyzerTest, TheRankWhoseGradientChangedAfterTheSyncIsNamedAtTwoRanks) {
  TestRun run;
  WriteRun(&run, 2, 6, [&](int rank, int step, trace::TraceWriter* w) {
    const std::vector<uint64_t> synced = {uint64_t(step), 100 + uint64_t(step)};
    std::vector<uint64_t> used = synced;
    if (rank == 0 && step >= 3) used[1] = 999;
    WriteFp(w, "grad", "after-sync", "bucket", synced);
    WriteFp(w, "grad", "pre-step", "bucket", used);
  });
  auto findings = RunOne(CreateGradDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{0});
  EXPECT_EQ(findings[0].step, 3);
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"changed after the sync\"");
  EXPECT_EQ(findings[0].summary.rfind("rank 0 changed its gradient for bucket 1", 0), 0u)
      << findings[0].summary;
}

// An even split of four: two against two is no majority, unless the evidence says who.
TEST(GradDesyncAnalyzerTest, AnEvenSplitOfFourIsNoMajorityUnlessTheEvidenceSaysWho) {
  for (bool evidence : {false, true}) {
    SCOPED_TRACE(evidence);
    TestRun run;
    WriteRun(&run, 4, 4, [&](int rank, int step, trace::TraceWriter* w) {
      const std::vector<uint64_t> synced = {1, 2};
      std::vector<uint64_t> odd = {1, 3};
      WriteFp(w, "grad", "after-sync", "bucket", evidence || rank < 2 ? synced : odd);
      if (evidence) WriteFp(w, "grad", "pre-step", "bucket", rank < 2 || step < 2 ? synced : odd);
    });
    auto findings = RunOne(CreateGradDesyncAnalyzer(), run.dir());
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks,
              evidence ? (std::vector<int>{2, 3}) : (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(Evidence(findings[0], "majority"), evidence ? "true" : "false");
  }
}

std::vector<Finding> RunDivergence(const TestRun& run) {
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(CreateInitDivergenceAnalyzer());
  analyzers.push_back(CreateReplicaDivergenceAnalyzer());
  return RunCompareWith(run.dir(), analyzers).findings;
}

TEST(ReplicaDivergenceAnalyzerTest, DifferentInitIsInitDivergenceOnly) {
  TestRun run;
  WriteRun(
      &run, 3, 4,
      [&](int rank, int step, trace::TraceWriter* w) {
        if (step == 2) WriteFp(w, "param", "periodic", "bucket", {uint64_t(rank), 5});
      },
      [&](int rank, trace::TraceWriter* w) {
        WriteFp(w, "param", "init", "bucket", {rank == 1 ? 8u : 9u, 5});
      });
  auto findings = RunDivergence(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, kind::kInitDivergence);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].step, 0);
  EXPECT_EQ(findings[0].subject,
            "bucket 0 (blocks.0.moe.experts.1.w_out.weight, "
            "blocks.0.moe.experts.1.w_in.weight)");
}

// Rank 0 is the broadcast's source: at two ranks the one that did not get its parameters is
// rank 1, not a coin toss; at an even split of four, the two that differ from rank 0.
TEST(InitDivergenceAnalyzerTest, TheRanksThatDifferFromTheBroadcastSourceAtAnyWorldSize) {
  for (int world : {2, 4}) {
    SCOPED_TRACE(world);
    TestRun run;
    WriteRun(
        &run, world, 2, [](int, int, trace::TraceWriter*) {},
        [&](int rank, trace::TraceWriter* w) {
          WriteFp(w, "param", "init", "bucket", {rank < world / 2 ? 9u : 8u, 5});
        });
    auto findings = RunDivergence(run);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].kind, kind::kInitDivergence);
    EXPECT_EQ(findings[0].ranks, world == 2 ? std::vector<int>{1} : (std::vector<int>{2, 3}));
    EXPECT_NE(findings[0].summary.find("rank 0's parameters"), std::string::npos);
  }
}

// A rank whose parameters changed between two optimizer steps (a manual decay) is named at
// two ranks; without that evidence, two replicas that differ are no majority.
TEST(ReplicaDivergenceAnalyzerTest, ParametersChangedOutsideTheOptimizerNameTheirRank) {
  for (bool evidence : {true, false}) {
    SCOPED_TRACE(evidence);
    TestRun run;
    WriteRun(&run, 2, 4, [&](int rank, int step, trace::TraceWriter* w) {
      const uint64_t decayed = rank == 1 && step >= 2 ? 77 : 0;
      if (evidence && step >= 1)
        WriteFp(w, "param", "pre-step", "bucket", {uint64_t(step - 1) + decayed, 5});
      WriteFp(w, "param", "periodic", "bucket", {uint64_t(step) + (evidence ? 0 : decayed), 5});
    });
    auto findings = RunDivergence(run);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].kind, kind::kReplicaDivergence);
    EXPECT_EQ(findings[0].step, 2);
    EXPECT_EQ(findings[0].ranks, evidence ? std::vector<int>{1} : (std::vector<int>{0, 1}));
    EXPECT_EQ(Evidence(findings[0], "basis"),
              evidence ? "\"changed outside the optimizer\"" : "\"no majority\"");
  }
}

void WriteWrittenOutsideMark(trace::TraceWriter* w) {
  w->Begin(trace::rec::kMark)
      .line()
      .Field("name", "params-changed-outside-optimizer")
      .Field("message", "1 of 4 parameters were written between two optimizer steps: embed.weight");
}

// Light mode: fingerprints every 10 steps. Rank 1 writes its parameters between the optimizer
// steps of steps 12 and 13 (the probe's mark, at step 13); the next fingerprint (step 19)
// differs. At two ranks the fingerprints alone are no majority; the mark names rank 1 — unless
// both ranks wrote theirs (a resume on every rank), or the mark came before the replicas were
// last seen equal.
TEST(ReplicaDivergenceAnalyzerTest, AParametersWrittenMarkNamesItsRankAtTwoRanks) {
  struct Case {
    const char* name;
    std::vector<int> marked;
    int mark_step;
    std::vector<int> named;
    const char* basis;
  };
  const Case cases[] = {
      {"rank 1", {1}, 13, {1}, "\"changed outside the optimizer\""},
      {"both", {0, 1}, 13, {0, 1}, "\"no majority\""},
      {"before the last equal", {1}, 5, {0, 1}, "\"no majority\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestRun run;
    WriteRun(&run, 2, 20, [&](int rank, int step, trace::TraceWriter* w) {
      const bool marked = std::count(c.marked.begin(), c.marked.end(), rank) > 0;
      if (marked && step == c.mark_step) WriteWrittenOutsideMark(w);
      if ((step + 1) % 10 != 0) return;
      const uint64_t drift = rank == 1 && step >= 19 ? 77 : 0;
      WriteFp(w, "param", "periodic", "bucket", {uint64_t(step) + drift, 5});
    });
    auto findings = RunDivergence(run);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].kind, kind::kReplicaDivergence);
    EXPECT_EQ(findings[0].step, 19);
    EXPECT_EQ(findings[0].ranks, c.named);
    EXPECT_EQ(Evidence(findings[0], "basis"), c.basis);
    if (c.named.size() == 1) {
      EXPECT_EQ(Evidence(findings[0], "changed_before_step"), "13");
      EXPECT_NE(findings[0].summary.find("between the optimizer steps of step 12 and 13"),
                std::string::npos)
          << findings[0].summary;
    }
  }
}

TEST(ReplicaDivergenceAnalyzerTest, EqualAtInitThenTheFirstDifferingFingerprint) {
  TestRun run;
  WriteRun(
      &run, 4, 30,
      [&](int rank, int step, trace::TraceWriter* w) {
        if (step % 10 != 0) return;
        uint64_t a = 10 + step, b = 20 + step;
        if (rank == 3 && step >= 20) b = 1;
        WriteFp(w, "param", "periodic", "param", {a, a, b, b});
      },
      [&](int, trace::TraceWriter* w) {
        WriteFp(w, "param", "init", "param", {1, 2, 3, 4});
      });
  auto findings = RunOne(CreateReplicaDivergenceAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kReplicaDivergence);
  EXPECT_EQ(f.ranks, std::vector<int>{3});
  EXPECT_EQ(f.step, 20);
  EXPECT_EQ(f.subject, "blocks.0.moe.experts.1.w_in.weight");
  EXPECT_EQ(Evidence(f, "last_equal_step"), "10");
  EXPECT_EQ(Evidence(f, "tensors_differing"), "2");
}

// A GAN's discriminator step left out on rank 1 at step 2: its gradient hashes for those
// parameters were never taken (0) where rank 0's were. Not a gradient that differs: the
// update the rank skipped, named at its step, before the parameters' fingerprints show it.
TEST(ReplicaDivergenceAnalyzerTest, AnOptimizerStepSkippedOnOneRankIsNamedAtItsStep) {
  TestRun run;
  WriteRun(&run, 2, 12, [&](int rank, int step, trace::TraceWriter* w) {
    std::vector<uint64_t> h = {uint64_t(10 + step), uint64_t(20 + step), 30, 40};
    if (rank == 1 && step == 2) h[2] = h[3] = 0;
    WriteFp(w, "grad", "after-sync", "param", h);
    WriteFp(w, "grad", "pre-step", "param", h);
    if (step == 9) WriteFp(w, "param", "periodic", "param", {1, 2, rank == 1 ? 7u : 3u, 4});
  });
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(CreateGradDesyncAnalyzer());
  analyzers.push_back(CreateReplicaDivergenceAnalyzer());
  const auto findings = RunCompareWith(run.dir(), analyzers).findings;
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kReplicaDivergence);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(Evidence(f, "basis"), "\"optimizer step skipped\"");
  EXPECT_EQ(Evidence(f, "tensors_differing"), "2");
  EXPECT_EQ(Evidence(f, "parameters_differ_from_step"), "9");
  EXPECT_EQ(f.summary.rfind("rank 1 did not step the optimizer of", 0), 0u) << f.summary;
}

TEST(ReplicaDivergenceAnalyzerTest, EqualReplicasGiveNothing) {
  TestRun run;
  WriteRun(
      &run, 2, 12,
      [&](int, int step, trace::TraceWriter* w) {
        if (step % 5 == 0) WriteFp(w, "param", "periodic", "bucket", {uint64_t(step), 3});
      },
      [&](int, trace::TraceWriter* w) {
        WriteFp(w, "param", "init", "bucket", {1, 2});
      });
  EXPECT_TRUE(RunOne(CreateReplicaDivergenceAnalyzer(), run.dir()).empty());
}

}  // namespace
}  // namespace dsdiag::analyzers
