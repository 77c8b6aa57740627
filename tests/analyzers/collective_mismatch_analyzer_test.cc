#include <gtest/gtest.h>

#include <functional>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/ghost_trace_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/records/coll_record.h"
#include "trace/records/p2p_record.h"
#include "trace/records/site_record.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::kMs;
using testing::RunOne;
using testing::TestRun;
using testing::WriteColl;

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateCollectiveMismatchAnalyzer(), run.dir());
}

// One collective as a rank issued it.
struct Call {
  int pg = 0;
  int64_t seq = 0;
  std::string op = "allreduce";
  std::string dtype = "f32";
  int64_t n = 4096;
  std::string tag = "grad-bucket-0";
  trace::PeerCounts counts;  // an all-to-all's per-peer sizes
};

// `steps` steps of three allreduces (pg 0, seq = step*3 + k, n = 1000*(k+1)); `edit` may
// change, drop or add calls of a step on this rank.
void WriteRank(TestRun* run, int rank, int world, int steps,
               const std::function<void(int64_t step, std::vector<Call>*)>& edit = {}) {
  auto w = run->Open(TestRun::Header(rank, world));
  int64_t t = 1000;
  for (int64_t s = 0; s < steps; ++s) {
    w->SetStep(s);
    w->BeginAt(trace::rec::kStepBegin, t).line().Field("epoch", 0);
    std::vector<Call> calls;
    for (int k = 0; k < 3; ++k)
      calls.push_back({0,
                       s * 3 + k,
                       "allreduce",
                       "f32",
                       1000 * (k + 1),
                       "grad-bucket-" + std::to_string(k),
                       {}});
    if (edit) edit(s, &calls);
    for (const Call& c : calls)
      WriteColl(w.get(), t += kMs, c.pg, c.seq, c.op, c.dtype, c.n, c.tag, kMs,
                c.counts.empty() ? nullptr : &c.counts);
    w->BeginAt(trace::rec::kStep, t).line().Field("dur", 5 * kMs);
    t += 10 * kMs;
  }
  w->SetStep(steps);
  TestRun::WriteEnd(w.get(), "ok", 0);
}

TEST(CollectiveMismatchAnalyzerTest, IdenticalCollectivesGiveNothing) {
  TestRun run;
  for (int r = 0; r < 4; ++r) WriteRank(&run, r, 4, 5);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(CollectiveMismatchAnalyzerTest, OtherSizeOnOneRankNamesItTheSeqAndBothSignatures) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 5, [r](int64_t step, std::vector<Call>* calls) {
      if (r == 2 && step == 3) (*calls)[1].n = 777;
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.subject, "pg 0 seq 10");
  EXPECT_EQ(f.summary,
            "at pg 0 seq 10 (step 3) rank 2 issued allreduce f32 n=777 (grad-bucket-1) where "
            "ranks 0,1,3 issued allreduce f32 n=2000 (grad-bucket-1)");
  EXPECT_EQ(Evidence(f, "pg"), "0");
  EXPECT_EQ(Evidence(f, "seq"), "10");
  EXPECT_EQ(Evidence(f, "step"), "3");
  EXPECT_EQ(Evidence(f, "groups"),
            "[{\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":2000,\"tags\":[\"grad-bucket-1\"],"
            "\"ranks\":[0,1,3],\"count\":3},"
            "{\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":777,\"tags\":[\"grad-bucket-1\"],"
            "\"ranks\":[2],\"count\":1}]");
  EXPECT_EQ(Evidence(f, "mismatched_collectives"), "1");
  EXPECT_EQ(Evidence(f, "source"), "\"trace\"");
}

