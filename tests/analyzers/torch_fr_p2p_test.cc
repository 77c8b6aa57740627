// Point-to-point ops of Flight Recorder dumps paired across ranks (analyzers/torch_fr/
// fr_p2p.h), on dumps emulated as torch's NCCL backend writes them (format 2.10; torch 2.13's
// Gloo records no send or recv at all): `nccl:send 0->1` / `nccl:recv 1<-0`, group ranks,
// p2p_seq_id counting each rank's p2p ops — which do not line up across ranks.
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

// A send ("send") or recv of `numel` Float elements; done unless `pending` (then NCCL's
// entry is `scheduled` and not retired: the peer never came).
FrOpSpec P2p(const std::string& op, int self, int peer, int64_t p2p_seq, int numel,
             bool pending = false, int line = 40) {
  FrOpSpec s;
  s.profiling_name = "nccl:" + op + " " + std::to_string(self) + (op == "send" ? "->" : "<-") +
                     std::to_string(peer);
  s.is_p2p = true;
  s.p2p_seq = p2p_seq;
  s.op_id = 100 + p2p_seq;
  s.sizes = {{numel}};
  s.line = line;
  if (pending) {
    s.state = "scheduled";
    s.retired = false;
  }
  return s;
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

std::string Evidence(const Finding& f, const char* key) {
  const trace::JsonValue* v = f.evidence.Find(key);
  return v ? v->ToDisplay() : "";
}

CompareResult Compare(testing::TestRun* run, const std::vector<FrRankSpec>& ranks) {
  for (size_t r = 0; r < ranks.size(); ++r)
    run->WriteFile("nccl_trace_rank_" + std::to_string(r),
                   EmulatedFrPickle(FrLayout::kV2_10, ranks[r]));
  return RunCompare(run->dir());
}

const Finding* P2pFinding(const std::vector<const Finding*>& findings) {
  for (const Finding* f : findings)
    if (f->subject && f->subject->rfind("send/recv", 0) == 0) return f;
  return nullptr;
}

// Rank 0 sends to 1 then to 2 (its p2p seqs 1, 2), and never sends rank 1's second message;
// it goes on to an all_reduce that rank 1, blocked in its recv, never joins. Rank 1's p2p
// seq 2 is its second recv from 0 while rank 0's is the send to 2: pairing by seq would
// match those two.
TEST(TorchFrP2p, ARecvWhosePeerNeverSentNamesThePeerWithItsLine) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0, r2 = r0;
  r0.push_back(P2p("send", 0, 1, 1, 4));
  r0.push_back(P2p("send", 0, 2, 2, 4));
  r1.push_back(P2p("recv", 1, 0, 1, 4));
  r1.push_back(P2p("recv", 1, 0, 2, 4, true, 44));
  r2.push_back(P2p("recv", 2, 0, 1, 4));
  for (auto* ops : {&r0, &r2}) {
    FrOpSpec ar = AllReduces(2, true).back();
    ar.line = 52;
    ops->push_back(ar);
  }
  testing::TestRun run;
  const CompareResult r = Compare(&run, {World(3, r0), World(3, r1), World(3, r2)});
  const auto hangs = OfKind(r, kind::kHang);
  const Finding* p2p = P2pFinding(hangs);
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->severity, Severity::kError);
  EXPECT_EQ(p2p->ranks, std::vector<int>{0});
  EXPECT_EQ(p2p->subject, "send/recv group 0 (default_pg) rank 0 -> rank 1 message 2");
  EXPECT_NE(p2p->summary.find("rank 0 never posted the send that rank 1 waits for"),
            std::string::npos)
      << p2p->summary;
  EXPECT_NE(p2p->summary.find("train.py:44 in step"), std::string::npos) << p2p->summary;
  // The peer's line: the all_reduce it waits in.
  EXPECT_NE(p2p->summary.find("rank 0 waits in all_reduce group 0 (default_pg) seq 2 "
                              "(train.py:52 in step)"),
            std::string::npos)
      << p2p->summary;
  EXPECT_EQ(Evidence(*p2p, "src"), "0");
  EXPECT_EQ(Evidence(*p2p, "dst"), "1");
  // The all_reduce rank 1 never joined is this hang's follow-on: rank 1 is held in its recv.
  for (const Finding* f : hangs)
    if (f != p2p) {
      EXPECT_EQ(f->severity, Severity::kWarning) << f->summary;
      EXPECT_EQ(f->ranks, std::vector<int>{1});
    }
  EXPECT_TRUE(OfKind(r, kind::kCollectiveMismatch).empty());
}

