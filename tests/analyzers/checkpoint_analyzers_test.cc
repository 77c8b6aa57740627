// checkpoint-race and checkpoint-mismatch on small hand-made runs: exact kind, ranks, step
// and subject.
#include <gtest/gtest.h>

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

constexpr int64_t kMs = 1000000;

struct Ckpt {
  const char* op = "save";
  std::string path;
  uint64_t h = 0x1234;
  int64_t ckpt_step = 0;
  int64_t epoch = 0;
  int64_t start = 0;  // ns after the header's clock.mono
  int64_t dur = 10 * kMs;
};

void WriteCkpt(trace::TraceWriter* w, const trace::TraceHeader& header, const Ckpt& c) {
  auto r = w->BeginAt(trace::rec::kCheckpoint, header.clock.mono_ns + c.start);
  r.line()
      .Field("op", c.op)
      .Field("path", c.path)
      .Field("bytes", int64_t{1000})
      .Hex("h", c.h)
      .Field("ckpt_step", c.ckpt_step)
      .Field("epoch", c.epoch)
      .Field("dur", c.dur);
}

void WriteParamFp(trace::TraceWriter* w, const char* why, std::vector<uint64_t> hashes) {
  auto r = w->Begin(trace::rec::kFingerprint);
  auto& l = r.line();
  l.Field("what", "param").Field("why", why).Field("gran", "bucket").BeginArray("h");
  for (uint64_t h : hashes) l.AddHex(h);
  l.EndArray();
}

// A rank that writes `at_start` records before its first step, then `steps` steps with
// `in_step(step)` records.
template <typename AtStart, typename InStep>
void WriteRank(TestRun* run, int rank, int world, int first_step, int steps, AtStart at_start,
               InStep in_step) {
  trace::TraceHeader header = TestRun::Header(rank, world);
  auto w = run->Open(header);
  at_start(w.get(), header);
  for (int step = first_step; step < first_step + steps; ++step) {
    w->SetStep(step);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    in_step(w.get(), header, step);
    w->Begin(trace::rec::kStep).line().Field("dur", int64_t{1000});
  }
  TestRun::WriteEnd(w.get(), "ok", 0);
}

const auto kNothing = [](trace::TraceWriter*, const trace::TraceHeader&) {};

std::string CkptPath(int step) {
  return "run/checkpoints/step-0000000" + std::to_string(step) + ".pt";
}

TEST(CheckpointRaceAnalyzerTest, EveryRankSavingTheSamePathIsOneErrorAtTheFirstSave) {
  TestRun run;
  for (int rank = 0; rank < 3; ++rank) {
    WriteRank(&run, rank, 3, 0, 8, kNothing,
              [&](trace::TraceWriter* w, const trace::TraceHeader& h, int step) {
                if ((step + 1) % 3 != 0) return;
                Ckpt c;
                c.path = CkptPath(step + 1);
                c.ckpt_step = step + 1;
                c.start = (step * 100 + rank * 2) * kMs;  // overlapping 10 ms writes
                WriteCkpt(w, h, c);
              });
  }
  auto findings = RunOne(CreateCheckpointRaceAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCheckpointRace);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.subject, CkptPath(3));
  EXPECT_EQ(Evidence(f, "ckpt_step"), "3");
  EXPECT_EQ(Evidence(f, "overlapped"), "true");
  EXPECT_EQ(Evidence(f, "paths_raced"), "2");
}