TEST(CollectiveMismatchAnalyzerTest, AnExtraCollectiveShiftsTheRestOnlyTheFirstIsDetailed) {
  TestRun run;
  for (int r = 0; r < 3; ++r) {
    WriteRank(&run, r, 3, 4, [r](int64_t step, std::vector<Call>* calls) {
      // From step 2 on, rank 1 issues a barrier first: every later seq is off by one.
      if (r != 1) return;
      for (Call& c : *calls) c.seq += step >= 2 ? 1 : 0;
      if (step == 2) calls->insert(calls->begin(), Call{0, 6, "barrier", "u8", 1, "barrier", {}});
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.subject, "pg 0 seq 6");
  EXPECT_NE(f.summary.find("rank 1 issued barrier u8 n=1 (barrier)"), std::string::npos)
      << f.summary;
  // seq 6..11 all differ (6 collectives); seq 12 exists on rank 1 only.
  EXPECT_EQ(Evidence(f, "mismatched_collectives"), "6");
  EXPECT_EQ(Evidence(f, "last_mismatched_seq"), "11");
  EXPECT_NE(f.summary.find("5 later collectives of pg 0 differ too"), std::string::npos)
      << f.summary;
}

// Two ranks split 1 against 1: the rank whose call the group never issued before is odd,
// whichever rank it is (a vote, or rank order, would blame the healthy one half the time).
TEST(CollectiveMismatchAnalyzerTest, ATieIsDecidedByWhatEveryRankIssuedBefore) {
  for (int odd = 0; odd < 2; ++odd) {
    TestRun run;
    for (int r = 0; r < 2; ++r) {
      WriteRank(&run, r, 2, 5, [r, odd](int64_t step, std::vector<Call>* calls) {
        if (r == odd && step == 3) (*calls)[1].n = 777;
      });
    }
    const auto findings = Analyze(run);
    ASSERT_EQ(findings.size(), 1u) << odd;
    const Finding& f = findings[0];
    EXPECT_EQ(f.ranks, std::vector<int>{odd});
    EXPECT_EQ(f.subject, "pg 0 seq 10");
    const std::string other = std::to_string(1 - odd), me = std::to_string(odd);
    EXPECT_EQ(f.summary, "at pg 0 seq 10 (step 3) rank " + me +
                             " issued allreduce f32 n=777 (grad-bucket-1) where rank " + other +
                             " issued allreduce f32 n=2000 (grad-bucket-1), as every rank did at "
                             "pg 0 seq 1 (the ranks split 1 against 1, and rank " +
                             me + "'s call is one the group never issued before)");
    EXPECT_EQ(Evidence(f, "majority"), "true");
    EXPECT_EQ(Evidence(f, "basis"), "\"history\"");
    EXPECT_EQ(Evidence(f, "agreed_seq"), "1");
  }
}

// Two against two: the odd side's call is named in the plural.
TEST(CollectiveMismatchAnalyzerTest, AnEvenSplitNamesTheSideWithTheNewCall) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 5, [r](int64_t step, std::vector<Call>* calls) {
      if (r >= 2 && step == 3) (*calls)[1].n = 777;
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(Evidence(f, "basis"), "\"history\"");
  EXPECT_NE(f.summary.find("(the ranks split 2 against 2, and the call of ranks 2"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find(" is one the group never issued before)"), std::string::npos)
      << f.summary;
}

// Four ranks, two of which the launcher stopped before they reached the mismatch (the
// backend failed the two that did at once): the two that recorded it split 1 against 1,
// and the group's history still names the one that changed its call.
TEST(CollectiveMismatchAnalyzerTest, RanksStoppedBeforeTheMismatchLeaveItToHistory) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    const bool stopped_early = r == 0 || r == 3;
    WriteRank(&run, r, 4, stopped_early ? 3 : 4, [r](int64_t step, std::vector<Call>* calls) {
      if (r == 2 && step == 3) (*calls)[0].n = 1001;
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].subject, "pg 0 seq 9");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"history\"");
}

// Both sides issue a size the group never saw (a new shape on every rank, each its own):
// history cannot tell them apart, and both are named.
TEST(CollectiveMismatchAnalyzerTest, TwoNewCallsInATieNameBothRanks) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteRank(&run, r, 2, 5, [r](int64_t step, std::vector<Call>* calls) {
      if (step == 3) (*calls)[1].n = r == 0 ? 555 : 777;
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"none\"");
  EXPECT_NE(findings[0].summary.find("(no majority: the ranks split 1 against 1"),
            std::string::npos)
      << findings[0].summary;
}

TEST(CollectiveMismatchAnalyzerTest, DtypeAndOpDifferencesCount) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteRank(&run, r, 2, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (r == 1 && step == 0) (*calls)[0].dtype = "bf16";
      if (r == 1 && step == 1) (*calls)[2].op = "allgather";
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);  // one per process group
  // Two ranks, and no history before step 0: no majority, both named.
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
  EXPECT_EQ(Evidence(findings[0], "basis"), "\"none\"");
  EXPECT_EQ(findings[0].subject, "pg 0 seq 0");
  EXPECT_EQ(Evidence(findings[0], "mismatched_collectives"), "2");
}

