// GradientProbe on real tensors: which records a training step leaves, and that the
// fingerprints are the hashes of the tensors' bytes.
#include "probes/torch/gradient_probe.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "probes/fingerprint.h"
#include "probes/records/process_groups.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

namespace fs = std::filesystem;

class GradientProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("dsdiag-gradprobe-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    params_ = {torch::ones({4}, torch::requires_grad()),
               torch::ones({2, 3}, torch::requires_grad()),
               torch::ones({3}, torch::requires_grad())};
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Session> Start(Mode mode) {
    SessionConfig c;
    c.mode = mode;
    c.run_dir = dir_;
    c.header.run_id = "grad-probe";
    std::string error;
    auto s = Session::Start(c, &error);
    EXPECT_TRUE(s) << error;
    return s;
  }

  // Gradients for params 0 and 1 only: param 2 takes no part in the loss.
  void Backward(double scale) {
    for (auto& p : params_) p.mutable_grad() = torch::Tensor();
    auto loss = (params_[0] * scale).sum() + params_[1].sum();
    loss.backward();
  }

  std::vector<std::string> Lines(const char* type) {
    std::string error;
    auto reader = trace::TraceReader::Open(dir_ + "/rank-00000.jsonl", &error);
    EXPECT_TRUE(reader) << error;
    std::vector<std::string> lines;
    trace::Record r;
    while (reader->Next(&r))
      if (r.type() == type) lines.emplace_back(r.raw_line());
    EXPECT_EQ(reader->issue_count(), 0);
    return lines;
  }

  std::string dir_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_ = {"a.weight", "b.weight", "unused.weight"};
};

TEST_F(GradientProbeTest, MissingListIsWrittenOncePerChange) {
  auto s = Start(Mode::kLight);
  GradientProbe probe(s.get(), names_, params_, {{2, 1}, {0}});
  for (int step = 0; step < 3; ++step) {
    s->BeginStep(step, 0);
    Backward(1.0);
    probe.AfterBackward();
    EXPECT_EQ(probe.missing(), std::vector<int>{2});
  }
  s->End("ok", 0);
  auto grads = Lines("grad");
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_NE(grads[0].find("\"missing\":[2]"), std::string::npos) << grads[0];
  EXPECT_EQ(grads[1].find("\"missing\""), std::string::npos) << grads[1];
  EXPECT_NE(grads[1].find("\"n_missing\":1"), std::string::npos) << grads[1];
  // norm = sqrt(4 * 1 + 6 * 1)
  EXPECT_NE(grads[0].find("\"norm\":3.16227"), std::string::npos) << grads[0];

  auto params = Lines("params");
  ASSERT_EQ(params.size(), 1u);
  EXPECT_NE(params[0].find("\"names\":[\"a.weight\",\"b.weight\",\"unused.weight\"]"),
            std::string::npos);
  EXPECT_NE(params[0].find("\"shapes\":[[4],[2,3],[3]]"), std::string::npos) << params[0];
  EXPECT_NE(params[0].find("\"buckets\":[[2,1],[0]]"), std::string::npos) << params[0];
}

// A loop that reduces its gradients over a data-parallel sub-group declares the group and
// its replica set: the `group` record and the `params` record's `replicas`, which the
// analyzers compare within.
TEST_F(GradientProbeTest, ADataParallelSubGroupIsDeclaredWithItsReplicaSet) {
  auto s = Start(Mode::kLight);
  const probes::records::ProcessGroupInfo dp{"2", "dp", "gloo", {3, 1}, 0};
  EXPECT_EQ(probes::records::WriteGroup(s.get(), dp), 2);
  GradientProbeOptions options;
  options.replicas = dp.ranks;
  GradientProbe probe(s.get(), names_, params_, {}, options);
  s->End("ok", 0);
  auto groups = Lines("group");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_NE(groups[0].find(R"("pg":2,"name":"2","desc":"dp","backend":"gloo","ranks":[3,1])"),
            std::string::npos)
      << groups[0];
  auto params = Lines("params");
  ASSERT_EQ(params.size(), 1u);
  EXPECT_NE(params[0].find(R"("replicas":[1,3])"), std::string::npos) << params[0];
}

// "No gradient" is "took no part in this backward", however zero_grad() leaves .grad: set
// to None, zeroed and kept, or left from the step before (no zero_grad at all).
TEST_F(GradientProbeTest, AParameterOutOfTheBackwardIsMissingWhateverItsGradHolds) {
  enum class ZeroGrad { kSetToNone, kZeroAndKeep, kNone };
  for (ZeroGrad zero : {ZeroGrad::kSetToNone, ZeroGrad::kZeroAndKeep, ZeroGrad::kNone}) {
    SCOPED_TRACE(static_cast<int>(zero));
    fs::remove_all(dir_);
    auto s = Start(Mode::kLight);
    GradientProbe probe(s.get(), names_, params_, {});
    for (int step = 0; step < 4; ++step) {
      s->BeginStep(step, 0);
      for (auto& p : params_) {
        if (!p.grad().defined()) continue;
        if (zero == ZeroGrad::kSetToNone) p.mutable_grad() = torch::Tensor();
        if (zero == ZeroGrad::kZeroAndKeep) p.mutable_grad().zero_();
      }
      // Step 0 uses every parameter (so that each has a .grad from then on); later steps
      // skip param 2, as a rank-conditional branch would.
      auto loss = params_[0].sum() + params_[1].sum();
      if (step == 0) loss = loss + params_[2].sum();
      loss.backward();
      probe.AfterBackward();
      EXPECT_EQ(probe.missing(), step == 0 ? std::vector<int>{} : std::vector<int>{2})
          << "step " << step;
    }
    s->End("ok", 0);
  }
}

