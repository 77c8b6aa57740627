// The trainer's parts on their own, in-process: the distributed sampler's semantics, the
// loss scaler's schedule, the corpus, the model's parameter names, checkpoint files and
// the fault plan as one rank sees it, and the rank's signal set-up.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>

#include "inject/inject_spec.h"
#include "trainer/torch/checkpoint.h"
#include "trainer/torch/distributed_sampler.h"
#include "trainer/torch/faults.h"
#include "trainer/torch/grad_sync.h"
#include "trainer/torch/mixed_precision.h"
#include "trainer/torch/moe_model.h"
#include "trainer/torch/run_control.h"
#include "trainer/torch/synthetic_corpus.h"
#include "trainer/train_config.h"

namespace dsdiag::trainer {
namespace {

using Sampler = DistributedShuffleSampler;

TEST(DistributedShuffleSampler, ShardsAreDisjointAndCoverTheDataset) {
  std::set<size_t> seen;
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<size_t> order = Sampler::RankOrder(64, 4, rank, 7, 0);
    EXPECT_EQ(order.size(), 16u);
    for (size_t i : order) EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice";
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST(DistributedShuffleSampler, PadsByWrappingAround) {
  // 10 samples on 4 ranks: 3 each, 2 samples visited twice.
  std::multiset<size_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<size_t> order = Sampler::RankOrder(10, 4, rank, 7, 0);
    EXPECT_EQ(order.size(), 3u);
    all.insert(order.begin(), order.end());
  }
  EXPECT_EQ(all.size(), 12u);
  EXPECT_EQ(std::set<size_t>(all.begin(), all.end()).size(), 10u);
}

TEST(DistributedShuffleSampler, EpochAndSeedChangeTheOrder) {
  EXPECT_EQ(Sampler::RankOrder(100, 2, 0, 7, 3), Sampler::RankOrder(100, 2, 0, 7, 3));
  EXPECT_NE(Sampler::RankOrder(100, 2, 0, 7, 3), Sampler::RankOrder(100, 2, 0, 7, 4));
  EXPECT_NE(Sampler::RankOrder(100, 2, 0, 7, 3), Sampler::RankOrder(100, 2, 0, 8, 3));
}

TEST(DistributedShuffleSampler, FollowsThePositionAndSkipsWhenResuming) {
  auto position = std::make_shared<SamplerPosition>();
  Sampler sampler(20, 2, 1, 7, position);
  position->epoch = 2;
  position->skip = 4;
  sampler.reset();
  const std::vector<size_t> order = Sampler::RankOrder(20, 2, 1, 7, 2);
  torch::optional<std::vector<size_t>> batch = sampler.next(4);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(*batch, std::vector<size_t>(order.begin() + 4, order.begin() + 8));
  EXPECT_EQ(sampler.next(4)->size(), 2u);
  EXPECT_FALSE(sampler.next(4).has_value());
  EXPECT_EQ(position->skip, 0) << "a skip applies to one reset only";
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterCleanSteps) {
  LossScaler scaler(true);
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_STREQ(scaler.Update(true), "backoff");
  EXPECT_EQ(scaler.scale(), 32768.0);
  for (int64_t i = 0; i + 1 < LossScaler::kGrowthInterval; ++i)
    EXPECT_EQ(scaler.Update(false), nullptr);
  EXPECT_STREQ(scaler.Update(false), "growth");
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(LossScaler, Fp16OverflowRule) {
  EXPECT_FALSE(LossScaler::Overflowed(65504.0));
  EXPECT_TRUE(LossScaler::Overflowed(65504.5));
  EXPECT_TRUE(LossScaler::Overflowed(std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(LossScaler::Overflowed(std::nan("")));
  LossScaler off(false);
  EXPECT_EQ(off.scale(), 1.0);
  EXPECT_EQ(off.Update(true), nullptr);
}

TEST(SyntheticCorpus, SamplesAreDeterministicNextTokenPairs) {
  CorpusOptions options;
  options.vocab = 16;
  options.seq_len = 8;
  options.size = 100;
  SyntheticCorpus a(options), b(options);
  auto x = a.get(42), y = b.get(42);
  EXPECT_TRUE(torch::equal(x.data, y.data));
  EXPECT_TRUE(torch::equal(x.target, y.target));
  EXPECT_TRUE(torch::equal(x.data.narrow(0, 1, 7), x.target.narrow(0, 0, 7)));
  EXPECT_FALSE(torch::equal(a.get(41).data, x.data));
  EXPECT_LT(x.data.max().item<int64_t>(), 16);
}

TEST(MoeDecoder, ParameterNamesAreStable) {
  TrainConfig config;
  MoeDecoder model(ModelOptionsFrom(config));
  ModelParams params = CollectParams(*model);
  std::set<std::string> names(params.names.begin(), params.names.end());
  for (const char* expected : {"embed.weight", "pos.weight", "blocks.0.attn.qkv.weight",
                               "blocks.1.moe.router.weight", "blocks.1.moe.experts.2.w_in.weight",
                               "blocks.1.moe.shared.w_out.bias", "ln_f.weight", "head.weight"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }
  // Buckets cover every parameter once, in reverse registration order.
  GradSync sync(params);
  std::vector<int> flat;
  for (const auto& bucket : sync.buckets()) flat.insert(flat.end(), bucket.begin(), bucket.end());
  ASSERT_EQ(flat.size(), params.size());
  EXPECT_EQ(flat.front(), static_cast<int>(params.size()) - 1);
  EXPECT_TRUE(std::is_sorted(flat.rbegin(), flat.rend()));
  EXPECT_GT(sync.buckets().size(), 1u);
}

TEST(MoeDecoder, SkippingTheSharedExpertLeavesItWithoutGradient) {
  TrainConfig config;
  torch::manual_seed(1);
  MoeDecoder model(ModelOptionsFrom(config));
  ForwardContext context;
  context.skip_shared_expert = true;
  torch::Tensor tokens = torch::randint(0, config.vocab, {2, config.seq_len}, torch::kLong);
  ModelOutput out = model->forward(tokens, context);
  (out.logits.sum() + out.aux_loss).backward();
  for (const auto& p : model->named_parameters()) {
    const bool shared = p.key().find(".moe.shared.") != std::string::npos;
    EXPECT_EQ(p.value().grad().defined(), !shared) << p.key();
  }
}

TEST(Checkpoint, OlderCheckpointPicksThePreviousStepFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dsdiag-ckpt-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "checkpoints");
  for (int64_t step : {2, 4, 6}) std::ofstream(CheckpointPath(dir.string(), step)) << "x";
  EXPECT_EQ(CheckpointPath(dir.string(), 6), (dir / "checkpoints/step-00000006.pt").string());
  EXPECT_EQ(OlderCheckpoint(CheckpointPath(dir.string(), 6)), CheckpointPath(dir.string(), 4));
  EXPECT_EQ(OlderCheckpoint(CheckpointPath(dir.string(), 2)), "");
  EXPECT_EQ(OlderCheckpoint((dir / "other.pt").string()), "");
  std::filesystem::remove_all(dir);
}

TEST(Faults, AnswerForTheirRankAndStep) {
  inject::InjectPlan plan = inject::InjectPlan::Parse(
      {"crash:rank=1,step=3", "straggler:rank=0,ms=40", "overflow:step=2", "no-set-epoch"}, 2);
  Faults rank0(plan, 0), rank1(plan, 1);
  EXPECT_FALSE(rank0.crash_at(3));
  EXPECT_TRUE(rank1.crash_at(3));
  EXPECT_FALSE(rank1.crash_at(2));
  EXPECT_EQ(rank0.straggler_ms(), 40);
  EXPECT_EQ(rank1.straggler_ms(), 0);
  EXPECT_TRUE(rank0.overflow_at(2) && rank1.overflow_at(2));
  EXPECT_TRUE(rank0.no_set_epoch() && rank1.no_set_epoch());
  EXPECT_FALSE(rank0.skip_shared_expert());
  EXPECT_TRUE(Faults().empty());
}

// What Gloo does when a peer has died: writev(2) to its socket. Under a RunControl that
// must fail with EPIPE (Gloo then throws) instead of killing the rank with SIGPIPE; the
// previous disposition comes back with the RunControl's end.
TEST(RunControl, AWriteToADeadPeerFailsInsteadOfKillingTheRank) {
  struct sigaction before = {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &before), 0);
  ASSERT_EQ(before.sa_handler, SIG_DFL) << "the test runner already ignores SIGPIPE";
  {
    RunControl control;
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    close(fds[1]);  // the peer is gone
    char byte = 'x';
    iovec iov{&byte, 1};
    errno = 0;
    EXPECT_EQ(writev(fds[0], &iov, 1), -1);  // reached only if SIGPIPE did not kill us
    EXPECT_EQ(errno, EPIPE);
    close(fds[0]);
  }
  struct sigaction after = {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace dsdiag::trainer