TEST(CollectiveMismatchAnalyzerTest, OneFindingPerProcessGroup) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 3, [r](int64_t step, std::vector<Call>* calls) {
      calls->push_back(Call{1, step, "broadcast", "f32", 64, "health", {}});
      if (r == 3 && step == 1) calls->back().n = 65;
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].subject, "pg 1 seq 1");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{3});
}

TEST(CollectiveMismatchAnalyzerTest, ARankMissingACollectiveIsNoMismatch) {
  TestRun run;
  for (int r = 0; r < 3; ++r) {
    WriteRank(&run, r, 3, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (r == 2 && step == 2) calls->clear();  // died before issuing them
    });
  }
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(CollectiveMismatchAnalyzerTest, PendingEntriesOfFlightDumpsAreCompared) {
  TestRun run;
  for (int r = 0; r < 2; ++r) WriteRank(&run, r, 2, 2);
  // Both ranks stuck at seq 6, each in another op: only the dumps say so.
  auto dump = [&](int rank, std::string_view op, int64_t n) {
    run.WriteFile(
        trace::FlightDumpFileName(rank),
        "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":" + std::to_string(rank) +
            ",\"world_size\":2,\"reason\":\"timeout\",\"ts\":900000000000,"
            "\"where\":{\"step\":2,\"phase\":\"sync\"},\"entries\":["
            "{\"pg\":0,\"seq\":5,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":3000,"
            "\"step\":1,\"state\":\"completed\",\"issued\":1,\"completed\":2},"
            "{\"pg\":0,\"seq\":6,\"op\":\"" +
            std::string(op) + "\",\"dtype\":\"f32\",\"n\":" + std::to_string(n) +
            ",\"tag\":\"loss\",\"step\":2,\"state\":\"started\",\"issued\":3}]}\n");
  };
  dump(0, "allreduce", 1);
  dump(1, "allgather", 2);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].subject, "pg 0 seq 6");
  EXPECT_EQ(findings[0].step, 2);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(Evidence(findings[0], "source"), "\"flight-dump\"");
}

// A rank that failed in the mismatched collective has no `coll` record of it, only its
// dump's pending entry: it still counts, with that entry's signature.
TEST(CollectiveMismatchAnalyzerTest, ARankThatFailedInTheCollectiveCountsWithItsDumpEntry) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (step != 2) return;
      if (r == 1) calls->clear();        // failed in seq 6: no record from here on
      if (r == 2) (*calls)[0].n = 1001;  // the odd one
    });
  }
  run.WriteFile(trace::FlightDumpFileName(1),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":1,"
                "\"world_size\":4,\"reason\":\"error\",\"ts\":900000000000,\"entries\":["
                "{\"pg\":0,\"seq\":6,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":1000,"
                "\"tag\":\"grad-bucket-0\",\"step\":2,\"state\":\"started\",\"issued\":3}]}\n");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_NE(findings[0].summary.find("where ranks 0,1,3 issued"), std::string::npos)
      << findings[0].summary;
}

// Two ranks: rank 1 sends a wrong size, and rank 0, receiving it, dies in the collective
// (Gloo's enforce aborts the receiver): the one trace record and the one pending dump entry
// of that (pg, seq) are compared.
TEST(CollectiveMismatchAnalyzerTest, ATraceRecordIsComparedWithThePeersPendingDumpEntry) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteRank(&run, r, 2, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (step != 2) return;
      if (r == 0) calls->clear();        // died in seq 6: no record from here on
      if (r == 1) (*calls)[0].n = 1001;  // the wrong size, completed on the sender
    });
  }
  run.WriteFile(trace::FlightDumpFileName(0),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":0,"
                "\"world_size\":2,\"reason\":\"terminate\",\"ts\":900000000000,\"entries\":["
                "{\"pg\":0,\"seq\":6,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":1000,"
                "\"tag\":\"grad-bucket-0\",\"step\":2,\"state\":\"issued\",\"issued\":3}]}\n");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].step, 2);
  EXPECT_NE(findings[0].summary.find("seq 6"), std::string::npos) << findings[0].summary;
}

