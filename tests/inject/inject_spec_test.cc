// --inject parsing: every kind of docs/contract.md parses, and every bad spec is refused with a
// message that quotes it and says what was expected.
#include "inject/inject_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace dsdiag::inject {
namespace {

// The message of the InjectSpecError that parsing `text` throws ("" when it parses).
std::string ErrorOf(const std::string& text, int world_size = 4) {
  try {
    ParseInjectSpec(text, world_size);
  } catch (const InjectSpecError& e) {
    return e.what();
  }
  return "";
}

void ExpectError(const std::string& text, const std::string& part, int world_size = 4) {
  const std::string message = ErrorOf(text, world_size);
  ASSERT_FALSE(message.empty()) << "'" << text << "' parsed but should not";
  EXPECT_EQ(message.rfind("--inject " + text + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(part), std::string::npos) << "message: " << message;
}

struct Case {
  const char* text;
  Kind kind;
  std::optional<int> rank;
  std::optional<int64_t> step;
  std::optional<int64_t> ms;
};

TEST(InjectSpecTest, EveryKindParses) {
  const Case cases[] = {
      {"unused-param:rank=1", Kind::kUnusedParam, 1, {}, {}},
      {"grad-desync:rank=2,step=5", Kind::kGradDesync, 2, 5, {}},
      {"no-broadcast", Kind::kNoBroadcast, {}, {}, {}},
      {"rng-collision", Kind::kRngCollision, {}, {}, {}},
      {"sampler-seed:rank=3", Kind::kSamplerSeed, 3, {}, {}},
      {"no-set-epoch", Kind::kNoSetEpoch, {}, {}, {}},
      {"slow-loader:rank=0,ms=40", Kind::kSlowLoader, 0, {}, 40},
      {"overflow:step=7", Kind::kOverflow, {}, 7, {}},
      {"overflow:step=7,rank=1", Kind::kOverflow, 1, 7, {}},
      {"scaler-desync:rank=1", Kind::kScalerDesync, 1, {}, {}},
      {"clip-before-unscale", Kind::kClipBeforeUnscale, {}, {}, {}},
      {"ckpt-all-ranks", Kind::kCkptAllRanks, {}, {}, {}},
      {"ckpt-stale:rank=2", Kind::kCkptStale, 2, {}, {}},
      {"straggler:rank=1,ms=50", Kind::kStraggler, 1, {}, 50},
      {"clock-skew:rank=3,ms=25", Kind::kClockSkew, 3, {}, 25},
      {"config-mismatch:rank=1", Kind::kConfigMismatch, 1, {}, {}},
      {"collective-mismatch:rank=1,step=3", Kind::kCollectiveMismatch, 1, 3, {}},
      {"hang:rank=2,step=0", Kind::kHang, 2, 0, {}},
      {"crash:rank=1,step=4", Kind::kCrash, 1, 4, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const InjectSpec spec = ParseInjectSpec(c.text, 4);
    EXPECT_EQ(spec.kind, c.kind);
    EXPECT_EQ(spec.rank, c.rank);
    EXPECT_EQ(spec.step, c.step);
    EXPECT_EQ(spec.ms, c.ms);
    EXPECT_EQ(spec.text, c.text);
    const std::string text = c.text;
    EXPECT_EQ(KindName(spec.kind), text.substr(0, text.find(':')));
  }
}

TEST(InjectSpecTest, KeysInAnyOrder) {
  const InjectSpec spec = ParseInjectSpec("straggler:ms=5,rank=0", 2);
  EXPECT_EQ(spec.rank, 0);
  EXPECT_EQ(spec.ms, 5);
}

TEST(InjectSpecTest, NegativeWorldSizeSkipsRankCheck) {
  EXPECT_EQ(ParseInjectSpec("unused-param:rank=900", -1).rank, 900);
  ExpectError("unused-param:rank=900", "out of range", 4);
}

TEST(InjectSpecTest, UnknownKindListsKindsAndSuggests) {
  ExpectError("stragler:rank=1,ms=5", "unknown kind 'stragler'");
  ExpectError("stragler:rank=1,ms=5", "did you mean 'straggler'?");
  ExpectError("grad_desync:rank=1,step=2", "did you mean 'grad-desync'?");
  ExpectError("explode", "known kinds: unused-param, grad-desync");
  EXPECT_EQ(ErrorOf("explode").find("did you mean"), std::string::npos);
  ExpectError(":rank=1", "missing kind");
}

TEST(InjectSpecTest, EmptySpec) { ExpectError("", "empty spec; expected KIND[:key=value,...]"); }

TEST(InjectSpecTest, UnknownKeyListsKeys) {
  ExpectError("hang:rank=1,stp=3", "unknown key 'stp' for hang (did you mean 'step'?)");
  ExpectError("hang:rank=1,stp=3", "hang takes: rank, step (hang:rank=R,step=S)");
  ExpectError("overflow:step=1,ms=2", "overflow takes: step, rank (optional)");
  ExpectError("no-broadcast:rank=1", "no-broadcast takes no keys");
}

TEST(InjectSpecTest, MissingKey) {
  ExpectError("hang:rank=1", "missing key 'step'; expected hang:rank=R,step=S");
  ExpectError("straggler", "missing key 'rank'; expected straggler:rank=R,ms=MS");
  ExpectError("overflow:rank=1", "missing key 'step'; expected overflow:step=S[,rank=R]");
}

TEST(InjectSpecTest, DuplicateKey) {
  ExpectError("crash:rank=1,rank=2,step=3", "key 'rank' given twice");
}

TEST(InjectSpecTest, BadValues) {
  ExpectError("crash:rank=one,step=3", "'rank' must be a non-negative integer, got 'one'");
  ExpectError("crash:rank=-1,step=3", "'rank' must be a non-negative integer, got '-1'");
  ExpectError("crash:rank=1,step=", "empty value for 'step'; expected step=<integer>");
  ExpectError("crash:rank=1,step=99999999999999999999",
              "'step' value '99999999999999999999' "
              "is too large");
  ExpectError("crash:rank=1,step=+3", "'step' must be a non-negative integer, got '+3'");
}

TEST(InjectSpecTest, RankOutOfRange) {
  ExpectError("straggler:rank=9,ms=50", "rank 9 is out of range for 4 ranks (0..3)");
  ExpectError("straggler:rank=1,ms=50", "rank 1 is out of range for 1 rank (0..0)", 1);
  EXPECT_EQ(ErrorOf("straggler:rank=3,ms=50", 4), "");
}

TEST(InjectSpecTest, MsMustBePositive) {
  ExpectError("slow-loader:rank=0,ms=0", "ms must be > 0, got 0");
}

TEST(InjectSpecTest, TrailingGarbage) {
  ExpectError("hang:rank=1,step=2,", "trailing ',' with nothing after it");
  ExpectError("hang:rank=1x,step=2", "trailing characters 'x' after rank=1");
  ExpectError("hang:rank=1,step=2 ", "trailing characters ' ' after step=2");
  ExpectError("hang:,rank=1,step=2", "stray ','");
  ExpectError("hang:rank=1,,step=2", "stray ','");
  ExpectError("hang:rank", "'rank' is not key=value; expected hang:rank=R,step=S");
  ExpectError("no-broadcast:", "nothing after ':'");
  ExpectError("hang:rank=1:step=2", "trailing characters ':step=2' after rank=1");
}

TEST(InjectSpecTest, DescribeKindsListsEveryTrainerKind) {
  const std::string text = DescribeKinds();
  for (const char* name :
       {"unused-param:rank=R", "grad-desync:rank=R,step=S", "no-broadcast", "rng-collision",
        "sampler-seed:rank=R", "no-set-epoch", "slow-loader:rank=R,ms=MS",
        "overflow:step=S[,rank=R]", "scaler-desync:rank=R", "clip-before-unscale", "ckpt-all-ranks",
        "ckpt-stale:rank=R", "straggler:rank=R,ms=MS", "clock-skew:rank=R,ms=MS",
        "collective-mismatch:rank=R,step=S", "hang:rank=R,step=S", "crash:rank=R,step=S"}) {
    EXPECT_NE(text.find(std::string("  ") + name + " "), std::string::npos) << name;
  }
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 17);
  // synth's own kinds are not the trainer's to list.
  EXPECT_EQ(text.find("config-mismatch"), std::string::npos);
}

TEST(InjectSpecTest, OnlyHeaderFaultsAreSynthOnly) {
  EXPECT_TRUE(SynthOnly(Kind::kConfigMismatch));
  for (Kind kind : {Kind::kUnusedParam, Kind::kNoBroadcast, Kind::kStraggler, Kind::kClockSkew,
                    Kind::kCollectiveMismatch, Kind::kHang, Kind::kCrash})
    EXPECT_FALSE(SynthOnly(kind)) << KindName(kind);
  ExpectError("config-mismatch", "missing key 'rank'");
}

TEST(InjectPlanTest, ParseFindAndFindFor) {
  const InjectPlan plan = InjectPlan::Parse(
      {"straggler:rank=1,ms=50", "straggler:rank=2,ms=70", "overflow:step=3", "no-set-epoch"}, 4);
  ASSERT_EQ(plan.specs().size(), 4u);
  EXPECT_FALSE(plan.empty());

  const InjectSpec* first = plan.Find(Kind::kStraggler);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->rank, 1);
  EXPECT_EQ(plan.Find(Kind::kHang), nullptr);

  const InjectSpec* for_two = plan.FindFor(Kind::kStraggler, 2);
  ASSERT_NE(for_two, nullptr);
  EXPECT_EQ(for_two->ms, 70);
  EXPECT_EQ(plan.FindFor(Kind::kStraggler, 0), nullptr);
  // A spec without a rank key targets every rank.
  EXPECT_NE(plan.FindFor(Kind::kOverflow, 3), nullptr);
  EXPECT_NE(plan.FindFor(Kind::kNoSetEpoch, 0), nullptr);
}

TEST(InjectPlanTest, ParseReportsTheBadSpec) {
  try {
    InjectPlan::Parse({"no-broadcast", "crash:rank=7,step=1"}, 2);
    FAIL() << "expected InjectSpecError";
  } catch (const InjectSpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--inject crash:rank=7,step=1: rank 7 is out of range for 2 ranks (0..1)");
  }
  EXPECT_TRUE(InjectPlan::Parse({}, 2).empty());
}

}  // namespace
}  // namespace dsdiag::inject
