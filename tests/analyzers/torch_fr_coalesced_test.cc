// Coalesced groups in Flight Recorder dumps, in both layouts torch wrote (emulated NCCL dumps,
// torch_fr_emulated.h): before format 2.7 a group of collectives is its closing
// `nccl:coalesced` entry alone and a group of p2p ops is its ops then that entry; from 2.7
// every op of the group is recorded, sharing one sequence number, then the closing entry.
// NCCL records the ops inside a group without events (they stay `scheduled`): the closing
// entry says whether the group completed. The analysis takes a group as one collective,
// as torch's fr_trace does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyzers/framework/compare.h"
#include "analyzers/framework/finding_kinds.h"
#include "test_run.h"
#include "tests/analyzers/torch_fr_emulated.h"

namespace dsdiag::analyzers {
namespace {

using dsdiag::testing::AllReduces;
using dsdiag::testing::EmulatedFrPickle;
using dsdiag::testing::FrLayout;
using dsdiag::testing::FrOpSpec;
using dsdiag::testing::FrRankSpec;

// The ops of a group: recorded without events, `scheduled` and never retired.
FrOpSpec Member(int64_t seq, int numel, int line = 70) {
  FrOpSpec op;
  op.collective_seq = seq;
  op.op_id = 10 * seq + numel;
  op.sizes = {{numel}};
  op.state = "scheduled";
  op.retired = false;
  op.line = line;
  return op;
}

// The closing entry (endCoalescing's work): no tensors; its events are the group's.
FrOpSpec Marker(int64_t seq, bool pending, bool p2p = false) {
  FrOpSpec op;
  op.profiling_name = "nccl:coalesced";
  op.sizes = {};
  op.is_p2p = p2p;
  (p2p ? op.p2p_seq : op.collective_seq) = seq;
  op.op_id = 10 * seq;
  op.line = 72;
  if (pending) {
    op.state = "started";
    op.retired = false;
  }
  return op;
}

FrRankSpec World(int world, std::vector<FrOpSpec> ops) {
  FrRankSpec r;
  for (int i = 0; i < world; ++i) r.world.push_back(i);
  r.ops = std::move(ops);
  return r;
}

std::vector<const Finding*> OfKind(const CompareResult& r, std::string_view kind) {
  std::vector<const Finding*> out;
  for (const Finding& f : r.findings)
    if (f.kind == kind) out.push_back(&f);
  return out;
}

CompareResult Compare(testing::TestRun* run, FrLayout layout,
                      const std::vector<FrRankSpec>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r)
    run->WriteFile("nccl_trace_rank_" + std::to_string(r), EmulatedFrPickle(layout, ranks[r]));
  return RunCompare(run->dir());
}

// From 2.7: seq 2 is a group of two all_reduces (2 and 3 elements) and its closing entry.
std::vector<FrOpSpec> Group27(bool pending, int second_numel = 3) {
  std::vector<FrOpSpec> ops = AllReduces(1, false);
  ops.push_back(Member(2, 2));
  ops.push_back(Member(2, second_numel, 71));
  ops.push_back(Marker(2, pending));
  return ops;
}

TEST(TorchFrCoalesced, ACompletedGroupWhoseOpsStayScheduledIsDone) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_10,
              {World(3, Group27(false)), World(3, Group27(false)), World(3, Group27(false))});
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].summary;
}

TEST(TorchFrCoalesced, From27AMemberThatDiffersOnOneRankIsAMismatchNamingIt) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_10,
              {World(3, Group27(true)), World(3, Group27(true, 4)), World(3, Group27(true))});
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(mismatches[0]->subject, "group 0 (default_pg) seq 2");
  EXPECT_NE(mismatches[0]->summary.find("coalesced(all_reduce,all_reduce) of 6 elements"),
            std::string::npos)
      << mismatches[0]->summary;
  EXPECT_NE(mismatches[0]->summary.find("train.py:70 in step"), std::string::npos);
}