// Without the dump, one rank's record of a collective the other never recorded is no
// mismatch (it died before, or the trace was cut).
TEST(CollectiveMismatchAnalyzerTest, ALoneTraceRecordWithoutADumpIsNoMismatch) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteRank(&run, r, 2, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (step == 2 && r == 0) calls->clear();
    });
  }
  EXPECT_TRUE(Analyze(run).empty());
}

// An MoE layer's all_to_all_single: rank i sends 10*(i+1)+j elements to rank j, so each
// rank's total differs; `send_delta` is added to what `odd` sends to every peer but itself.
Call AllToAll(int rank, int world, int64_t step, int odd = -1, int64_t send_delta = 0) {
  Call c{0, step * 3 + 1, "alltoall", "f32", 0, "alltoall", {}};
  for (int j = 0; j < world; ++j) {
    c.counts.send.push_back(10 * (rank + 1) + j + (rank == odd && j != rank ? send_delta : 0));
    c.counts.recv.push_back(10 * (j + 1) + rank);
  }
  for (int64_t v : c.counts.recv) c.n += v;
  return c;
}

TEST(CollectiveMismatchAnalyzerTest, AnAllToAllWhosePeersAgreeIsNoMismatchThoughTotalsDiffer) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 4,
              [r](int64_t step, std::vector<Call>* calls) { (*calls)[1] = AllToAll(r, 4, step); });
  }
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(CollectiveMismatchAnalyzerTest, TheRankWhoseSendSizesDisagreeWithEveryPeerIsNamed) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 4, [r](int64_t step, std::vector<Call>* calls) {
      (*calls)[1] = AllToAll(r, 4, step, step == 2 ? 2 : -1, 8);
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.subject, "pg 0 seq 7");
  EXPECT_EQ(f.summary,
            "at pg 0 seq 7 (step 2) alltoall f32 with per-peer sizes: rank 2 sends 38 elements "
            "to rank 0, which expects 30 from it; 2 more pairs disagree; rank 2 disagrees with "
            "the most peers");
  EXPECT_EQ(Evidence(f, "disagreeing_pairs"), "3");
  EXPECT_EQ(Evidence(f, "majority"), "true");
}

TEST(CollectiveMismatchAnalyzerTest, OnASubGroupPeersAreNamedByTheirGlobalRanks) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteRank(&run, r, 4, 2, [r](int64_t step, std::vector<Call>* calls) {
      if (r != 1 && r != 3) return;
      Call c{1, step, "alltoall", "f32", 8, "moe", {}};
      c.counts.peers = {1, 3};
      c.counts.send = {4, r == 3 && step == 1 ? 5 : 4};  // rank 3 sends rank 1 one too many
      c.counts.recv = {4, 4};
      if (r == 3) std::swap(c.counts.send[0], c.counts.send[1]);
      calls->push_back(c);
    });
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{1, 3}));  // two ranks: no majority
  EXPECT_EQ(findings[0].subject, "pg 1 seq 1");
  EXPECT_NE(findings[0].summary.find("rank 3 sends 5 elements to rank 1, which expects 4"),
            std::string::npos)
      << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "majority"), "false");
}

// The receiver of the wrong sizes dies in the all-to-all (Gloo aborts it): its dump's pending
// entry holds its sizes, and the sender's trace record is checked against them.
TEST(CollectiveMismatchAnalyzerTest, PerPeerSizesOfAPendingDumpEntryAreChecked) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteRank(&run, r, 2, 3, [r](int64_t step, std::vector<Call>* calls) {
      if (step != 2) return;
      if (r == 0) calls->clear();                          // died in seq 7
      if (r == 1) (*calls)[1] = AllToAll(1, 2, 2, 1, 32);  // sends rank 0 32 too many
    });
  }
  run.WriteFile(trace::FlightDumpFileName(0),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":0,"
                "\"world_size\":2,\"reason\":\"terminate\",\"ts\":900000000000,\"entries\":["
                "{\"pg\":0,\"seq\":7,\"op\":\"alltoall\",\"dtype\":\"f32\",\"n\":30,"
                "\"tag\":\"alltoall\",\"step\":2,\"state\":\"started\",\"issued\":3,"
                "\"send\":[10,11],\"recv\":[10,20]}]}\n");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(findings[0].summary.find("rank 1 sends 52 elements to rank 0, which expects 20"),
            std::string::npos)
      << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "source"), "\"flight-dump\"");
}

