// At scale, the same fault must read the same: each `dsdiag synth --inject` kind, put on a
// pseudo-random rank of a 4,096-rank run, gives `dsdiag compare` the findings it gives at
// 64 ranks — the same kinds, severities, steps and ranks, the injected rank standing for
// itself at either size ("R") and a rank list longer than half the run read as "all but".
// At 4,096 ranks compare runs with step windows and suspended readers (step_driver.h), so
// this holds the windowed driver to the lockstep findings of a small run. bench/run
// --only scale checks the same at 16,384 ranks (synth_findings_16k_same).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/compare_test_util.h"
#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::cli {
namespace {

using testing::RunDsdiag;

constexpr int kSmallRanks = 64;
constexpr int kLargeRanks = 4096;
constexpr int kSteps = 14;

// A rank in 1..ranks-1 (rank 0 is every run's reference: its clock, its initial weights),
// the same for a given kind and size from one run of the test to the next.
int PickRank(const std::string& kind, int ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the kind and the size
  for (char c : kind + "/" + std::to_string(ranks))
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return 1 + static_cast<int>(h % static_cast<uint64_t>(ranks - 1));
}

std::string Spec(const std::string& kind, int rank) {
  const std::string r = "rank=" + std::to_string(rank);
  if (kind == "straggler") return kind + ":" + r + ",ms=30";
  if (kind == "clock-skew") return kind + ":" + r + ",ms=300";
  if (kind == "unused-param") return kind + ":" + r;
  if (kind == "no-broadcast") return kind;
  return kind + ":" + r + ",step=" + std::to_string(kSteps / 2);  // grad-desync, crash, hang
}

// "R" for the injected rank, the number for any other.
std::string RankName(int64_t rank, int injected) {
  return rank == injected ? "R" : std::to_string(rank);
}

// A finding as the sizes must agree on it: kind, severity, step and ranks.
std::string Signature(simdjson::dom::object f, int injected, int ranks) {
  std::set<int64_t> in;
  simdjson::dom::array listed;
  if (f["ranks"].get_array().get(listed) == simdjson::SUCCESS) {
    for (simdjson::dom::element r : listed) {
      int64_t rank = 0;
      if (r.get_int64().get(rank) == simdjson::SUCCESS) in.insert(rank);
    }
  }
  std::string names;
  // More than half the run: name the ranks left out, which do not grow with the run.
  const bool complement = in.size() * 2 > static_cast<size_t>(ranks);
  for (int64_t r = 0; r < ranks; ++r) {
    if ((in.count(r) != 0) == complement) continue;
    names += (names.empty() ? "" : ",") + RankName(r, injected);
  }
  std::string_view kind, severity;
  if (f["kind"].get_string().get(kind) != simdjson::SUCCESS) kind = "?";
  if (f["severity"].get_string().get(severity) != simdjson::SUCCESS) severity = "?";
  int64_t step = -1;
  const bool has_step = f["step"].get_int64().get(step) == simdjson::SUCCESS;
  return std::string(kind) + " " + std::string(severity) + " step " +
         (has_step ? std::to_string(step) : "-") + " ranks " + (complement ? "all but {" : "{") +
         names + "}";
}

struct Outcome {
  std::vector<std::string> signatures;  // sorted
  std::string output;                   // for messages
};

Outcome SynthAndCompare(const std::string& kind, int ranks, const std::string& dir) {
  const int rank = PickRank(kind, ranks);
  Outcome out;
  const auto synth =
      RunDsdiag("synth --ranks " + std::to_string(ranks) + " --steps " + std::to_string(kSteps) +
                " --inject " + Spec(kind, rank) + " --out " + test_support::Quote(dir));
  EXPECT_EQ(synth.status, 0) << synth.err;
  const auto compare = RunDsdiag("compare " + test_support::Quote(dir) + " --format json");
  EXPECT_LE(compare.status, 1) << compare.err;
  out.output = compare.out;
  simdjson::dom::parser parser;
  simdjson::dom::array findings;
  if (parser.parse(out.output)["findings"].get_array().get(findings) != simdjson::SUCCESS) {
    ADD_FAILURE() << "no findings array in: " << out.output.substr(0, 500);
    return out;
  }
  for (simdjson::dom::element f : findings) {
    simdjson::dom::object finding;
    if (f.get_object().get(finding) == simdjson::SUCCESS)
      out.signatures.push_back(Signature(finding, rank, ranks));
  }
  std::sort(out.signatures.begin(), out.signatures.end());
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += "  " + l + "\n";
  return s;
}

class SynthScaleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SynthScaleTest, SameFindingsAt4096RanksAsAt64) {
  const std::string kind = GetParam();
  test_support::TempDir dir("scale");
  const Outcome small = SynthAndCompare(kind, kSmallRanks, dir.File("small"));
  // A skewed clock is corrected, not reported (nor an invented straggler): no finding.
  if (kind != "clock-skew") {
    ASSERT_FALSE(small.signatures.empty()) << kind << " found nothing";
  }
  const Outcome large = SynthAndCompare(kind, kLargeRanks, dir.File("large"));
  EXPECT_EQ(large.signatures, small.signatures)
      << kind << " at rank " << PickRank(kind, kLargeRanks) << " of " << kLargeRanks << ":\n"
      << Join(large.signatures) << "at rank " << PickRank(kind, kSmallRanks) << " of "
      << kSmallRanks << ":\n"
      << Join(small.signatures);
}

INSTANTIATE_TEST_SUITE_P(Kinds, SynthScaleTest,
                         ::testing::Values("straggler", "clock-skew", "unused-param", "grad-desync",
                                           "no-broadcast", "crash", "hang"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace dsdiag::cli
