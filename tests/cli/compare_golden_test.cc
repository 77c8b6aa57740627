// Golden "diff tests": each fixtures/runs/<name>/ run dir is paired with the exact
// `dsdiag compare --format json` output expected of it (expected.json beside the traces).
// After an intended change, regenerate with DSDIAG_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <fstream>
#include <ostream>

#include "tests/cli/compare_test_util.h"

namespace dsdiag::cli {
namespace {

using testing::ReadFile;
using testing::RunDsdiag;

struct Golden {
  const char* name;
  int exit_status;
};

void PrintTo(const Golden& g, std::ostream* os) { *os << g.name; }

class CompareGoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(CompareGoldenTest, JsonMatchesExpected) {
  const Golden& g = GetParam();
  const std::string dir = std::string("fixtures/runs/") + g.name;
  const std::string expected_path = std::string(DSDIAG_SOURCE_DIR) + "/" + dir + "/expected.json";
  const auto r = RunDsdiag("compare " + dir + " --format json");
  EXPECT_EQ(r.status, g.exit_status) << r.err;
  EXPECT_EQ(r.err, "");
  if (std::getenv("DSDIAG_UPDATE_GOLDEN")) {
    std::ofstream(expected_path, std::ios::trunc) << r.out;
    GTEST_SKIP() << "rewrote " << expected_path;
  }
  const std::string expected = ReadFile(expected_path);
  ASSERT_FALSE(expected.empty()) << "missing " << expected_path;
  EXPECT_EQ(r.out, expected);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, CompareGoldenTest,
    ::testing::Values(Golden{"clean-2rank", 0}, Golden{"rank-died-2rank", 1},
                      Golden{"config-mismatch-2rank", 1}, Golden{"missing-rank-4rank", 1},
                      Golden{"malformed-2rank", 0},
                      // one per finding kind, recorded from the trainer
                      // (fixtures/runs/record-trainer-runs)
                      Golden{"missing-grad-2rank", 1}, Golden{"grad-desync-2rank", 1},
                      Golden{"init-divergence-2rank", 1}, Golden{"rng-collision-2rank", 0},
                      Golden{"shard-overlap-2rank", 1}, Golden{"epoch-order-repeat-2rank", 0},
                      Golden{"loader-starvation-2rank", 0}, Golden{"scaler-overflow-2rank", 0},
                      Golden{"scaler-desync-2rank", 1}, Golden{"clip-before-unscale-2rank", 1},
                      Golden{"checkpoint-race-2rank", 1}, Golden{"checkpoint-mismatch-2rank", 1},
                      Golden{"straggler-2rank", 1}, Golden{"collective-mismatch-2rank", 1},
                      Golden{"hang-2rank", 1}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

// docs/contract.md: a clean run produces no warning or error finding.
TEST(CompareGoldenTest, CleanRunHasNoWarningOrError) {
  const auto r =
      RunDsdiag("compare fixtures/runs/clean-2rank --format json --min-severity warning");
  EXPECT_EQ(r.status, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(doc["findings"].get_array().value().size(), 0u) << r.out;
  EXPECT_EQ(int64_t(doc["counts"]["warning"].get_int64().value()), 0);
  EXPECT_EQ(int64_t(doc["counts"]["error"].get_int64().value()), 0);
}

}  // namespace
}  // namespace dsdiag::cli