TEST(CollectiveMismatchAnalyzerTest, AMalformedDumpIsIgnoredHere) {
  TestRun run;
  for (int r = 0; r < 2; ++r) WriteRank(&run, r, 2, 2);
  run.WriteFile(trace::FlightDumpFileName(1), "{\"schema\":\"dsdiag.flight/1\",\"rank\":");
  EXPECT_TRUE(Analyze(run).empty());
}

// ---- point-to-point messages: each send against the recv it meets ----

// One message as one rank recorded it: `op` "send" to `peer` or "recv" from it.
struct Message {
  std::string op;
  int64_t peer = 0;
  int64_t seq = 0;
  int64_t n = 4;
  int pg = 0;
  int64_t group_peer = -1;  // -1: the global rank
  int64_t tag = 0;
  std::string dtype = "f32";
};

// `steps` steps of the collectives above, then each step's messages (`messages(step)`), in
// the order given: recvs before sends on purpose in some tests (the traces' order says
// nothing of which side came first).
void WriteMessages(TestRun* run, int rank, int world, int steps,
                   const std::function<std::vector<Message>(int64_t step)>& messages) {
  auto w = run->Open(TestRun::Header(rank, world));
  int64_t t = 1000;
  for (int64_t s = 0; s < steps; ++s) {
    w->SetStep(s);
    w->BeginAt(trace::rec::kStepBegin, t).line().Field("epoch", 0);
    for (int k = 0; k < 3; ++k)
      WriteColl(w.get(), t += kMs, 0, s * 3 + k, "allreduce", "f32", 1000, "grad-bucket-0", kMs);
    for (const Message& m : messages(s)) {
      trace::records::P2PRecord r;
      r.pg = m.pg;
      r.op = m.op;
      r.peer = m.peer;
      r.group_peer = m.group_peer < 0 ? m.peer : m.group_peer;
      r.seq = m.seq;
      r.match_tag = m.tag;
      r.dtype = m.dtype;
      r.count = m.n;
      r.bytes = 4 * m.n;
      r.dur = kMs;
      r.tag = m.op == "send" ? "isend" : "irecv";
      auto record = w->BeginAt(r.kType, t += kMs);
      AppendFields(r, &record.line());
    }
    w->BeginAt(trace::rec::kStep, t).line().Field("dur", 5 * kMs);
    t += 10 * kMs;
  }
  w->SetStep(steps);
  TestRun::WriteEnd(w.get(), "ok", 0);
}

// Every rank sends `n` elements to every other rank each step and receives as many from
// each, recvs listed first; `edit` may change a rank's messages of a step.
std::function<std::vector<Message>(int64_t)> AllPairs(
    int rank, int world, const std::function<void(int64_t, std::vector<Message>*)>& edit = {}) {
  return [=](int64_t step) {
    std::vector<Message> out;
    for (int peer = 0; peer < world; ++peer)
      if (peer != rank) out.push_back({"recv", peer, step});
    for (int peer = 0; peer < world; ++peer)
      if (peer != rank) out.push_back({"send", peer, step});
    if (edit) edit(step, &out);
    return out;
  };
}

TEST(CollectiveMismatchAnalyzerTest, SendsThatMeetTheirRecvsGiveNothing) {
  TestRun run;
  for (int r = 0; r < 3; ++r) WriteMessages(&run, r, 3, 4, AllPairs(r, 3));
  EXPECT_TRUE(Analyze(run).empty());
}

