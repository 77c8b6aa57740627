// trace/torch_fr/torch_fr_files.h: which files of a directory are Flight Recorder dumps —
// named `<prefix><rank>`, sniffed by content, grouped by prefix — and which are not
// (dsdiag's own traces and dumps, other files that end in digits).
#include "trace/torch_fr/torch_fr_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/flight_dump.h"

namespace dsdiag::trace {
namespace {

using test_support::ReadFile;
using test_support::WriteFile;

std::string Fixture(const std::string& path) {
  return std::string(DSDIAG_SOURCE_DIR) + "/fixtures/torch_fr/" + path;
}

std::vector<int> Ranks(const TorchFrFileGroup& g) {
  std::vector<int> ranks;
  for (const TorchFrFile& f : g.files) ranks.push_back(f.rank);
  return ranks;
}

TEST(TorchFrFilesTest, SplitsNameIntoPrefixAndRank) {
  const auto a = SplitTorchFrFileName("nccl_trace_rank_12");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->prefix, "nccl_trace_rank_");
  EXPECT_EQ(a->rank, 12);
  EXPECT_EQ(SplitTorchFrFileName("7")->prefix, "");
  EXPECT_FALSE(SplitTorchFrFileName("rank-00001.jsonl").has_value());
  EXPECT_FALSE(SplitTorchFrFileName("nccl_trace_rank_").has_value());
  EXPECT_FALSE(SplitTorchFrFileName("dir/x_1").has_value());
}

TEST(TorchFrFilesTest, FixtureDirectoryIsOneGroup) {
  const TorchFrFindResult r = FindTorchFrDumps(Fixture("subgroup"));
  EXPECT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.groups.size(), 1u);  // json/ is a directory: not read
  EXPECT_EQ(r.groups[0].prefix, "comm_lib_trace_rank_");
  EXPECT_EQ(Ranks(r.groups[0]), (std::vector<int>{0, 1, 2}));
  for (const TorchFrFile& f : r.groups[0].files) EXPECT_EQ(f.format, TorchFrFormat::kPickle);
  const TorchFrFindResult json = FindTorchFrDumps(Fixture("subgroup/json"));
  ASSERT_EQ(json.groups.size(), 1u);
  EXPECT_EQ(json.groups[0].files[0].format, TorchFrFormat::kJson);
}

TEST(TorchFrFilesTest, MixedDirectory) {
  test_support::TempDir dir("torch-fr");
  const std::string pickle = ReadFile(Fixture("clean/nccl_trace_rank_0"));
  const std::string json = ReadFile(Fixture("clean/json/nccl_trace_rank_0"));
  WriteFile(dir.path() + "/nccl_trace_rank_0", pickle);
  WriteFile(dir.path() + "/nccl_trace_rank_1", pickle);
  WriteFile(dir.path() + "/nccl_trace_rank_01", pickle);  // claims rank 1 again
  WriteFile(dir.path() + "/comm_lib_trace_rank_3", json);
  WriteFile(dir.path() + "/legacy_2", ReadFile(Fixture("legacy/torch-2.2-list_rank_0")));
  WriteFile(dir.path() + "/notes_3", "not a dump\n");
  WriteFile(dir.path() + "/checkpoint_5", std::string("\x80\x02}q\x00.", 6));  // some pickle
  WriteFile(dir.path() + "/.hidden_1", pickle);
  WriteFile(dir.path() + "/rank-00000.jsonl", "{}\n");
  FlightDump own;
  WriteFile(dir.path() + "/flight-rank-00001.json", FlightDumpJson(own));
  WriteFile(dir.path() + "/own_flight_2", FlightDumpJson(own));  // a dsdiag dump, renamed
  std::filesystem::create_directory(dir.path() + "/sub_4");

  const TorchFrFindResult r = FindTorchFrDumps(dir.path());
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.groups[0].prefix, "comm_lib_trace_rank_");
  EXPECT_EQ(Ranks(r.groups[0]), (std::vector<int>{3}));
  EXPECT_EQ(r.groups[0].files[0].format, TorchFrFormat::kJson);
  EXPECT_EQ(r.groups[1].prefix, "legacy_");  // torch 2.2's bare list names its entries' keys
  EXPECT_EQ(r.groups[2].prefix, "nccl_trace_rank_");
  EXPECT_EQ(Ranks(r.groups[2]), (std::vector<int>{0, 1}));
  EXPECT_EQ(r.groups[2].files[1].name, "nccl_trace_rank_01");  // the first name is kept
  EXPECT_EQ(r.groups[2].duplicate_names, (std::vector<std::string>{"nccl_trace_rank_1"}));
  EXPECT_EQ(r.not_dumps, (std::vector<std::string>{"checkpoint_5", "notes_3", "own_flight_2"}));

  // A prefix given: only its files, taken as they are.
  TorchFrFindOptions options;
  options.prefix = "notes_";
  const TorchFrFindResult notes = FindTorchFrDumps(dir.path(), options);
  ASSERT_EQ(notes.groups.size(), 1u);
  EXPECT_EQ(notes.groups[0].files[0].name, "notes_3");
  EXPECT_FALSE(notes.groups[0].files[0].format.has_value());
  EXPECT_TRUE(notes.not_dumps.empty());
}

TEST(TorchFrFilesTest, MissingDirectory) {
  const TorchFrFindResult r = FindTorchFrDumps("/nonexistent/dsdiag-fr");
  EXPECT_TRUE(r.groups.empty());
  EXPECT_NE(r.error.find("/nonexistent/dsdiag-fr: "), std::string::npos);
}

TEST(TorchFrFilesTest, SniffNeedsDumpKeys) {
  EXPECT_EQ(SniffTorchFrDump(ReadFile(Fixture("clean/nccl_trace_rank_0")).substr(0, 4096)),
            TorchFrFormat::kPickle);
  EXPECT_EQ(SniffTorchFrDump("{\"a\":1}"), std::nullopt);
  EXPECT_EQ(SniffTorchFrDump("{\"schema\":\"dsdiag.flight/1\",\"entries\":[]}"), std::nullopt);
  EXPECT_EQ(SniffTorchFrDump("{\"version\":\"2.10\"}"), TorchFrFormat::kJson);
}

}  // namespace
}  // namespace dsdiag::trace
