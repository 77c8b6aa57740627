// scaler-overflow, scaler-desync and clip-before-unscale on small hand-made runs: exact kind,
// severity, ranks and step.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/record_types.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

struct ScalerRec {
  double scale = 65536;
  bool inf_local = false;
  bool inf_global = false;
  bool skipped = false;
  const char* event = nullptr;
};

void WriteScaler(trace::TraceWriter* w, const ScalerRec& s) {
  auto r = w->Begin(trace::rec::kScaler);
  auto& l = r.line();
  l.Field("scale", s.scale)
      .Field("inf_local", s.inf_local)
      .Field("inf_global", s.inf_global)
      .Field("skipped", s.skipped);
  if (s.event) l.Field("event", s.event);
  l.Field("norm_scaled", 1.0).Field("norm", 1.0 / s.scale);
}

void WriteClip(trace::TraceWriter* w, bool unscaled, double norm, double max) {
  auto r = w->Begin(trace::rec::kClip);
  r.line().Field("unscaled", unscaled).Field("norm", norm).Field("max", max);
}

void WriteRun(TestRun* run, int world, int steps,
              const std::function<void(int, int, trace::TraceWriter*)>& per_step) {
  for (int rank = 0; rank < world; ++rank) {
    auto w = run->Open(TestRun::Header(rank, world));
    for (int step = 0; step < steps; ++step) {
      w->SetStep(step);
      w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
      per_step(rank, step, w.get());
      w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000});
    }
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
}

// A scaler that behaves like GradScaler: backoff on the steps in `overflow` (all ranks skip;
// `inf_local` on `origin`, or every rank when origin < 0), growth never.
std::function<void(int, int, trace::TraceWriter*)> Scaler(std::vector<int> overflow,
                                                          int origin = -1, double initial = 65536) {
  return [=](int rank, int step, trace::TraceWriter* w) {
    double s = initial;
    for (int k : overflow)
      if (k < step) s /= 2;
    const bool inf = std::find(overflow.begin(), overflow.end(), step) != overflow.end();
    ScalerRec r;
    r.scale = s;
    r.inf_global = inf;
    r.inf_local = inf && (origin < 0 || origin == rank);
    r.skipped = inf;
    r.event = inf ? "backoff" : nullptr;
    WriteScaler(w, r);
  };
}

TEST(ScalerOverflowAnalyzerTest, CleanScalerGivesNothing) {
  TestRun run;
  WriteRun(&run, 2, 30, Scaler({}));
  EXPECT_TRUE(RunOne(CreateScalerOverflowAnalyzer(), run.dir()).empty());
  EXPECT_TRUE(RunOne(CreateScalerDesyncAnalyzer(), run.dir()).empty());
}

TEST(ScalerOverflowAnalyzerTest, OneSkippedStepMidTrainingIsAWarningAtThatStep) {
  TestRun run;
  WriteRun(&run, 2, 30, Scaler({23}, /*origin=*/1));
  auto findings = RunOne(CreateScalerOverflowAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kScalerOverflow);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 23);
  EXPECT_EQ(Evidence(f, "skipped_steps"), "1");
  EXPECT_EQ(Evidence(f, "last_good_scale"), "65536");
  EXPECT_EQ(Evidence(f, "ranks_skipped"), "[0,1]");
}

TEST(ScalerOverflowAnalyzerTest, EarlyBackoffsAreCalibrationInfo) {
  TestRun run;
  WriteRun(&run, 2, 30, Scaler({0, 1, 2, 3, 4, 5, 9}, -1, 1 << 20));
  auto findings = RunOne(CreateScalerOverflowAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_EQ(findings[0].step, 0);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "skipped_steps"), "7");
  EXPECT_EQ(Evidence(findings[0], "longest_streak"), "6");
}

TEST(ScalerOverflowAnalyzerTest, ManyBackoffsInARowOrATinyScaleIsACollapse) {
  TestRun run;
  WriteRun(&run, 2, 40, Scaler({22, 25, 26, 27, 28, 29, 30}));
  auto findings = RunOne(CreateScalerOverflowAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].step, 25);
  EXPECT_EQ(Evidence(findings[0], "longest_streak"), "6");
  EXPECT_EQ(Evidence(findings[0], "last_good_scale"), "32768");
  EXPECT_EQ(findings[1].severity, Severity::kWarning);
  EXPECT_EQ(findings[1].step, 22);

  TestRun tiny;
  WriteRun(&tiny, 1, 30, Scaler({24}, -1, 0.5));
  findings = RunOne(CreateScalerOverflowAnalyzer(), tiny.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].step, 24);
}