// Two ranks: one pair, and nothing says which side computed its size wrong.
TEST(CollectiveMismatchAnalyzerTest, AMessageOfAnotherSizeBetweenTwoRanksHasNoMajority) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteMessages(&run, r, 2, 4, AllPairs(r, 2, [r](int64_t step, std::vector<Message>* m) {
      if (r == 1 && step >= 2) (*m)[1].n = 3;  // its send to rank 0, from step 2 on
    }));
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kCollectiveMismatch);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(f.step, 2);
  EXPECT_EQ(f.subject, "pg 0 p2p 1->0 #2");
  EXPECT_NE(f.summary.find("rank 1 sends f32 n=3 (isend) to rank 0, which expects f32 n=4 "
                           "(irecv) from it (no majority"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("; 2 messages of pg 0 disagree in all"), std::string::npos) << f.summary;
  EXPECT_EQ(Evidence(f, "p2p"), "true");
  EXPECT_EQ(Evidence(f, "pair_seq"), "2");
  EXPECT_EQ(Evidence(f, "majority"), "false");
  EXPECT_EQ(Evidence(f, "mismatched_messages"), "2");
  EXPECT_EQ(Evidence(f, "source"), "\"trace\"");
  EXPECT_EQ(f.evidence.Find("seq"), nullptr);  // no collective sequence number: a pair's
}

// Three ranks: rank 1's messages to both peers disagree, each peer's with rank 1 only.
TEST(CollectiveMismatchAnalyzerTest, TheRankWhoseMessagesNoPeerExpectsIsNamed) {
  TestRun run;
  for (int r = 0; r < 3; ++r) {
    WriteMessages(&run, r, 3, 4, AllPairs(r, 3, [r](int64_t step, std::vector<Message>* m) {
      if (r != 1 || step != 3) return;
      for (Message& x : *m)
        if (x.op == "send") x.n = 5;
    }));
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].step, 3);
  EXPECT_NE(findings[0].summary.find("rank 1 disagrees with the most peers"), std::string::npos)
      << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "disagreeing_pairs"), "2");
  EXPECT_EQ(Evidence(findings[0], "majority"), "true");
}

TEST(CollectiveMismatchAnalyzerTest, AMessageOfAnotherDtypeIsAMismatch) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteMessages(&run, r, 2, 2, AllPairs(r, 2, [r](int64_t step, std::vector<Message>* m) {
      if (r == 0 && step == 1) (*m)[1].dtype = "bf16";
    }));
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].summary.find("rank 0 sends bf16 n=4 (isend) to rank 1, which expects "
                                     "f32 n=4"),
            std::string::npos)
      << findings[0].summary;
}

// Messages pair by tag and by group, numbered apart; sub-group peers are named by their
// global ranks. Here ranks 1 and 3 form group 1 (group ranks 0 and 1) and exchange two
// tags in opposite orders: every message meets its own.
TEST(CollectiveMismatchAnalyzerTest, MessagesPairByGroupAndTagNotByOrderAcrossThem) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    WriteMessages(&run, r, 4, 2, [r](int64_t step) {
      std::vector<Message> m;
      if (r == 1) {
        m.push_back({"send", 3, step, 8, 1, 1, /*tag=*/7});
        m.push_back({"send", 3, step, 2, 1, 1, /*tag=*/9});
      } else if (r == 3) {
        m.push_back({"recv", 1, step, 2, 1, 0, /*tag=*/9});
        m.push_back({"recv", 1, step, 8, 1, 0, /*tag=*/7});
      }
      return m;
    });
  }
  EXPECT_TRUE(Analyze(run).empty());
}

// Gloo aborts the receiver of a message larger than its buffer: its recv never completes,
// and only its dump's pending entry says what it expected. The sender's completed send is
// compared with it.
TEST(CollectiveMismatchAnalyzerTest, ASendIsComparedWithTheReceiversPendingDumpEntry) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteMessages(&run, r, 2, 3, AllPairs(r, 2, [r](int64_t step, std::vector<Message>* m) {
      if (step != 2) return;
      if (r == 0) m->clear();     // died receiving: nothing recorded from here on
      if (r == 1) (*m)[1].n = 5;  // the oversized send, completed on the sender
    }));
  }
  run.WriteFile(trace::FlightDumpFileName(0),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":0,"
                "\"world_size\":2,\"reason\":\"terminate\",\"ts\":900000000000,\"entries\":[],"
                "\"p2p\":[{\"pg\":0,\"seq\":2,\"op\":\"recv\",\"peer\":1,\"dtype\":\"f32\","
                "\"n\":4,\"tag\":\"irecv\",\"step\":2,\"state\":\"started\",\"issued\":3},"
                "{\"pg\":0,\"seq\":-1,\"op\":\"recv\",\"peer\":-1,\"dtype\":\"f32\","
                "\"n\":4,\"tag\":\"irecv\",\"step\":2,\"state\":\"issued\",\"issued\":4}]}\n");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].step, 2);
  EXPECT_EQ(findings[0].subject, "pg 0 p2p 1->0 #2");
  EXPECT_EQ(Evidence(findings[0], "source"), "\"flight-dump\"");
  EXPECT_NE(findings[0].summary.find("which expects f32 n=4 (irecv)"), std::string::npos)
      << findings[0].summary;
}