TEST(TorchFrP2p, ASendWhoseReceiverNeverPostedTheRecvNamesTheReceiver) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0;
  r0.push_back(P2p("send", 0, 1, 1, 1 << 20, true, 61));
  testing::TestRun run;
  const CompareResult r = Compare(&run, {World(2, r0), World(2, r1)});
  const Finding* p2p = P2pFinding(OfKind(r, kind::kHang));
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->ranks, std::vector<int>{1});
  EXPECT_NE(p2p->summary.find("rank 1 never posted the recv that rank 0 waits for in its send"),
            std::string::npos)
      << p2p->summary;
  EXPECT_NE(p2p->summary.find("has nothing pending; its last op was all_reduce"), std::string::npos)
      << p2p->summary;
}

TEST(TorchFrP2p, MatchedSendsAndRecvsThatCompletedGiveNoFinding) {
  std::vector<FrOpSpec> r0 = AllReduces(2, false), r1 = r0, r2 = r0;
  r0.push_back(P2p("send", 0, 1, 1, 4));
  r0.push_back(P2p("send", 0, 2, 2, 8));
  r0.push_back(P2p("recv", 0, 2, 3, 2));
  r1.push_back(P2p("recv", 1, 0, 1, 4));
  r2.push_back(P2p("recv", 2, 0, 1, 8));
  r2.push_back(P2p("send", 2, 0, 2, 2));
  testing::TestRun run;
  const CompareResult r = Compare(&run, {World(3, r0), World(3, r1), World(3, r2)});
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].summary;
}

// Two messages of 4 elements agreed; the third, rank 1 receives 5: rank 1 is odd.
TEST(TorchFrP2p, ASizeMismatchNamesTheSideTheGroupsOtherMessagesContradict) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0;
  for (int i = 1; i <= 3; ++i) {
    r0.push_back(P2p("send", 0, 1, i, 4));
    r1.push_back(P2p("recv", 1, 0, i, i == 3 ? 5 : 4, false, i == 3 ? 77 : 40));
  }
  testing::TestRun run;
  const CompareResult r = Compare(&run, {World(2, r0), World(2, r1)});
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "history");
  EXPECT_EQ(Evidence(*mismatches[0], "message"), "3");
  EXPECT_NE(mismatches[0]->summary.find("rank 1 receives 5 elements Float"), std::string::npos)
      << mismatches[0]->summary;
  EXPECT_NE(mismatches[0]->summary.find("train.py:77 in step"), std::string::npos);
}

TEST(TorchFrP2p, ADtypeMismatchWithNoHistoryNamesBothSides) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0;
  r0.push_back(P2p("send", 0, 1, 1, 4));
  FrOpSpec recv = P2p("recv", 1, 0, 1, 4);
  recv.dtype = "BFloat16";
  r1.push_back(recv);
  testing::TestRun run;
  const CompareResult r = Compare(&run, {World(2, r0), World(2, r1)});
  const auto mismatches = OfKind(r, kind::kCollectiveMismatch);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0]->ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(*mismatches[0], "basis"), "none");
  EXPECT_NE(mismatches[0]->summary.find("BFloat16"), std::string::npos);
}

// In new_group([1, 2]) the names carry group ranks: rank 2's `recv 1<-0` waits for global
// rank 1, which pg_config's "[1, 2]" maps group rank 0 to.
TEST(TorchFrP2p, PeersInASubGroupAreMappedToGlobalRanksByItsMembers) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0, r2 = r0;
  FrOpSpec recv = P2p("recv", 1, 0, 1, 4, true);
  recv.pg_name = "1";
  recv.pg_desc = "undefined";
  recv.pg_id = 1;
  r2.push_back(recv);
  std::vector<FrRankSpec> ranks = {World(3, r0), World(3, r1), World(3, r2)};
  for (FrRankSpec& rank : ranks) rank.other_groups = {{1, 2}};
  testing::TestRun run;
  const CompareResult r = Compare(&run, ranks);
  const Finding* p2p = P2pFinding(OfKind(r, kind::kHang));
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->ranks, std::vector<int>{1});
  EXPECT_EQ(p2p->subject, "send/recv group 1 rank 1 -> rank 2 message 1");
}

// Rank 1's ring buffer wrapped: its first sends are gone, so the channel cannot be paired
// from the start, and no p2p finding is made from it.
TEST(TorchFrP2p, AChannelWhoseDumpWrappedIsLeftOut) {
  std::vector<FrOpSpec> r0 = AllReduces(1, false), r1 = r0;
  r0.push_back(P2p("send", 0, 1, 1, 4));
  r0.push_back(P2p("send", 0, 1, 2, 4));
  r1.push_back(P2p("recv", 1, 0, 2, 4));
  r1.push_back(P2p("recv", 1, 0, 3, 4, true));
  std::vector<FrRankSpec> ranks = {World(2, r0), World(2, r1)};
  ranks[1].first_record_id = 9;
  testing::TestRun run;
  const CompareResult r = Compare(&run, ranks);
  EXPECT_EQ(P2pFinding(OfKind(r, kind::kHang)), nullptr);
}

}  // namespace
}  // namespace dsdiag::analyzers
