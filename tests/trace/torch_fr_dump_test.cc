// trace/torch_fr/torch_fr_dump.h: the real dumps of fixtures/torch_fr/ (torch 2.13, Gloo,
// written by torch's dump API), the older layouts (fixtures/torch_fr/legacy/, emulated from
// the C++ writers of torch 2.2 and formats 1.4, 2.2 and 2.4), the same dump re-saved by
// Python's pickle at every protocol, its JSON form, and every way a file can be no dump:
// cut short at any byte, empty, another pickle, a dsdiag file.
#include "trace/torch_fr/torch_fr_dump.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/files.h"
#include "trace/flight_dump.h"
#include "trace/torch_fr/pickle_reader.h"

namespace dsdiag::trace {
namespace {

using namespace std::string_literals;
using test_support::ReadFile;

std::string Fixture(const std::string& path) {
  return std::string(DSDIAG_SOURCE_DIR) + "/fixtures/torch_fr/" + path;
}

TorchFrDump Load(const std::string& path) {
  LocatedIssue issue;
  auto d = ReadTorchFrDumpFile(Fixture(path), &issue);
  EXPECT_TRUE(d.has_value()) << issue.ToString();
  return d.value_or(TorchFrDump{});
}

std::vector<std::string> Ops(const TorchFrDump& d) {
  std::vector<std::string> ops;
  for (const TorchFrEntry& e : d.entries) {
    ops.push_back(std::string(e.op()) + "#" + std::to_string(e.collective_seq_id) + "@" +
                  e.pg_name);
  }
  return ops;
}

using Shapes = std::vector<std::vector<int64_t>>;
using Names = std::vector<std::string>;

// ---- the real dumps ----

TEST(TorchFrDumpTest, CleanJobEveryField) {
  const TorchFrDump d = Load("clean/nccl_trace_rank_1");
  EXPECT_EQ(d.format, TorchFrFormat::kPickle);
  EXPECT_EQ(d.version, "2.10");  // torch 2.13 writes format 2.10
  EXPECT_EQ(d.version_major, 2);
  EXPECT_EQ(d.version_minor, 10);
  EXPECT_TRUE(d.records_coalesced_collectives());
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.comm_lib_version, "");  // Gloo has none
  EXPECT_EQ(d.entries_skipped, 0);
  EXPECT_EQ(Ops(d), (Names{"all_reduce#1@0", "broadcast#2@0", "all_gather#3@0", "all_reduce#4@0",
                           "barrier#5@0"}));
  const TorchFrEntry& e = d.entries[2];
  EXPECT_EQ(e.record_id, 2);
  EXPECT_EQ(e.pg_id, 0);
  EXPECT_EQ(e.pg_name, "0");
  EXPECT_EQ(e.pg_desc, "default_pg");
  EXPECT_EQ(e.p2p_seq_id, 0);
  EXPECT_EQ(e.op_id, 3);
  EXPECT_EQ(e.profiling_name, "gloo:all_gather");
  EXPECT_EQ(e.backend(), "gloo");
  EXPECT_EQ(e.op_detail(), "");
  EXPECT_EQ(e.state, TorchFrState::kScheduled);  // Gloo never moves it on
  EXPECT_EQ(e.is_p2p, false);
  EXPECT_EQ(e.timeout_ms, 60000);
  EXPECT_GT(e.time_created_ns.value_or(0), int64_t{1'600'000'000} * 1'000'000'000);
  EXPECT_FALSE(e.time_discovered_started_ns.has_value());  // None: no events on Gloo
  EXPECT_FALSE(e.time_discovered_completed_ns.has_value());
  EXPECT_FALSE(e.duration_ms.has_value());
  EXPECT_EQ(e.input_sizes, (Shapes{{4}}));
  EXPECT_EQ(e.output_sizes, (Shapes{{2, 4}}));
  EXPECT_EQ(e.input_numel(), 4);
  EXPECT_EQ(e.output_numel(), 8);
  EXPECT_TRUE(e.has_dtypes);
  EXPECT_EQ(e.input_dtypes, (Names{"Float"}));
  EXPECT_EQ(e.output_dtypes, (Names{"Float"}));
  EXPECT_EQ(e.thread_name, "python");
  EXPECT_FALSE(e.thread_id.empty());
  // Innermost first: torch's all_gather, its logging wrapper, then the script.
  ASSERT_GE(e.frames.size(), 3u);
  EXPECT_EQ(e.frames[0].name, "all_gather");
  EXPECT_NE(e.frames[0].filename.find("torch/distributed/distributed_c10d.py"), std::string::npos);
  EXPECT_EQ(e.frames[1].name, "wrapper");
  EXPECT_EQ(e.frames[2].name, "rank_main");
  EXPECT_NE(e.frames[2].filename.find("generate.py"), std::string::npos);
  EXPECT_GT(e.frames[2].line, 0);
  EXPECT_TRUE(d.entries[4].input_sizes.empty());  // barrier: no tensors
  ASSERT_EQ(d.group_status.size(), 1u);
  EXPECT_EQ(d.FindStatus(0), &d.group_status[0]);
  EXPECT_EQ(d.group_status[0].last_enqueued, 5);
  EXPECT_EQ(d.group_status[0].last_started, -1);
  ASSERT_EQ(d.groups.size(), 1u);  // Gloo's recorder keeps one group, named ""
  EXPECT_EQ(d.groups[0].ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(d.groups[0].ranks_text, "[0, 1]");
}

TEST(TorchFrDumpTest, SkippedCollectiveLeavesTheSequencesApart) {
  const TorchFrDump r0 = Load("skip/nccl_trace_rank_0");
  const TorchFrDump r1 = Load("skip/nccl_trace_rank_1");
  EXPECT_EQ(Ops(r0),
            (Names{"all_reduce#1@0", "broadcast#2@0", "all_reduce#3@0", "all_reduce#4@0"}));
  EXPECT_EQ(Ops(r1), (Names{"all_reduce#1@0", "broadcast#2@0", "all_reduce#3@0"}));
  EXPECT_EQ(r0.entries.back().retired, false);  // the one rank 0 waits in
  EXPECT_EQ(r0.FindStatus(0)->last_enqueued, 4);
  EXPECT_EQ(r1.FindStatus(0)->last_enqueued, 3);
}

TEST(TorchFrDumpTest, MismatchesShowInTheLastEntry) {
  const auto last = [](const std::string& path) { return Load(path).entries.back(); };
  EXPECT_EQ(last("size_mismatch/nccl_trace_rank_0").input_sizes, (Shapes{{4}}));
  EXPECT_EQ(last("size_mismatch/nccl_trace_rank_1").input_sizes, (Shapes{{5}}));
  EXPECT_EQ(last("dtype_mismatch/nccl_trace_rank_0").input_dtypes, (Names{"Float"}));
  EXPECT_EQ(last("dtype_mismatch/nccl_trace_rank_1").input_dtypes, (Names{"Double"}));
  EXPECT_EQ(last("op_mismatch/nccl_trace_rank_0").op(), "all_reduce");
  EXPECT_EQ(last("op_mismatch/nccl_trace_rank_1").op(), "broadcast");
  for (const char* dir : {"size_mismatch", "dtype_mismatch", "op_mismatch"}) {
    for (const char* rank : {"0", "1"}) {
      const TorchFrEntry e = last(std::string(dir) + "/nccl_trace_rank_" + rank);
      EXPECT_EQ(e.collective_seq_id, 3) << dir << " " << rank;
      EXPECT_EQ(e.retired, false) << dir << " " << rank;
    }
  }
}

TEST(TorchFrDumpTest, SubGroupHasItsOwnNameAndSequence) {
  const TorchFrDump r0 = Load("subgroup/comm_lib_trace_rank_0");
  const TorchFrDump r1 = Load("subgroup/comm_lib_trace_rank_1");
  const TorchFrDump r2 = Load("subgroup/comm_lib_trace_rank_2");
  EXPECT_EQ(r0.rank, 0);
  EXPECT_EQ(r2.rank, 2);
  EXPECT_EQ(Ops(r0),
            (Names{"all_reduce#1@0", "broadcast#2@0", "all_reduce#1@1", "all_reduce#2@1"}));
  EXPECT_EQ(Ops(r1), (Names{"all_reduce#1@0", "broadcast#2@0", "all_reduce#1@1"}));
  EXPECT_EQ(Ops(r2), (Names{"all_reduce#1@0", "broadcast#2@0", "all_reduce#3@0"}));
  const TorchFrEntry& sub = r0.entries[2];
  EXPECT_EQ(sub.pg_id, 1);
  EXPECT_EQ(sub.pg_desc, "undefined");  // new_group without group_desc
  EXPECT_EQ(r0.FindStatus(1)->last_enqueued, 2);
  EXPECT_EQ(r1.FindStatus(1)->last_enqueued, 1);
  EXPECT_EQ(r2.FindStatus(1), nullptr);  // not a member
}

// The JSON form holds the same entries, without frames; its "no time" is 0, read as none.
TEST(TorchFrDumpTest, JsonFormMatchesThePickle) {
  for (const char* path : {"clean/nccl_trace_rank_0", "skip/nccl_trace_rank_0",
                           "size_mismatch/nccl_trace_rank_1", "dtype_mismatch/nccl_trace_rank_1",
                           "op_mismatch/nccl_trace_rank_1", "subgroup/comm_lib_trace_rank_0"}) {
    SCOPED_TRACE(path);
    const std::string p(path);
    const TorchFrDump pickled = Load(p);
    const TorchFrDump json = Load(p.substr(0, p.find('/')) + "/json" + p.substr(p.find('/')));
    EXPECT_EQ(json.format, TorchFrFormat::kJson);
    EXPECT_EQ(json.version, pickled.version);
    EXPECT_EQ(json.rank, pickled.rank);
    ASSERT_EQ(json.entries.size(), pickled.entries.size());
    for (size_t i = 0; i < json.entries.size(); ++i) {
      const TorchFrEntry& a = json.entries[i];
      const TorchFrEntry& b = pickled.entries[i];
      EXPECT_EQ(a.record_id, b.record_id);
      EXPECT_EQ(a.pg_name, b.pg_name);
      EXPECT_EQ(a.pg_desc, b.pg_desc);
      EXPECT_EQ(a.collective_seq_id, b.collective_seq_id);
      EXPECT_EQ(a.profiling_name, b.profiling_name);
      EXPECT_EQ(a.state, b.state);
      EXPECT_EQ(a.input_sizes, b.input_sizes);
      EXPECT_EQ(a.output_dtypes, b.output_dtypes);
      EXPECT_EQ(a.time_created_ns, b.time_created_ns);
      EXPECT_EQ(a.time_discovered_completed_ns, b.time_discovered_completed_ns);
      EXPECT_TRUE(a.frames.empty());
      EXPECT_FALSE(b.frames.empty());
    }
    // pg_status's numbers are strings in JSON.
    ASSERT_FALSE(json.group_status.empty());
    EXPECT_EQ(json.group_status[0].last_enqueued, pickled.group_status[0].last_enqueued);
  }
}

// What Python's pickle writes for the same dict, protocols 2 to 5, reads as the same tree.
TEST(TorchFrDumpTest, ResavedAtEveryProtocolReadsTheSame) {
  PickleError error;
  const auto torch_written = ReadPickle(ReadFile(Fixture("clean/nccl_trace_rank_0")), &error);
  ASSERT_TRUE(torch_written.has_value()) << error.found;
  for (int protocol = 2; protocol <= 5; ++protocol) {
    SCOPED_TRACE(protocol);
    const std::string bytes =
        ReadFile(Fixture("resaved/clean_protocol" + std::to_string(protocol) + "_rank_0"));
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(static_cast<uint8_t>(bytes[1]), protocol);
    const auto resaved = ReadPickle(bytes, &error);
    ASSERT_TRUE(resaved.has_value()) << error.expected << " / " << error.found;
    EXPECT_EQ(*resaved, *torch_written);
  }
}

// ---- the older layouts ----

TEST(TorchFrDumpTest, Torch22BareList) {
  const TorchFrDump d = Load("legacy/torch-2.2-list_rank_0");
  EXPECT_EQ(d.version, "");
  EXPECT_FALSE(d.version_major.has_value());
  EXPECT_FALSE(d.records_coalesced_collectives());
  ASSERT_EQ(d.entries.size(), 2u);
  const TorchFrEntry& e = d.entries[0];
  EXPECT_EQ(e.collective_seq_id, 7);  // from seq_id
  EXPECT_EQ(e.pg_id, 0);
  EXPECT_EQ(e.pg_name, "");
  EXPECT_FALSE(e.record_id.has_value());
  EXPECT_FALSE(e.p2p_seq_id.has_value());
  EXPECT_EQ(e.time_created_ns, int64_t{1714000000123456} * 1000);  // from microseconds
  EXPECT_EQ(e.state, TorchFrState::kStarted);
  EXPECT_EQ(e.retired, false);
  EXPECT_FALSE(e.has_dtypes);
  EXPECT_EQ(e.input_sizes, (Shapes{{1024}}));
  ASSERT_EQ(e.frames.size(), 1u);
  EXPECT_EQ(e.frames[0].filename, "train.py");
  EXPECT_EQ(e.frames[0].line, 42);
  EXPECT_EQ(d.entries[1].state, TorchFrState::kScheduled);
}

TEST(TorchFrDumpTest, Format14Dict) {
  const TorchFrDump d = Load("legacy/format-1.4-dict_rank_0");
  EXPECT_EQ(d.version, "1.4");
  ASSERT_EQ(d.entries.size(), 1u);
  const TorchFrEntry& e = d.entries[0];
  EXPECT_EQ(e.record_id, 3);
  EXPECT_EQ(e.collective_seq_id, 7);
  EXPECT_EQ(e.op_id, 7);
  EXPECT_EQ(e.duration_ms, 1.5);
  EXPECT_EQ(e.state, TorchFrState::kCompleted);
  EXPECT_EQ(e.time_discovered_completed_ns, 1714000000300000000);
  // pg_config of 1.x: {pg_id: [ranks]}, an integer key.
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].key, "0");
  EXPECT_EQ(d.groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(d.FindGroup("0"), &d.groups[0]);
}

TEST(TorchFrDumpTest, Format22NumberedDtypesAndP2p) {
  const TorchFrDump d = Load("legacy/format-2.2-int-dtypes_rank_0");
  EXPECT_EQ(d.version_minor, 2);
  ASSERT_EQ(d.entries.size(), 2u);
  EXPECT_EQ(d.entries[0].input_dtypes, (Names{"Float"}));      // ScalarType 6
  EXPECT_EQ(d.entries[1].output_dtypes, (Names{"BFloat16"}));  // ScalarType 15
  EXPECT_EQ(d.entries[0].timeout_ms, 600000);
  const TorchFrEntry& send = d.entries[1];
  EXPECT_EQ(send.op(), "send");
  EXPECT_EQ(send.op_detail(), "0->1");
  EXPECT_EQ(send.is_p2p, true);
  EXPECT_EQ(send.p2p_seq_id, 1);
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].desc, "undefined");
  EXPECT_EQ(d.groups[0].ranks, (std::vector<int64_t>{0, 1}));
}