// Both ranks die in step 2 (the receiver aborted, the sender stopped by the launcher) before
// either wrote that step's records: a request's record waits for the step's end. The
// sender's dump holds its send completed, the receiver's its recv pending: they are
// compared. A dump entry whose message the rank's trace did record counts once, not twice.
TEST(CollectiveMismatchAnalyzerTest, MessagesOnlyTheDumpsHoldAreComparedAndNoneTwice) {
  TestRun run;
  for (int r = 0; r < 2; ++r) {
    WriteMessages(&run, r, 2, 3, AllPairs(r, 2, [r](int64_t step, std::vector<Message>* m) {
      if (step == 2) m->clear();
      if (r == 1 && step == 1) (*m)[1].n = 6;  // also in its dump, completed
    }));
  }
  auto dump = [&](int rank, const std::string& p2p) {
    run.WriteFile(
        trace::FlightDumpFileName(rank),
        "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":" + std::to_string(rank) +
            ",\"world_size\":2,\"reason\":\"terminate\",\"ts\":900000000000,"
            "\"entries\":[],\"p2p\":[" +
            p2p + "]}\n");
  };
  const std::string entry = "{\"pg\":0,\"dtype\":\"f32\",\"tag\":\"isend\",\"issued\":3,";
  dump(1, entry +
              "\"seq\":1,\"op\":\"send\",\"peer\":0,\"n\":6,\"step\":1,"
              "\"state\":\"completed\"}," +
              entry +
              "\"seq\":2,\"op\":\"send\",\"peer\":0,\"n\":5,\"step\":2,"
              "\"state\":\"completed\"}");
  dump(0, entry +
              "\"seq\":1,\"op\":\"recv\",\"peer\":1,\"n\":4,\"step\":1,"
              "\"state\":\"completed\"}," +
              entry +
              "\"seq\":2,\"op\":\"recv\",\"peer\":1,\"n\":4,\"step\":2,"
              "\"state\":\"started\"}");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].subject, "pg 0 p2p 1->0 #1");  // the first, from the traces
  EXPECT_EQ(Evidence(findings[0], "mismatched_messages"), "2");
  EXPECT_EQ(Evidence(findings[0], "source"), "\"trace\"");
}

// A recv no send ever met (its sender died first, or never sent), pending in the dump: no
// mismatch, and no analyzer trips over it.
TEST(CollectiveMismatchAnalyzerTest, ARecvNoSendMetIsNoMismatch) {
  TestRun run;
  for (int r = 0; r < 2; ++r) WriteMessages(&run, r, 2, 2, AllPairs(r, 2));
  run.WriteFile(trace::FlightDumpFileName(0),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":0,"
                "\"world_size\":2,\"reason\":\"timeout\",\"ts\":900000000000,\"entries\":[],"
                "\"p2p\":[{\"pg\":0,\"seq\":2,\"op\":\"recv\",\"peer\":1,\"dtype\":\"f32\","
                "\"n\":4,\"tag\":\"recv\",\"step\":2,\"state\":\"started\",\"issued\":3}]}\n");
  EXPECT_TRUE(Analyze(run).empty());
  EXPECT_NO_THROW(RunCompare(run.dir()));
}

// ---- where the ranks' streams parted: call sites (`site` records, the `coll` records' site)