TEST(TorchFrCoalesced, From27ARankThatNeverEnteredTheGroupIsTheHangsCulprit) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_10,
              {World(3, Group27(true)), World(3, AllReduces(1, false)), World(3, Group27(true))});
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "coalesced(all_reduce,all_reduce) group 0 (default_pg) seq 2");
  EXPECT_NE(hangs[0]->summary.find("train.py:70 in step"), std::string::npos);
}

// `nccl:ALLGATHER_coalesced` closes a group too (endCoalescing's op type); an
// `nccl:allreduce_coalesced` is a collective of its own, not a closing entry.
TEST(TorchFrCoalesced, AnUpperCaseOpTypeClosesAGroupAndAllreduceCoalescedIsACollective) {
  std::vector<FrOpSpec> in = AllReduces(1, false);
  in[0].profiling_name = "nccl:allreduce_coalesced";
  in[0].sizes = {{2}, {3}};
  std::vector<FrOpSpec> out = in;
  in.push_back(Member(2, 2));
  in.push_back(Member(2, 3, 71));
  in.push_back(Marker(2, true));
  in.back().profiling_name = "nccl:ALLGATHER_coalesced";
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_10, {World(3, in), World(3, out), World(3, in)});
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(hangs[0]->subject, "coalesced(all_reduce,all_reduce) group 0 (default_pg) seq 2");
  EXPECT_NE(hangs[0]->evidence.ToJson().find("\"op\":\"allreduce_coalesced\""), std::string::npos)
      << hangs[0]->evidence.ToJson();
}

// Before 2.7 a group of collectives is its closing entry alone.
TEST(TorchFrCoalesced, Before27ARankThatNeverEnteredTheGroupIsTheHangsCulprit) {
  std::vector<FrOpSpec> in = AllReduces(1, false);
  in.push_back(Marker(2, true));
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_4, {World(3, in), World(3, in), World(3, AllReduces(1, false))});
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{2});
  EXPECT_EQ(hangs[0]->subject, "coalesced group 0 (default_pg) seq 2");
  EXPECT_NE(hangs[0]->summary.find("train.py:72 in step"), std::string::npos);
}

// batch_isend_irecv of two ranks in a ring: each rank's send and recv share p2p seq 1, then
// the closing entry. Done when it is; the ops pair across the ranks.
std::vector<FrOpSpec> Ring(int self, bool send, bool recv, bool pending, int numel = 4) {
  std::vector<FrOpSpec> ops = AllReduces(1, false);
  const int peer = 1 - self;
  auto p2p = [&](const std::string& name, const std::string& arrow) {
    FrOpSpec op = Member(0, numel, 80);
    op.profiling_name = "nccl:" + name + " " + std::to_string(self) + arrow + std::to_string(peer);
    op.is_p2p = true;
    op.p2p_seq = 1;
    op.collective_seq = 1;
    return op;
  };
  if (send) ops.push_back(p2p("send", "->"));
  if (recv) ops.push_back(p2p("recv", "<-"));
  FrOpSpec marker = Marker(1, pending, true);
  marker.collective_seq = 1;
  ops.push_back(marker);
  return ops;
}

TEST(TorchFrCoalesced, Before27ACompletedP2pGroupPairsAndIsDone) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_4,
              {World(2, Ring(0, true, true, false)), World(2, Ring(1, true, true, false))});
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].summary;
}

TEST(TorchFrCoalesced, AP2pGroupWhosePeerNeverSentNamesThePeer) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_4,
              {World(2, Ring(0, false, true, false)), World(2, Ring(1, true, true, true))});
  const auto hangs = OfKind(r, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(hangs[0]->ranks, std::vector<int>{0});
  EXPECT_EQ(hangs[0]->subject, "send/recv group 0 (default_pg) rank 0 -> rank 1 message 1");
}

TEST(TorchFrCoalesced, AP2pGroupWhoseSizesDifferIsAMismatch) {
  testing::TestRun run;
  const CompareResult r =
      Compare(&run, FrLayout::kV2_10,
              {World(2, Ring(0, true, true, true)), World(2, Ring(1, true, true, true, 6))});
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 2u);  // each direction of the ring
  for (const Finding* f : mismatches) EXPECT_EQ(f->ranks, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace dsdiag::analyzers