TEST(TorchFrDumpTest, Format24GroupStatus) {
  const TorchFrDump d = Load("legacy/format-2.4-pg-status_rank_0");
  EXPECT_FALSE(d.records_coalesced_collectives());  // before 2.7
  ASSERT_NE(d.FindStatus(0), nullptr);
  EXPECT_EQ(d.FindStatus(0)->last_started, 6);
  EXPECT_EQ(d.FindStatus(0)->last_completed, 6);
  EXPECT_EQ(d.entries[0].pg_desc, "default_pg");
}

// ---- damage and foreign files ----

TEST(TorchFrDumpTest, CutShortAtAnyByteIsAnIssue) {
  for (const char* path : {"clean/nccl_trace_rank_0", "clean/json/nccl_trace_rank_0",
                           "resaved/clean_protocol5_rank_0"}) {
    const std::string bytes = ReadFile(Fixture(path));
    ASSERT_FALSE(bytes.empty()) << path;
    for (size_t n = 0; n < bytes.size(); ++n) {
      LocatedIssue issue;
      const auto d =
          ParseTorchFrDump("nccl_trace_rank_0", std::string_view(bytes).substr(0, n), &issue);
      ASSERT_FALSE(d.has_value()) << path << " cut at " << n;
      ASSERT_EQ(issue.file, "nccl_trace_rank_0");
      ASSERT_FALSE(issue.expected.empty());
      ASSERT_FALSE(issue.found.empty());
    }
  }
}

