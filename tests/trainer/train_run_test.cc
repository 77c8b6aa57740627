// End-to-end runs of the reference trainer: `dsdiag train --nproc N` over Gloo on
// loopback — a clean run learns and keeps its replicas identical, a resumed run is bit for
// bit the uninterrupted one, SIGTERM and a crashed rank end the job cleanly.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "tests/trainer/trainer_test_util.h"

namespace dsdiag::trainer_test {
namespace {

double MeanLoss(const std::vector<const trace::JsonValue*>& steps, size_t from, size_t count) {
  double sum = 0;
  for (size_t i = from; i < from + count; ++i) sum += Real(*steps[i], "loss");
  return sum / static_cast<double>(count);
}

void ExpectCleanEnd(const Trace& trace) {
  const trace::JsonValue* end = trace.Last("end");
  ASSERT_NE(end, nullptr) << "no end record";
  EXPECT_EQ(Str(*end, "reason"), "ok");
  EXPECT_EQ(Int(*end, "status"), 0);
}

TEST(TrainRun, FourRanksLearnWithIdenticalReplicas) {
  TempDir dir("four-ranks");
  const std::string out = dir / "run";
  ASSERT_EQ(RunDsdiag({"train", "--nproc", "4", "--steps", "50", "--out", out}, dir / "log"), 0)
      << ReadFile(dir / "log");
  std::vector<Trace> traces = ReadRun(out, 4);
  std::set<std::string> run_ids, dropout_seeds;
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Trace& t = traces[r];
    EXPECT_EQ(Int(t.header(), "rank"), r);
    EXPECT_EQ(Int(t.header(), "world_size"), 4);
    EXPECT_EQ(Str(Field(t.header(), "versions"), "libtorch").substr(0, 2), "1.");
    run_ids.insert(Str(t.header(), "run_id"));
    ExpectCleanEnd(t);
    std::vector<const trace::JsonValue*> steps = t.Of("step");
    ASSERT_EQ(steps.size(), 50u);
    // The synthetic corpus is learnable: next-token loss falls well within 50 steps.
    EXPECT_LT(MeanLoss(steps, 45, 5), MeanLoss(steps, 0, 5) - 0.5);
    for (const trace::JsonValue* rng : t.Of("rng")) {
      if (Str(*rng, "stream") == "dropout") dropout_seeds.insert(std::to_string(Int(*rng, "seed")));
    }
    // Every expert got tokens: nothing is missing in a clean run of this size.
    for (const trace::JsonValue* g : t.Of("grad")) EXPECT_EQ(Int(*g, "n_missing"), 0);
  }
  EXPECT_EQ(run_ids.size(), 1u);
  EXPECT_EQ(dropout_seeds.size(), 4u) << "per-rank dropout streams must differ";
  // Replicas stay identical: every fingerprint (init, synced gradients, parameters)
  // equals rank 0's.
  for (const char* what : {"param", "grad"}) {
    for (const char* why : {"init", "after-sync", "periodic", "final"}) {
      const std::vector<std::string> rank0 = Fingerprints(traces[0], what, why);
      for (int r = 1; r < 4; ++r) {
        EXPECT_EQ(Fingerprints(traces[r], what, why), rank0) << what << "/" << why << " rank " << r;
      }
    }
  }
  EXPECT_FALSE(Fingerprints(traces[0], "grad", "after-sync").empty());
  // Every rank issued the same collectives in the same order.
  for (int r = 1; r < 4; ++r) {
    ASSERT_EQ(traces[r].Of("coll").size(), traces[0].Of("coll").size());
    for (size_t i = 0; i < traces[0].Of("coll").size(); ++i) {
      EXPECT_EQ(Str(*traces[r].Of("coll")[i], "tag"), Str(*traces[0].Of("coll")[i], "tag"));
      EXPECT_EQ(Int(*traces[r].Of("coll")[i], "n"), Int(*traces[0].Of("coll")[i], "n"));
    }
  }
}

TEST(TrainRun, SingleRank) {
  TempDir dir("one-rank");
  const std::string out = dir / "run";
  ASSERT_EQ(RunDsdiag({"train", "--nproc", "1", "--steps", "5", "--out", out}, dir / "log"), 0)
      << ReadFile(dir / "log");
  std::vector<Trace> traces = ReadRun(out, 1);
  ExpectCleanEnd(traces[0]);
  EXPECT_EQ(traces[0].Of("step").size(), 5u);
  EXPECT_FALSE(std::filesystem::exists(out + "/rank-00001.jsonl"));
}

// Train 20 steps straight, or 10 steps, checkpoint, and resume for 10 more: the final
// parameters must be the same bits. Mid-epoch, with loader workers, the fp16 scaler and
// clipping, so that data order, scaler state and dropout streams all have to resume.
TEST(TrainRun, ResumeIsBitForBit) {
  TempDir dir("resume");
  const std::vector<std::string> common = {"--nproc",     "2",   "--dataset-size", "60",
                                           "--workers",   "2",   "--amp",          "fp16",
                                           "--clip-norm", "1.0", "--ckpt-every",   "10"};
  auto train = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"train", "--out", dir / name};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(RunDsdiag(args, dir / (name + ".log")), 0) << ReadFile(dir / (name + ".log"));
  };
  train("straight", {"--steps", "20"});
  train("first-half", {"--steps", "10"});
  train("resumed", {"--steps", "20", "--resume", dir / "first-half/checkpoints/step-00000010.pt"});
  ASSERT_FALSE(::testing::Test::HasFailure());

  std::vector<Trace> straight = ReadRun(dir / "straight", 2);
  std::vector<Trace> resumed = ReadRun(dir / "resumed", 2);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ExpectCleanEnd(resumed[r]);
    const trace::JsonValue* load = resumed[r].Last("ckpt");
    ASSERT_NE(load, nullptr);
    std::vector<const trace::JsonValue*> loads;
    for (const trace::JsonValue* c : resumed[r].Of("ckpt"))
      if (Str(*c, "op") == "load") loads.push_back(c);
    ASSERT_EQ(loads.size(), 1u);
    EXPECT_EQ(Int(*loads[0], "ckpt_step"), 10);
    // Steps 10..19 of both runs: same losses to the last bit.
    std::vector<const trace::JsonValue*> a = straight[r].Of("step"), b = resumed[r].Of("step");
    ASSERT_EQ(a.size(), 20u);
    ASSERT_EQ(b.size(), 10u);
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(Int(*b[i], "step"), Int(*a[i + 10], "step"));
      EXPECT_EQ(Field(*b[i], "loss").ToJson(), Field(*a[i + 10], "loss").ToJson())
          << "step " << i + 10;
    }
    EXPECT_EQ(Fingerprints(resumed[r], "param", "final"),
              Fingerprints(straight[r], "param", "final"));
  }
  // The saved step-20 checkpoints hold the same parameters.
  auto saved_hash = [](const Trace& t, int64_t step) {
    for (const trace::JsonValue* c : t.Of("ckpt"))
      if (Str(*c, "op") == "save" && Int(*c, "ckpt_step") == step) return Str(*c, "h");
    return std::string("none");
  };
  EXPECT_NE(saved_hash(straight[0], 20), "none");
  EXPECT_EQ(saved_hash(resumed[0], 20), saved_hash(straight[0], 20));
  // Only rank 0 writes checkpoints.
  EXPECT_EQ(saved_hash(straight[1], 20), "none");
}