namespace parting {

constexpr int kGradsLine = 31;
constexpr int kMetricsLine = 35;

// A hand-written loop: each step all-reduces the gradients (line 31) and then the metrics
// (line 35), both 8 floats; `skips(step)` true: this rank leaves the metrics out that step.
// `grads_first` numbers the rank's sites in the other order (ids are each rank's own).
void WriteLoop(TestRun* run, int rank, int world, int steps,
               const std::function<bool(int64_t)>& skips, bool grads_first = true,
               bool rank_zero_line = false) {
  auto w = run->Open(TestRun::Header(rank, world));
  const int64_t grads_id = grads_first ? 1 : 2, metrics_id = grads_first ? 2 : 1;
  auto site = [&](int64_t id, int line) {
    trace::records::SiteRecord s{id, "/home/me/train.py", line, "train_step"};
    auto r = w->BeginAt(trace::rec::kSite, 900);
    AppendFields(s, &r.line());
  };
  site(grads_id, kGradsLine);
  site(metrics_id, kMetricsLine);
  if (rank_zero_line) site(3, 40);
  int64_t t = 1000, seq = 0;
  auto coll = [&](int64_t site_id) {
    trace::records::CollRecord c;
    c.seq = seq++;
    c.op = "allreduce";
    c.dtype = "f32";
    c.count = 8;
    c.bytes = 32;
    c.dur = kMs;
    c.tag = "allreduce";
    c.site = site_id;
    auto r = w->BeginAt(c.kType, t += kMs);
    AppendFields(c, &r.line());
  };
  for (int64_t s = 0; s < steps; ++s) {
    w->SetStep(s);
    // A broadcast from rank 0's own line in step 0, realigned at once: no parting.
    if (rank_zero_line && s == 0) coll(rank == 0 ? 3 : grads_id);
    coll(grads_id);
    if (!skips(s)) coll(metrics_id);
    t += 10 * kMs;
  }
  w->SetStep(steps);
  TestRun::WriteEnd(w.get(), "ok", 0);
}

}  // namespace parting

TEST(CollectiveMismatchAnalyzerTest, ASameSizeSkipAtThreeRanksNamesTheSkipperAndBothLines) {
  TestRun run;
  for (int r = 0; r < 3; ++r)
    parting::WriteLoop(
        &run, r, 3, 8, [r](int64_t s) { return r == 1 && s == 5; }, r != 2);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.subject, "pg 0 seq 11");
  EXPECT_EQ(f.step, 5);
  EXPECT_NE(f.summary.find("rank 1 issued the allreduce at train.py:31 (step 6) where ranks 0,2 "
                           "issued the one at train.py:35 (step 5): rank 1 skipped that allreduce"),
            std::string::npos)
      << f.summary;
  const trace::JsonValue* parted = f.evidence.Find("parted_at");
  ASSERT_NE(parted, nullptr);
  EXPECT_EQ(parted->Find("how")->ToJson(), "\"skipped\"");
  const trace::JsonValue* sides = parted->Find("sides");
  ASSERT_NE(sides, nullptr);
  ASSERT_EQ(sides->elements().size(), 2u);
  EXPECT_EQ(sides->elements()[0].Find("line")->as_int(), parting::kMetricsLine);
  EXPECT_EQ(sides->elements()[1].Find("line")->as_int(), parting::kGradsLine);
  EXPECT_EQ(sides->elements()[1].Find("file")->as_string(), "/home/me/train.py");
}

TEST(CollectiveMismatchAnalyzerTest, TwoRanksThatPartAreToldApartByTheGroupsHistory) {
  for (int skipper = 0; skipper < 2; ++skipper) {
    TestRun run;
    for (int r = 0; r < 2; ++r)
      parting::WriteLoop(&run, r, 2, 8, [&](int64_t s) { return r == skipper && s == 5; });
    const auto findings = Analyze(run);
    ASSERT_EQ(findings.size(), 1u) << skipper;
    EXPECT_EQ(findings[0].ranks, std::vector<int>{skipper});
    const trace::JsonValue* parted = findings[0].evidence.Find("parted_at");
    ASSERT_NE(parted, nullptr);
    EXPECT_EQ(parted->Find("majority")->ToJson(), "false");
    EXPECT_EQ(Evidence(findings[0], "majority"), "true");
    EXPECT_NE(findings[0].summary.find("skipped that allreduce"), std::string::npos);
  }
}

TEST(CollectiveMismatchAnalyzerTest, RanksOnTheSameLinesOrRealignedAtOnceHaveNoParting) {
  TestRun run;
  for (int r = 0; r < 3; ++r)
    parting::WriteLoop(
        &run, r, 3, 8, [](int64_t) { return false; }, r != 1, true);
  EXPECT_TRUE(Analyze(run).empty());
}

}  // namespace
}  // namespace dsdiag::analyzers
