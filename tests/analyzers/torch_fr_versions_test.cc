// Every Flight Recorder layout torch 2.2 to 2.13 writes (docs/torch-flight-recorder.md,
// "Format version by torch release"), emulated from torch's sources (torch_fr_emulated.h):
// each parses, and `dsdiag compare` on a few ranks of it names the right culprit.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "test_run.h"
#include "tests/analyzers/torch_fr_emulated.h"
#include "trace/torch_fr/torch_fr_dump.h"

namespace dsdiag::analyzers {
namespace {

using dsdiag::testing::AllReduces;
using dsdiag::testing::EmulatedFrJson;
using dsdiag::testing::EmulatedFrPickle;
using dsdiag::testing::FrLayout;
using dsdiag::testing::FrLayoutHasJson;
using dsdiag::testing::FrLayoutVersion;
using dsdiag::testing::FrRankSpec;

struct Release {
  const char* torch;  // the releases that write it
  FrLayout layout;
};

const Release kReleases[] = {
    {"torch_2_2", FrLayout::kList}, {"torch_2_3", FrLayout::kV1_4},
    {"torch_2_4", FrLayout::kV2_1}, {"torch_2_5_to_2_7", FrLayout::kV2_4},
    {"torch_2_8", FrLayout::kV2_9}, {"torch_2_9_to_2_13", FrLayout::kV2_10},
};

const Release kJsonReleases[] = {
    {"torch_2_5_to_2_7", FrLayout::kV2_4},
    {"torch_2_8", FrLayout::kV2_9},
    {"torch_2_9_to_2_13", FrLayout::kV2_10},
};

std::string ReleaseName(const ::testing::TestParamInfo<Release>& info) { return info.param.torch; }

FrRankSpec Rank(int ops, bool last_pending, int world = 3) {
  FrRankSpec r;
  for (int i = 0; i < world; ++i) r.world.push_back(i);
  r.ops = AllReduces(ops, last_pending);
  return r;
}

std::vector<const Finding*> OfKind(const CompareResult& r, std::string_view kind) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

class TorchFrVersions : public ::testing::TestWithParam<Release> {
 protected:
  FrLayout layout() const { return GetParam().layout; }
  bool at_least(FrLayout l) const { return layout() >= l; }

  // Writes each rank's dump into a fresh run and compares it.
  CompareResult Compare(const std::vector<FrRankSpec>& ranks, bool json = false) {
    for (size_t r = 0; r < ranks.size(); ++r)
      run_.WriteFile(
          "nccl_trace_rank_" + std::to_string(r),
          json ? EmulatedFrJson(layout(), ranks[r]) : EmulatedFrPickle(layout(), ranks[r]));
    return RunCompare(run_.dir());
  }

  void ExpectParsedAsWritten(const trace::TorchFrDump& d, bool json) {
    EXPECT_EQ(d.version, FrLayoutVersion(layout()));
    ASSERT_EQ(d.entries.size(), 3u);
    const trace::TorchFrEntry& done = d.entries[0];
    const trace::TorchFrEntry& pending = d.entries[2];
    EXPECT_EQ(pending.collective_seq_id, 3);
    EXPECT_EQ(pending.profiling_name, "nccl:all_reduce");
    EXPECT_EQ(pending.state, trace::TorchFrState::kStarted);
    EXPECT_EQ(pending.retired, std::optional<bool>(false));
    EXPECT_EQ(done.state, trace::TorchFrState::kCompleted);
    EXPECT_EQ(done.input_numel(), 4);
    ASSERT_TRUE(pending.time_created_ns.has_value());
    EXPECT_EQ(*pending.time_created_ns % 1000, 0);
    // A time not reached: None in the pickle, 0 in JSON, nullopt both.
    EXPECT_FALSE(pending.time_discovered_completed_ns.has_value());
    if (at_least(FrLayout::kV1_4)) {
      EXPECT_TRUE(pending.time_discovered_started_ns.has_value());
      EXPECT_TRUE(done.time_discovered_completed_ns.has_value());
      EXPECT_EQ(done.duration_ms, std::optional<double>(0.25));
      EXPECT_EQ(pending.record_id, std::optional<int64_t>(2));
      EXPECT_EQ(pending.op_id, std::optional<int64_t>(3));
      ASSERT_FALSE(d.groups.empty());
      EXPECT_EQ(d.groups[0].ranks, (std::vector<int64_t>{0, 1, 2}));
    } else {
      EXPECT_FALSE(pending.record_id.has_value());
    }
    if (at_least(FrLayout::kV2_1)) {
      EXPECT_EQ(pending.pg_name, "0");
      EXPECT_EQ(pending.pg_desc, "default_pg");
      EXPECT_TRUE(pending.has_dtypes);
      EXPECT_EQ(pending.input_dtypes, std::vector<std::string>{"Float"});
      EXPECT_EQ(pending.is_p2p, std::optional<bool>(false));
      EXPECT_EQ(pending.p2p_seq_id, std::optional<int64_t>(0));
      EXPECT_EQ(d.groups[0].desc, "default_pg");
    } else {
      EXPECT_TRUE(pending.pg_name.empty());
      EXPECT_FALSE(pending.has_dtypes);
    }
    if (at_least(FrLayout::kV2_4)) {
      EXPECT_EQ(pending.timeout_ms, std::optional<int64_t>(600000));
      const trace::TorchFrGroupStatus* s = d.FindStatus(0);
      ASSERT_NE(s, nullptr);
      EXPECT_EQ(s->last_enqueued, std::optional<int64_t>(3));
      EXPECT_EQ(s->last_started, std::optional<int64_t>(3));
      EXPECT_EQ(s->last_completed, std::optional<int64_t>(2));
    } else {
      EXPECT_FALSE(pending.timeout_ms.has_value());
      EXPECT_TRUE(d.group_status.empty());
    }
    if (at_least(FrLayout::kV2_9)) {
      EXPECT_EQ(pending.thread_name, "pt_main_thread");
      EXPECT_EQ(d.comm_lib_version, "2.21.5");  // nccl_version in 2.9
    } else {
      EXPECT_TRUE(pending.thread_name.empty());
      EXPECT_TRUE(d.comm_lib_version.empty());
    }
    EXPECT_EQ(d.records_coalesced_collectives(), at_least(FrLayout::kV2_9));
    if (json) {
      EXPECT_TRUE(pending.frames.empty());
    } else {
      ASSERT_EQ(pending.frames.size(), 2u);
      EXPECT_EQ(pending.frames[1].filename, "/job/train.py");
      EXPECT_EQ(pending.frames[1].line, 23);
    }
    EXPECT_EQ(d.entries_skipped, 0);
  }