TEST(CheckpointRaceAnalyzerTest, SequentialWritesStillRaceButRank0AloneOrShardsDoNot) {
  TestRun seq;
  for (int rank = 0; rank < 2; ++rank) {
    WriteRank(&seq, rank, 2, 0, 3, kNothing,
              [&](trace::TraceWriter* w, const trace::TraceHeader& h, int step) {
                if (step != 1) return;
                Ckpt c;
                c.path = CkptPath(2);
                c.start = rank * 50 * kMs;
                WriteCkpt(w, h, c);
              });
  }
  auto findings = RunOne(CreateCheckpointRaceAnalyzer(), seq.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].step, 1);
  EXPECT_EQ(Evidence(findings[0], "overlapped"), "false");

  TestRun ok;
  for (int rank = 0; rank < 2; ++rank) {
    WriteRank(&ok, rank, 2, 0, 3, kNothing,
              [&](trace::TraceWriter* w, const trace::TraceHeader& h, int step) {
                if (step != 1) return;
                Ckpt c;
                c.path = "run/shard-" + std::to_string(rank) + ".pt";  // one path per rank
                WriteCkpt(w, h, c);
                if (rank == 0) {
                  c.path = CkptPath(2);
                  WriteCkpt(w, h, c);
                }
              });
  }
  EXPECT_TRUE(RunOne(CreateCheckpointRaceAnalyzer(), ok.dir()).empty());
}

TEST(CheckpointRaceAnalyzerTest, ALoadWhileAnotherRankSavesIsARace) {
  TestRun run;
  for (int rank = 0; rank < 2; ++rank) {
    WriteRank(&run, rank, 2, 0, 3, kNothing,
              [&](trace::TraceWriter* w, const trace::TraceHeader& h, int step) {
                if (step != 2) return;
                Ckpt c;
                c.op = rank == 0 ? "save" : "load";
                c.path = CkptPath(3);
                c.start = rank * 5 * kMs;
                WriteCkpt(w, h, c);
              });
  }
  auto findings = RunOne(CreateCheckpointRaceAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(findings[0].step, 2);
}

// A resumed run: every rank loads at its start, fingerprints its parameters, then trains.
void WriteResumed(TestRun* run, int world, const std::vector<Ckpt>& loads,
                  const std::vector<std::vector<uint64_t>>& fps) {
  for (int rank = 0; rank < world; ++rank) {
    WriteRank(
        run, rank, world, 6, 2,
        [&](trace::TraceWriter* w, const trace::TraceHeader& h) {
          if (!loads.empty()) WriteCkpt(w, h, loads[rank]);
          WriteParamFp(w, "resume", fps[rank]);
        },
        [](trace::TraceWriter*, const trace::TraceHeader&, int) {});
  }
}

Ckpt Load(int step, uint64_t h) {
  Ckpt c;
  c.op = "load";
  c.path = CkptPath(step);
  c.ckpt_step = step;
  c.h = h;
  return c;
}

TEST(CheckpointMismatchAnalyzerTest, ARankThatLoadedAStaleCheckpointIsNamed) {
  TestRun run;
  WriteResumed(&run, 3, {Load(6, 0xa), Load(6, 0xa), Load(4, 0xb)}, {{1, 2}, {1, 2}, {3, 4}});
  auto findings = RunOne(CreateCheckpointMismatchAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCheckpointMismatch);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, 6);
  EXPECT_EQ(f.subject, CkptPath(4));
  EXPECT_EQ(Evidence(f, "params_differ_after_load"), "true");
}

// The stale rank is named from what it loaded, at any world size: an older checkpoint.
TEST(CheckpointMismatchAnalyzerTest, TheRankThatLoadedAnOlderCheckpointIsNamedAtTwoRanks) {
  for (int stale : {0, 1}) {
    TestRun run;
    WriteResumed(
        &run, 2,
        {stale == 0 ? Load(4, 0xb) : Load(6, 0xa), stale == 1 ? Load(4, 0xb) : Load(6, 0xa)},
        {{1, 2}, {3, 4}});
    auto findings = RunOne(CreateCheckpointMismatchAnalyzer(), run.dir());
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, std::vector<int>{stale});
    EXPECT_EQ(findings[0].subject, CkptPath(4));
    EXPECT_EQ(Evidence(findings[0], "basis"), "\"older checkpoint\"");
  }
}

