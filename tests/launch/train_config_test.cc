// TrainConfig::ToJson: the flat `config` object of the trace header.
#include "trainer/train_config.h"

#include <gtest/gtest.h>

namespace dsdiag::trainer {
namespace {

TEST(TrainConfigTest, ToJsonIsFlatAndComplete) {
  TrainConfig config;
  config.nproc = 4;
  config.steps = 50;
  config.inject = inject::InjectPlan::Parse({"straggler:rank=1,ms=50", "no-set-epoch"}, 2);
  const trace::JsonValue json = config.ToJson();
  ASSERT_TRUE(json.is_object());
  for (const auto& [key, value] : json.members()) {
    EXPECT_FALSE(value.is_object() || value.is_array()) << key << " is not a scalar";
  }
  EXPECT_EQ(json.Find("nproc"), nullptr);  // a launcher setting, 0 in every rank
  ASSERT_NE(json.Find("steps"), nullptr);
  EXPECT_EQ(json.Find("steps")->as_int(), 50);
  EXPECT_EQ(json.Find("amp")->as_string(), "off");
  EXPECT_EQ(json.Find("inject")->as_string(), "straggler:rank=1,ms=50 no-set-epoch");
  EXPECT_EQ(json.Find("lr")->as_double(), 3e-3);
  for (const char* key :
       {"epochs", "batch_size", "workers",   "seed",        "clip_norm", "ckpt_every",
        "resume", "out",        "timeout_s", "device",      "probes",    "dataset_size",
        "vocab",  "seq_len",    "d_model",   "n_layers",    "n_heads",   "n_experts",
        "top_k",  "d_ff",       "dropout",   "health_every"}) {
    EXPECT_NE(json.Find(key), nullptr) << key;
  }
}

TEST(TrainConfigTest, BackendIsWrittenResolved) {
  TrainConfig config;
  EXPECT_EQ(config.ToJson().Find("backend")->as_string(), "gloo");
  config.device = "cuda";
  EXPECT_EQ(config.ToJson().Find("backend")->as_string(), "nccl");
  config.backend = "gloo";
  EXPECT_EQ(config.ToJson().Find("backend")->as_string(), "gloo");
}

}  // namespace
}  // namespace dsdiag::trainer