TEST(TorchFrDumpTest, CutPickleNamesTheByte) {
  const std::string bytes = ReadFile(Fixture("clean/nccl_trace_rank_0"));
  LocatedIssue issue;
  ASSERT_FALSE(
      ParseTorchFrDump("nccl_trace_rank_0", std::string_view(bytes).substr(0, 100), &issue));
  EXPECT_EQ(issue.line, 0);  // a binary file has no lines
  EXPECT_NE(issue.found.find(" at byte "), std::string::npos) << issue.ToString();
  // The JSON form is located by line and column.
  const std::string json = ReadFile(Fixture("clean/json/nccl_trace_rank_0"));
  ASSERT_FALSE(ParseTorchFrDump("j_0", std::string_view(json).substr(0, 100), &issue));
  EXPECT_EQ(issue.line, 1);
  EXPECT_EQ(issue.column, 101);
}

TEST(TorchFrDumpTest, EmptyFile) {
  LocatedIssue issue;
  EXPECT_FALSE(ParseTorchFrDump("nccl_trace_rank_0", "", &issue).has_value());
  EXPECT_EQ(issue.ToString(),
            "nccl_trace_rank_0: expected a Flight Recorder dump (a pickle, first byte 0x80, or a "
            "JSON object), found an empty file");
}

