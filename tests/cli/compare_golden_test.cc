// Golden "diff tests": each fixtures/runs/<name>/ run dir is paired with the exact
// `dsdiag compare --format json` output expected of it (expected.json beside the traces) and
// the exit status (expected-exit). The runs are found by listing fixtures/runs/: a folder
// with an expected.json is a golden run, and one is added by adding its folder (and its row
// in fixtures/runs/README.md). After an intended change, regenerate with
// DSDIAG_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "tests/cli/compare_test_util.h"

namespace dsdiag::cli {
namespace {

using testing::ReadFile;
using testing::RunDsdiag;

namespace fs = std::filesystem;

const fs::path kRuns = fs::path(DSDIAG_SOURCE_DIR) / "fixtures" / "runs";

struct Golden {
  std::string name;
  int exit_status = -1;  // expected-exit; -1 when the file is missing or unreadable
};

void PrintTo(const Golden& g, std::ostream* os) { *os << g.name; }

// Every folder of fixtures/runs/ with an expected.json, by name.
std::vector<Golden> DiscoverGoldens() {
  std::vector<Golden> goldens;
  for (const fs::directory_entry& e : fs::directory_iterator(kRuns)) {
    if (!e.is_directory() || !fs::exists(e.path() / "expected.json")) continue;
    Golden g;
    g.name = e.path().filename().string();
    std::ifstream(e.path() / "expected-exit") >> g.exit_status;
    goldens.push_back(g);
  }
  std::sort(goldens.begin(), goldens.end(),
            [](const Golden& a, const Golden& b) { return a.name < b.name; });
  return goldens;
}

class CompareGoldenTest : public ::testing::TestWithParam<Golden> {};

TEST_P(CompareGoldenTest, JsonMatchesExpected) {
  const Golden& g = GetParam();
  const std::string dir = "fixtures/runs/" + g.name;
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

INSTANTIATE_TEST_SUITE_P(Runs, CompareGoldenTest, ::testing::ValuesIn(DiscoverGoldens()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The list is the folders: each has its exit status, and fixtures/runs/README.md says what
// each holds (a row naming the folder), and names no folder that is gone.
TEST(CompareGoldenTest, EveryGoldenRunHasItsExitStatusAndItsRowInTheReadme) {
  const std::vector<Golden> goldens = DiscoverGoldens();
  ASSERT_GE(goldens.size(), 20u);
  const std::string readme = ReadFile((kRuns / "README.md").string());
  for (const Golden& g : goldens) {
    EXPECT_TRUE(g.exit_status == 0 || g.exit_status == 1)
        << g.name << ": expected-exit missing or not 0/1";
    EXPECT_NE(readme.find("| `" + g.name + "` |"), std::string::npos)
        << g.name << " has no row in fixtures/runs/README.md";
  }
  for (size_t at = readme.find("\n| `"); at != std::string::npos;
       at = readme.find("\n| `", at + 1)) {
    const size_t start = at + 4, end = readme.find('`', start);
    const std::string named = readme.substr(start, end - start);
    EXPECT_TRUE(std::any_of(goldens.begin(), goldens.end(),
                            [&](const Golden& g) { return g.name == named; }))
        << "fixtures/runs/README.md names " << named << ", which is no golden run";
  }
}

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