TEST(ScalerOverflowAnalyzerTest, ASkipRightAfterGrowthIsTheScalerProbing) {
  TestRun run;
  WriteRun(&run, 2, 30, [](int, int step, trace::TraceWriter* w) {
    ScalerRec r;
    r.scale = step == 25 ? 131072 : 65536;
    if (step == 24) r.event = "growth";
    if (step == 25) {
      r.inf_local = r.inf_global = r.skipped = true;
      r.event = "backoff";
    }
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerOverflowAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
  EXPECT_EQ(findings[0].step, 25);
}

TEST(ScalerDesyncAnalyzerTest, ARankThatStepsWhileTheOthersSkipIsNamed) {
  TestRun run;
  WriteRun(&run, 3, 8, [](int rank, int step, trace::TraceWriter* w) {
    ScalerRec r;
    if (step == 4) {
      r.inf_local = rank == 0;
      r.inf_global = true;
      r.skipped = rank != 2;  // rank 2 decided on its own flag
      r.event = r.skipped ? "backoff" : nullptr;
    }
    if (step > 4 && rank != 2) r.scale = 32768;
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kScalerDesync);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, 4);
  EXPECT_EQ(f.subject, "found-inf");
  EXPECT_EQ(Evidence(f, "differs"), "\"skipped\"");
  EXPECT_EQ(Evidence(f, "steps_disagreeing"), "4");
  EXPECT_EQ(Evidence(f, "ranks_ignoring_reduced_flag"), "[2]");
}

TEST(ScalerDesyncAnalyzerTest, AScaleRestoredOnOneRankOnlyIsADesync) {
  TestRun run;
  WriteRun(&run, 2, 4, [](int rank, int, trace::TraceWriter* w) {
    ScalerRec r;
    r.scale = rank == 1 ? 1024 : 65536;
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  // Two scales, one rank each, nothing else to go by: no majority, both named.
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(findings[0].step, 0);
  EXPECT_EQ(findings[0].subject, "loss scale");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"no majority\"");
}

TEST(ScalerDesyncAnalyzerTest, AnEvenSplitOfFourScalesNamesEveryRank) {
  TestRun run;
  WriteRun(&run, 4, 4, [](int rank, int, trace::TraceWriter* w) {
    ScalerRec r;
    r.scale = rank % 2 == 1 ? 1024 : 65536;
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"no majority\"");
  EXPECT_NE(findings[0].summary.find("no majority"), std::string::npos) << findings[0].summary;
}

TEST(ScalerDesyncAnalyzerTest, ThreeScalesAgainstOneNameTheOne) {
  TestRun run;
  WriteRun(&run, 4, 4, [](int rank, int, trace::TraceWriter* w) {
    ScalerRec r;
    r.scale = rank == 3 ? 1024 : 65536;
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
}

// At two ranks the rank that did not reduce the found-inf flag is named from its own
// records: rank 0 overflowed and skipped; rank 1's reduced flag says no overflow.
TEST(ScalerDesyncAnalyzerTest, TheRankThatDidNotReduceTheFlagIsNamedAtTwoRanks) {
  TestRun run;
  WriteRun(&run, 2, 4, [](int rank, int step, trace::TraceWriter* w) {
    ScalerRec r;
    if (step == 1) {
      r.inf_local = rank == 0;
      r.inf_global = rank == 0;  // rank 1 never saw rank 0's flag
      r.skipped = rank == 0;
    }
    WriteScaler(w, r);
  });
  auto findings = RunOne(CreateScalerDesyncAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"found-inf not reduced across ranks\"");
  EXPECT_NE(findings[0].summary.find("rank 1 stepped while rank 0 skipped it"), std::string::npos)
      << findings[0].summary;
}

TEST(ClipBeforeUnscaleAnalyzerTest, ClippingScaledGradientsIsAnErrorWithNormMaxAndScale) {
  TestRun run;
  WriteRun(&run, 2, 5, [](int, int step, trace::TraceWriter* w) {
    if (step >= 2)
      WriteClip(w, false, 40000.0 + step, 1.0);
    else
      WriteClip(w, true, 0.5, 1.0);
    WriteScaler(w, ScalerRec{});
  });
  auto findings = RunOne(CreateClipBeforeUnscaleAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kClipBeforeUnscale);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(Evidence(f, "norm"), "40002");
  EXPECT_EQ(Evidence(f, "max"), "1");
  EXPECT_EQ(Evidence(f, "scale"), "65536");
  EXPECT_EQ(Evidence(f, "steps_affected"), "6");
}

TEST(ClipBeforeUnscaleAnalyzerTest, NoScalerOrUnscaledClipsGiveNothing) {
  TestRun run;
  WriteRun(&run, 2, 3, [](int, int, trace::TraceWriter* w) { WriteClip(w, false, 5.0, 1.0); });
  EXPECT_TRUE(RunOne(CreateClipBeforeUnscaleAnalyzer(), run.dir()).empty());
  TestRun unscaled;
  WriteRun(&unscaled, 2, 3, [](int, int, trace::TraceWriter* w) {
    WriteClip(w, true, 5.0, 1.0);
    WriteScaler(w, ScalerRec{});
  });
  EXPECT_TRUE(RunOne(CreateClipBeforeUnscaleAnalyzer(), unscaled.dir()).empty());
}

TEST(ClipBeforeUnscaleAnalyzerTest, AClipThatNeverTriggeredIsAWarning) {
  TestRun run;
  WriteRun(&run, 1, 3, [](int, int, trace::TraceWriter* w) {
    WriteClip(w, false, 5.0, 1e6);
    WriteScaler(w, ScalerRec{});
  });
  auto findings = RunOne(CreateClipBeforeUnscaleAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
}

}  // namespace
}  // namespace dsdiag::analyzers