// Waits until every rank's trace holds `steps` step records.
bool WaitForSteps(const std::string& run_dir, int world_size, size_t steps, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (int r = 0; r < world_size && all; ++r) {
      const std::string text = ReadFile(run_dir + "/rank-0000" + std::to_string(r) + ".jsonl");
      size_t count = 0;
      for (size_t pos = 0; (pos = text.find("\"type\":\"step\"", pos)) != std::string::npos; ++pos)
        ++count;
      all = count >= steps;
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(TrainRun, SigtermEndsEveryTraceWithSignal) {
  TempDir dir("sigterm");
  const std::string out = dir / "run";
  const pid_t launcher =
      StartDsdiag({"train", "--nproc", "2", "--steps", "100000", "--out", out}, dir / "log");
  ASSERT_TRUE(WaitForSteps(out, 2, 3, 120)) << ReadFile(dir / "log");
  kill(launcher, SIGTERM);
  EXPECT_EQ(WaitDsdiag(launcher, 60), 128 + SIGTERM) << ReadFile(dir / "log");
  for (const Trace& t : ReadRun(out, 2)) {
    const trace::JsonValue& last = t.records.back();
    EXPECT_EQ(Str(last, "type"), "end") << last.ToJson();
    EXPECT_EQ(Str(last, "reason"), "signal");
    EXPECT_EQ(Str(last, "signal"), "SIGTERM");
    EXPECT_EQ(Int(last, "status"), 128 + SIGTERM);
    EXPECT_NE(t.Last("signal"), nullptr);
  }
}

TEST(TrainRun, CrashedRankFailsTheJobAndLeavesNoProcess) {
  TempDir dir("crash");
  const std::string out = dir / "run";
  const int status = RunDsdiag(
      {"train", "--nproc", "2", "--steps", "20", "--inject", "crash:rank=1,step=3", "--out", out},
      dir / "log", 60);
  EXPECT_NE(status, 0);
  EXPECT_NE(status, -1);
  std::vector<Trace> traces = ReadRun(out, 2);
  EXPECT_EQ(traces[1].Last("end"), nullptr) << "a SIGKILLed rank writes no end record";
  EXPECT_EQ(traces[1].Of("step").size(), 3u);
  const trace::JsonValue* end0 = traces[0].Last("end");
  ASSERT_NE(end0, nullptr);
  EXPECT_NE(Str(*end0, "reason"), "ok");
  for (const Trace& t : traces) {
    const pid_t pid = static_cast<pid_t>(Int(t.header(), "pid"));
    errno = 0;
    EXPECT_EQ(kill(pid, 0), -1) << "rank process " << pid << " is still there";
    EXPECT_EQ(errno, ESRCH);
  }
}

}  // namespace
}  // namespace dsdiag::trainer_test