  testing::TestRun run_;
};

TEST_P(TorchFrVersions, ThePickleParsesAsThatVersionWroteIt) {
  const std::string bytes = EmulatedFrPickle(layout(), Rank(3, true));
  trace::LocatedIssue issue;
  const std::optional<trace::TorchFrDump> d =
      trace::ParseTorchFrDump("nccl_trace_rank_1", bytes, &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString();
  EXPECT_EQ(d->format, trace::TorchFrFormat::kPickle);
  EXPECT_EQ(d->rank, std::optional<int>(1));
  ExpectParsedAsWritten(*d, false);
}

// The JSON form (`_dump_fr_trace_json()`), from format 2.2 on: the releases that write it.
class TorchFrJsonVersions : public TorchFrVersions {};

TEST_P(TorchFrJsonVersions, TheJsonFormParsesAsThatVersionWroteIt) {
  ASSERT_TRUE(FrLayoutHasJson(layout()));
  const std::string bytes = EmulatedFrJson(layout(), Rank(3, true));
  trace::LocatedIssue issue;
  const std::optional<trace::TorchFrDump> d =
      trace::ParseTorchFrDump("nccl_trace_rank_1", bytes, &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString() << "\n" << bytes;
  EXPECT_EQ(d->format, trace::TorchFrFormat::kJson);
  ExpectParsedAsWritten(*d, true);
}

// Rank 0 never joins seq 4 that ranks 1 and 2 wait in: torch's fr_trace, comparing with the
// first rank, would name the others.
TEST_P(TorchFrVersions, AHangNamesRankZeroThatNeverJoinedWithItsLine) {
  const CompareResult r = Compare({Rank(3, false), Rank(4, true), Rank(4, true)});
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->severity, Severity::kError);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{0});
  const trace::JsonValue* seq = hangs[0]->evidence.Find("seq");
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->as_int(), 4);
  EXPECT_NE(hangs[0]->summary.find("ranks 1,2 wait in"), std::string::npos) << hangs[0]->summary;
  EXPECT_NE(hangs[0]->summary.find("train.py:24 in step"), std::string::npos) << hangs[0]->summary;
  EXPECT_EQ(r.findings.size(), 1u);
}

TEST_P(TorchFrJsonVersions, TheJsonFormGivesTheSameHang) {
  const CompareResult r = Compare({Rank(3, false), Rank(4, true), Rank(4, true)}, true);
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{0});
}

// Rank 1's third collective differs: in size for every layout, in dtype where one is written.
TEST_P(TorchFrVersions, AMismatchNamesTheRankTheMajorityContradicts) {
  std::vector<FrRankSpec> ranks = {Rank(3, true), Rank(3, true), Rank(3, true)};
  const bool dtypes = at_least(FrLayout::kV2_1);
  if (dtypes)
    ranks[1].ops[2].dtype = "Double";
  else
    ranks[1].ops[2].sizes = {{5}};
  const CompareResult r = Compare(ranks);
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{1});
  EXPECT_NE(mismatches[0]->summary.find(dtypes ? "Double" : "5 elements"), std::string::npos)
      << mismatches[0]->summary;
  const trace::JsonValue* basis = mismatches[0]->evidence.Find("basis");
  ASSERT_NE(basis, nullptr);
  EXPECT_EQ(basis->as_string(), "majority");
}