TEST(CheckpointMismatchAnalyzerTest, SameLoadsButDifferentParametersIsAMismatch) {
  TestRun run;
  WriteResumed(&run, 2, {Load(6, 0xa), Load(6, 0xa)}, {{1, 2}, {1, 5}});
  auto findings = RunOne(CreateCheckpointMismatchAnalyzer(), run.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));  // a tie: no majority
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
  EXPECT_EQ(findings[0].subject, CkptPath(6));
  EXPECT_EQ(findings[0].step, 6);
}

// Per-rank shards (each rank its own file) differ in content by design: only their step
// and epoch must agree.
TEST(CheckpointMismatchAnalyzerTest, PerRankShardsAreComparedByStepNotContent) {
  auto shard = [](int rank, int step, uint64_t h) {
    Ckpt c = Load(step, h);
    c.path = "run/shard-" + std::to_string(rank) + ".pt";
    return c;
  };
  TestRun same;
  WriteResumed(&same, 2, {shard(0, 6, 0xa), shard(1, 6, 0xb)}, {{1, 2}, {1, 2}});
  EXPECT_TRUE(RunOne(CreateCheckpointMismatchAnalyzer(), same.dir()).empty());
  TestRun stale;
  WriteResumed(&stale, 2, {shard(0, 6, 0xa), shard(1, 4, 0xb)}, {{1, 2}, {1, 2}});
  auto findings = RunOne(CreateCheckpointMismatchAnalyzer(), stale.dir());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].subject, "run/shard-1.pt");
}

TEST(CheckpointMismatchAnalyzerTest, AConsistentResumeGivesNothing) {
  TestRun run;
  WriteResumed(&run, 2, {Load(6, 0xa), Load(6, 0xa)}, {{1, 2}, {1, 2}});
  EXPECT_TRUE(RunOne(CreateCheckpointMismatchAnalyzer(), run.dir()).empty());
  EXPECT_TRUE(RunOne(CreateCheckpointRaceAnalyzer(), run.dir()).empty());
}

// DDP's init fingerprint {1, 2} on every rank; `loader` loads {7, 8} into the DDP model at
// its start (after the wrap) and no other rank does; at step 9 each rank fingerprints
// periodic(rank).
void WriteOneSidedLoad(TestRun* run, int world, int loader,
                       const std::function<std::vector<uint64_t>(int)>& periodic) {
  for (int rank = 0; rank < world; ++rank)
    WriteRank(
        run, rank, world, 0, 10,
        [&](trace::TraceWriter* w, const trace::TraceHeader& h) {
          WriteParamFp(w, "init", {1, 2});
          if (rank != loader) return;
          WriteCkpt(w, h, Load(0, 0xa));
          WriteParamFp(w, "resume", {7, 8});
        },
        [&](trace::TraceWriter* w, const trace::TraceHeader&, int step) {
          if (step == 9) WriteParamFp(w, "periodic", periodic(rank));
        });
}

TEST(CheckpointMismatchAnalyzerTest, ALoadOnOneRankAfterTheWrapNamesThatRank) {
  for (int loader : {0, 2}) {
    TestRun run;
    WriteOneSidedLoad(&run, 3, loader, [&](int rank) {
      return rank == loader ? std::vector<uint64_t>{17, 18} : std::vector<uint64_t>{11, 12};
    });
    auto findings = RunOne(CreateCheckpointMismatchAnalyzer(), run.dir());
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, std::vector<int>{loader});
    EXPECT_EQ(findings[0].step, 0);
    EXPECT_EQ(findings[0].subject, CkptPath(0));
    EXPECT_EQ(Evidence(findings[0], "basis"), "\"loaded on these ranks only\"");
    EXPECT_EQ(Evidence(findings[0], "still_differ_at"), "9");
  }
}

TEST(CheckpointMismatchAnalyzerTest, ALoadOnOneRankThenABroadcastIsClean) {
  TestRun run;
  WriteOneSidedLoad(&run, 2, 0, [](int) { return std::vector<uint64_t>{17, 18}; });
  EXPECT_TRUE(RunOne(CreateCheckpointMismatchAnalyzer(), run.dir()).empty());
}

}  // namespace
}  // namespace dsdiag::analyzers