TEST(TorchFrDumpTest, ForeignPickles) {
  LocatedIssue issue;
  // pickle.dumps(os.system, protocol=2): code, refused unread.
  EXPECT_FALSE(ParseTorchFrDump("x_1",
                                "\x80\x02"
                                "cposix\nsystem\nq\x00."s,
                                &issue));
  EXPECT_EQ(issue.ToString(),
            "x_1: expected a data opcode of pickle protocol 2 to 5 (no imports, no calls), found "
            "unsupported pickle opcode 0x63 (GLOBAL) at byte 2");
  // pickle.dumps({'a': 1}): data, but no dump.
  EXPECT_FALSE(ParseTorchFrDump("x_1",
                                "\x80\x02}q\x00X\x01\x00\x00\x00"
                                "aK\x01s."s,
                                &issue));
  EXPECT_NE(issue.ToString().find("found a dict with keys \"a\""), std::string::npos)
      << issue.ToString();
  // pickle.dumps([1, 2]): a list, but not of entries.
  EXPECT_FALSE(ParseTorchFrDump("x_1",
                                "\x80\x02]q\x00(K\x01K\x02"
                                "e."s,
                                &issue));
  EXPECT_NE(issue.found.find("entries[0]: expected a dict"), std::string::npos) << issue.ToString();
  // pickle.dumps(7)
  EXPECT_FALSE(ParseTorchFrDump("x_1", "\x80\x02K\x07.", &issue));
  EXPECT_NE(issue.found.find("the number 7"), std::string::npos);
  // A text file.
  EXPECT_FALSE(ParseTorchFrDump("x_1", "hello\n", &issue));
  EXPECT_EQ(issue.found, "'hello'...");
}