// A rank whose file is missing is rank-died, in every layout; the world size comes from
// pg_config where the layout has one (1.4 on), else from the file names.
TEST_P(TorchFrVersions, ARankWithoutADumpIsRankDied) {
  const CompareResult r = Compare({Rank(4, true), Rank(4, true)});
  if (at_least(FrLayout::kV1_4)) {
    const auto died = OfKind(r, kind::kRankDied);
    ASSERT_EQ(died.size(), 1u);
    EXPECT_EQ(died[0]->ranks, std::vector<int>{2});
  } else {
    EXPECT_TRUE(OfKind(r, kind::kRankDied).empty());  // a list names no world
  }
}

// NCCL's states (scheduled, started, completed from its CUDA events): an op the watchdog
// retired without seeing it complete timed out — still pending, unlike Gloo's retired ops,
// which stay `scheduled` when done.
TEST(TorchFrNcclEntries, ARetiredOpThatNeverCompletedTimedOutAndIsStillPending) {
  FrRankSpec r0 = Rank(3, true, 2), r1 = Rank(2, false, 2);
  r0.ops[2].retired = true;  // state "started", retired: timed out
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", EmulatedFrPickle(FrLayout::kV2_10, r0));
  run.WriteFile("nccl_trace_rank_1", EmulatedFrPickle(FrLayout::kV2_10, r1));
  const CompareResult r = RunCompare(run.dir());
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "all_reduce group 0 (default_pg) seq 3");
}

TEST(TorchFrNcclEntries, AGlooOpRetiredWhileScheduledIsDone) {
  FrRankSpec r0 = Rank(3, false, 2), r1 = Rank(3, false, 2);
  for (FrRankSpec* rank : {&r0, &r1})
    for (auto& op : rank->ops) {
      op.profiling_name = "gloo:all_reduce";
      op.state = "scheduled";
    }
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", EmulatedFrPickle(FrLayout::kV2_10, r0));
  run.WriteFile("nccl_trace_rank_1", EmulatedFrPickle(FrLayout::kV2_10, r1));
  EXPECT_TRUE(RunCompare(run.dir()).findings.empty());
}

// Real torch 2.13 Gloo dumps count sends and recvs in pg_status (and record none): a rank
// that sent twice shows last_completed_collective 6 while waiting in collective 5. pg_status
// is then no witness of what completed.
TEST(TorchFrNcclEntries, APgStatusThatCountsUnrecordedOpsIsNotTakenForCompletion) {
  FrRankSpec r0 = Rank(5, true, 2), r1 = Rank(4, false, 2);
  for (FrRankSpec* rank : {&r0, &r1})
    for (auto& op : rank->ops) {
      op.profiling_name = "gloo:all_reduce";
      op.state = "scheduled";
    }
  r0.status_offset = 2;  // its two sends
  r1.status_offset = 2;  // the two recvs
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", EmulatedFrPickle(FrLayout::kV2_10, r0));
  run.WriteFile("nccl_trace_rank_1", EmulatedFrPickle(FrLayout::kV2_10, r1));
  const CompareResult r = RunCompare(run.dir());
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "all_reduce group 0 (default_pg) seq 5");
}

// Before format 2.0 there is no is_p2p: a send and its recv share seq_id with the
// collectives, and must not read as an op mismatch there.
TEST(TorchFrOldLayouts, BeforeFormat2SendAndRecvAreP2pNotAMismatchedCollective) {
  FrRankSpec r0 = Rank(3, false, 2), r1 = Rank(3, false, 2);
  r0.ops[1].profiling_name = "nccl:send 0->1";
  r1.ops[1].profiling_name = "nccl:recv 1<-0";
  r1.ops[1].sizes = {{6}};  // and paired: its size differs from the send's
  testing::TestRun run;
  run.WriteFile("nccl_trace_rank_0", EmulatedFrPickle(FrLayout::kV1_4, r0));
  run.WriteFile("nccl_trace_rank_1", EmulatedFrPickle(FrLayout::kV1_4, r1));
  const CompareResult r = RunCompare(run.dir());
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  ASSERT_TRUE(mismatches[0]->subject.has_value());
  EXPECT_EQ(*mismatches[0]->subject, "send/recv group 0 rank 0 -> rank 1 message 1");
  EXPECT_TRUE(OfKind(r, kind::kHang).empty());
}

INSTANTIATE_TEST_SUITE_P(Releases, TorchFrVersions, ::testing::ValuesIn(kReleases), ReleaseName);
INSTANTIATE_TEST_SUITE_P(Releases, TorchFrJsonVersions, ::testing::ValuesIn(kJsonReleases),
                         ReleaseName);

}  // namespace
}  // namespace dsdiag::analyzers