TEST_F(GradientProbeTest, NonFiniteGradientsAreNamed) {
  auto s = Start(Mode::kLight);
  GradientProbe probe(s.get(), names_, params_, {});
  Backward(std::numeric_limits<double>::infinity());
  probe.AfterBackward();
  s->End("ok", 0);
  auto grads = Lines("grad");
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_NE(grads[0].find("\"norm\":null"), std::string::npos) << grads[0];
  EXPECT_NE(grads[0].find("\"nonfinite\":[0]"), std::string::npos) << grads[0];
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

TEST_F(GradientProbeTest, BucketFingerprintsHashTheBucketsBytesInOrder) {
  auto s = Start(Mode::kLight);
  GradientProbe probe(s.get(), names_, params_, {{1, 0}, {2}});
  Backward(2.0);
  probe.AfterSync();
  probe.FingerprintParams("init");
  s->End("ok", 0);

  Fingerprinter fp;
  for (int i : {1, 0}) {
    const auto& g = params_[i].grad();
    fp.Add(g.data_ptr(), g.nbytes());
  }
  const uint64_t bucket0 = fp.Digest();
  fp.Reset();
  const uint64_t empty = fp.Digest();  // param 2 has no gradient
  auto fps = Lines("fp");
  ASSERT_EQ(fps.size(), 2u);
  EXPECT_NE(fps[0].find("\"what\":\"grad\",\"why\":\"after-sync\",\"gran\":\"bucket\""),
            std::string::npos)
      << fps[0];
  EXPECT_NE(fps[0].find("\"h\":[\"" + Hex(bucket0) + "\",\"" + Hex(empty) + "\"]"),
            std::string::npos)
      << fps[0];
  EXPECT_NE(fps[1].find("\"what\":\"param\",\"why\":\"init\""), std::string::npos) << fps[1];
}

TEST_F(GradientProbeTest, FullModeHashesEveryParameterEveryStep) {
  auto s = Start(Mode::kFull);
  GradientProbe probe(s.get(), names_, params_, {}, {.param_fp_every = 100});
  Backward(1.0);
  probe.AfterSync();
  probe.AfterOptimizerStep(3);  // full: due every step despite param_fp_every
  s->End("ok", 0);
  auto fps = Lines("fp");
  ASSERT_EQ(fps.size(), 2u);
  const auto& g0 = params_[0].grad();
  EXPECT_NE(fps[0].find("\"gran\":\"param\",\"h\":[\"" +
                        Hex(FingerprintBytes(g0.data_ptr(), g0.nbytes())) + "\""),
            std::string::npos)
      << fps[0];
  EXPECT_NE(fps[0].find(",\"0000000000000000\"]"), std::string::npos) << fps[0];
  const auto p2 = params_[2].detach();
  EXPECT_NE(fps[1].find(Hex(FingerprintBytes(p2.data_ptr(), p2.nbytes())) + "\"]"),
            std::string::npos)
      << fps[1];
}

TEST_F(GradientProbeTest, LightModeFingerprintsParametersEveryNSteps) {
  auto s = Start(Mode::kLight);
  GradientProbe probe(s.get(), names_, params_, {}, {.param_fp_every = 5});
  for (int step = 0; step < 11; ++step) probe.AfterOptimizerStep(step);
  s->End("ok", 0);
  EXPECT_EQ(Lines("fp").size(), 3u);  // steps 0, 5, 10
}

// Before the optimizer uses them, gradients are fingerprinted again ("pre-step"), and so are
// the parameters when the last optimizer step fingerprinted them: a rank's own edits in
// between show as a change on that rank alone.
TEST_F(GradientProbeTest, BeforeOptimizerStepFingerprintsGradientsAndParametersAgain) {
  auto s = Start(Mode::kLight);
  GradientProbe probe(s.get(), names_, params_, {}, {.param_fp_every = 2});
  for (int step = 0; step < 3; ++step) {
    s->BeginStep(step, 0);
    Backward(1.0);
    probe.AfterSync();
    probe.BeforeOptimizerStep();
    probe.AfterOptimizerStep(step);  // params fingerprinted at steps 0 and 2
  }
  s->End("ok", 0);
  std::vector<std::string> whys;
  for (const std::string& line : Lines("fp")) {
    const size_t at = line.find("\"what\":");
    whys.push_back(line.substr(at, line.find(",\"gran\"") - at));
  }
  // Each pre-step record repeats the one before it, so light mode (trace v2) leaves it out
  // and owes it (probes/records/fingerprint_repeats.h); with no step record to say so, it is
  // written short when the next step begins, and the reader puts it back there: after the
  // step's periodic parameter record rather than before it.
  EXPECT_EQ(
      whys,
      (std::vector<std::string>{
          "\"what\":\"grad\",\"why\":\"after-sync\"", "\"what\":\"param\",\"why\":\"periodic\"",
          "\"what\":\"grad\",\"why\":\"pre-step\"", "\"what\":\"grad\",\"why\":\"after-sync\"",
          "\"what\":\"grad\",\"why\":\"pre-step\"", "\"what\":\"param\",\"why\":\"pre-step\"",
          "\"what\":\"grad\",\"why\":\"after-sync\"", "\"what\":\"param\",\"why\":\"periodic\"",
          "\"what\":\"grad\",\"why\":\"pre-step\""}));
}

TEST_F(GradientProbeTest, OffRecordsNothing) {
  auto s = Start(Mode::kOff);
  GradientProbe probe(s.get(), names_, params_, {});
  Backward(1.0);
  probe.AfterBackward();
  probe.AfterSync();
  probe.AfterOptimizerStep(0);
  EXPECT_FALSE(fs::exists(dir_));
}

}  // namespace
}  // namespace dsdiag::probes