TEST(TorchFrDumpTest, DsdiagFilesAreNotDumps) {
  LocatedIssue issue;
  FlightDump own;
  own.run_id = "r";
  own.reason = "timeout";
  EXPECT_FALSE(ParseTorchFrDump("flight-rank-00000.json", FlightDumpJson(own), &issue));
  EXPECT_EQ(issue.line, 1);
  EXPECT_NE(issue.found.find("a dsdiag file (schema \"dsdiag.flight/1\")"), std::string::npos)
      << issue.ToString();
  // A rank trace: one JSON object per line — the second line is where it stops being one.
  const std::string trace =
      "{\"type\":\"header\",\"ts\":1,\"step\":0,\"schema\":\"dsdiag.trace/1\",\"rank\":0}\n"
      "{\"type\":\"step\",\"ts\":2,\"step\":0}\n";
  EXPECT_FALSE(ParseTorchFrDump("rank-00000.jsonl", trace, &issue));
  EXPECT_EQ(issue.line, 2);
  EXPECT_EQ(issue.column, 1);
}

TEST(TorchFrDumpTest, BadEntriesAreSkippedAndCounted) {
  const std::string text =
      "{\"version\":\"2.10\",\"entries\":["
      "{\"pg_id\":0,\"process_group\":[\"0\",\"default_pg\"],\"collective_seq_id\":1,"
      "\"profiling_name\":\"nccl:all_reduce\",\"state\":\"completed\",\"input_sizes\":[[2,3]]},"
      "{\"pg_id\":0,\"collective_seq_id\":2,\"profiling_name\":\"nccl:all_reduce\",\"state\":"
      "\"lost\"},"
      "{\"pg_id\":0,\"collective_seq_id\":3,\"profiling_name\":\"nccl:all_reduce\",\"state\":"
      "\"started\","
      "\"input_sizes\":[4]},"
      "7]}";
  LocatedIssue issue;
  const auto d = ParseTorchFrDump("trace_rank_5", text, &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString();
  EXPECT_EQ(d->rank, 5);
  ASSERT_EQ(d->entries.size(), 1u);
  EXPECT_EQ(d->entries[0].input_numel(), 6);
  EXPECT_EQ(d->entries[0].state, TorchFrState::kCompleted);
  EXPECT_EQ(d->entries_skipped, 3);
  EXPECT_EQ(d->first_entry_problem,
            "entries[1]: expected field \"state\": \"scheduled\", \"started\" or \"completed\"");
}

TEST(TorchFrDumpTest, JsonIssuesAreLocated) {
  LocatedIssue issue;
  EXPECT_FALSE(ParseTorchFrDump("t_0", "{\"version\":\"2.10\",\n\"entries\":7}", &issue));
  EXPECT_EQ(issue.ToString(),
            "t_0:2:11: expected field \"entries\": a list of entries, found the number 7");
  EXPECT_FALSE(ParseTorchFrDump("t_0", "{\"version\":\"2.10\",\"entries\":[}", &issue));
  EXPECT_EQ(issue.line, 1);
  EXPECT_EQ(issue.column, 30);
  // A dump without collectives (includeCollectives=False) has no "entries" and is fine.
  const auto d = ParseTorchFrDump("t_0", "{\"version\":\"2.10\",\"pg_status\":{}}", &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString();
  EXPECT_TRUE(d->entries.empty());
}

TEST(TorchFrDumpTest, RankFromFileName) {
  EXPECT_EQ(TorchFrRankFromFileName("nccl_trace_rank_12"), 12);
  EXPECT_EQ(TorchFrRankFromFileName("/tmp/x/comm_lib_trace_rank_007"), 7);
  EXPECT_EQ(TorchFrRankFromFileName("nccl_trace_rank_"), std::nullopt);
  EXPECT_EQ(TorchFrRankFromFileName("rank-00001.jsonl"), std::nullopt);
  EXPECT_EQ(TorchFrRankFromFileName("t_99999999999"), std::nullopt);  // past int
}

TEST(TorchFrDumpTest, SniffByContent) {
  EXPECT_EQ(SniffTorchFrFormat("\x80\x02}"), TorchFrFormat::kPickle);
  EXPECT_EQ(SniffTorchFrFormat("\x80\x07}"), std::nullopt);
  EXPECT_EQ(SniffTorchFrFormat("  \n{\"version\""), TorchFrFormat::kJson);
  EXPECT_EQ(SniffTorchFrFormat("[1]"), std::nullopt);
  EXPECT_EQ(SniffTorchFrFormat(""), std::nullopt);
}

}  // namespace
}  // namespace dsdiag::trace
