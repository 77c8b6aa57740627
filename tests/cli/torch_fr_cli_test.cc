// compare, timeline and report on a directory of PyTorch Flight Recorder dumps and nothing
// else (fixtures/torch_fr/: real torch 2.13 Gloo dumps), end to end through the binary.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/cli/compare_test_util.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::cli {
namespace {

namespace fs = std::filesystem;
using testing::RunDsdiag;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TorchFrCli, CompareNamesTheCulpritItsLineAndTheCollectiveAndExitsOne) {
  const auto r = RunDsdiag("compare fixtures/torch_fr/skip --format json");
  EXPECT_EQ(r.status, 1) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out);
  simdjson::dom::array findings = doc["findings"];
  ASSERT_EQ(findings.size(), 1u) << r.out;
  simdjson::dom::element f = findings.at(0);
  EXPECT_EQ(std::string_view(f["kind"]), "hang");
  EXPECT_EQ(int64_t(f["ranks"].at(0)), 1);
  EXPECT_EQ(std::string_view(f["subject"]), "all_reduce group 0 (default_pg) seq 4");
  EXPECT_TRUE(Contains(std::string(std::string_view(f["summary"])), "generate.py:101"));
  EXPECT_EQ(std::string_view(f["evidence"]["source"]), "torch-flight-recorder");
}

TEST(TorchFrCli, APrefixThatMatchesNothingSaysWhatItLookedFor) {
  const auto r = RunDsdiag("compare fixtures/torch_fr/skip --fr-prefix comm_lib_trace_rank_");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "Flight Recorder dumps")) << r.err;
}

TEST(TorchFrCli, TimelineDrawsEveryRanksCollectivesAndTheFindings) {
  const test_support::TempDir dir("fr-timeline");
  const fs::path out = fs::path(dir.path()) / "timeline.json";
  const auto r = RunDsdiag("timeline fixtures/torch_fr/subgroup -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = ReadAll(out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  int spans = 0, findings = 0, pending = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"];
    if (ph == "X") ++spans;
    if (ph == "X" && std::string_view(e["cat"]) == "coll,pending") ++pending;
    if (ph == "i") ++findings;
  }
  EXPECT_GE(spans, 8);     // three ranks' collectives, two groups
  EXPECT_GE(pending, 2);   // rank 0 in group 1, rank 2 in the world group
  EXPECT_EQ(findings, 2);  // the two hangs
  EXPECT_EQ(std::string_view(doc["otherData"]["source"]), "torch-flight-recorder");
}

TEST(TorchFrCli, ReportShowsTheFindings) {
  const test_support::TempDir dir("fr-report");
  const fs::path out = fs::path(dir.path()) / "report.html";
  const auto r = RunDsdiag("report fixtures/torch_fr/skip -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;  // the report was written (findings do not fail it)
  const std::string html = ReadAll(out);
  EXPECT_TRUE(Contains(html, "never joined")) << html.substr(0, 400);
}

}  // namespace
}  // namespace dsdiag::cli
