// `dsdiag compare` end to end: exit statuses, bad usage, unreadable run dirs, and the
// trace reader's bad-input fixtures (fixtures/bad/, see its README) becoming findings.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <ostream>

#include "tests/cli/compare_test_util.h"

namespace dsdiag::cli {
namespace {

namespace fs = std::filesystem;
using testing::RunDsdiag;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A scratch dir that removes itself.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "dsdiag-compare-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(CompareCliTest, HelpExitsZero) {
  const auto r = RunDsdiag("compare --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "usage: dsdiag compare RUN_DIR")) << r.out;
  EXPECT_TRUE(Contains(r.out, "--min-severity")) << r.out;
}

TEST(CompareCliTest, BadUsageExitsTwoNamingTheProblem) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"compare", "missing RUN_DIR"},
           Case{"compare fixtures/runs/clean-2rank --bogus", "bogus"},
           Case{"compare fixtures/runs/clean-2rank --format xml", "--format must be text or json"},
           Case{"compare fixtures/runs/clean-2rank --min-severity fatal", "fatal"},
           Case{"compare fixtures/runs/clean-2rank fixtures/runs/clean-2rank", "too many"},
       }) {
    const auto r = RunDsdiag(c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_TRUE(Contains(r.err, c.message)) << c.args << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST(CompareCliTest, NonexistentDirExitsTwoNamingIt) {
  const auto r = RunDsdiag("compare fixtures/runs/no-such-run");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "fixtures/runs/no-such-run")) << r.err;
}

TEST(CompareCliTest, DirWithoutTracesExitsTwo) {
  TempDir dir;
  std::ofstream(dir.path() + "/notes.txt") << "hello\n";
  const auto r = RunDsdiag("compare '" + dir.path() + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "no rank traces")) << r.err;
  EXPECT_TRUE(Contains(r.err, dir.path())) << r.err;
}

TEST(CompareCliTest, DuplicateRankExitsTwoNamingBothFiles) {
  TempDir dir;
  const std::string src = std::string(DSDIAG_SOURCE_DIR) + "/fixtures/runs/clean-2rank/";
  fs::copy_file(src + "rank-00000.jsonl", dir.path() + "/rank-00000.jsonl");
  fs::copy_file(src + "rank-00001.jsonl", dir.path() + "/rank-00001.jsonl");
  fs::copy_file(src + "rank-00001.jsonl", dir.path() + "/rank-000001.jsonl");
  const auto r = RunDsdiag("compare '" + dir.path() + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "rank-00001.jsonl")) << r.err;
  EXPECT_TRUE(Contains(r.err, "rank-000001.jsonl")) << r.err;
}

TEST(CompareCliTest, TextIsPlainWhenPipedAndSummarisesFirst) {
  const auto r = RunDsdiag("compare fixtures/runs/rank-died-2rank");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.rfind("dsdiag compare  fixtures/runs/rank-died-2rank\n", 0), 0u) << r.out;
  EXPECT_TRUE(Contains(r.out, "world size")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 error, 0 warnings, 2 info")) << r.out;
  EXPECT_TRUE(Contains(r.out, "[1] ERROR  rank-died  rank 1  step 2")) << r.out;
}

TEST(CompareCliTest, ExitStatusCountsFindingsTheFilterHides) {
  const auto died = RunDsdiag("compare fixtures/runs/rank-died-2rank --min-severity error");
  EXPECT_EQ(died.status, 1);
  const auto warn = RunDsdiag("compare fixtures/runs/malformed-2rank --min-severity error");
  EXPECT_EQ(warn.status, 0);
  EXPECT_TRUE(Contains(warn.out, "no findings at or above error")) << warn.out;
}

// Each fixtures/bad case becomes findings (never a crash, never exit 2).
struct BadCase {
  const char* name;
  int exit_status;
  const char* kind;
  const char* severity;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class CompareBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(CompareBadInputTest, BecomesFindings) {
  const BadCase& c = GetParam();
  const auto r = RunDsdiag(std::string("compare fixtures/bad/") + c.name + " --format json");
  EXPECT_EQ(r.status, c.exit_status) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  bool found = false;
  simdjson::dom::array findings;
  ASSERT_EQ(doc["findings"].get_array().get(findings), simdjson::SUCCESS);
  for (simdjson::dom::element f : findings) {
    const std::string_view kind = f["kind"].get_string().value();
    const std::string_view severity = f["severity"].get_string().value();
    if (kind == c.kind && severity == c.severity) {
      found = true;
      EXPECT_EQ(std::string_view(f["subject"].get_string().value()), "rank-00001.jsonl");
      EXPECT_EQ(f["ranks"].get_array().value().at(0).get_int64().value(), 1);
    }
  }
  EXPECT_TRUE(found) << "no " << c.severity << " " << c.kind << " in " << r.out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CompareBadInputTest,
                         ::testing::Values(BadCase{"empty", 1, "trace-corrupt", "error"},
                                           BadCase{"binary", 1, "trace-corrupt", "error"},
                                           BadCase{"garbage-line", 0, "trace-corrupt", "warning"},
                                           BadCase{"truncated", 1, "trace-corrupt", "info"},
                                           BadCase{"wrong-schema", 1, "trace-corrupt", "error"},
                                           BadCase{"bad-fields", 0, "trace-corrupt", "warning"},
                                           BadCase{"header-not-first", 1, "trace-corrupt",
                                                   "error"}),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// The truncated rank also died: the same run gives a rank-died error at its last step.
TEST(CompareBadInputTest, TruncatedRankIsAlsoReportedDead) {
  const auto r = RunDsdiag("compare fixtures/bad/truncated --format json");
  EXPECT_TRUE(Contains(r.out, "\"kind\":\"rank-died\",\"severity\":\"error\",\"ranks\":[1]"))
      << r.out;
}

}  // namespace
}  // namespace dsdiag::cli
