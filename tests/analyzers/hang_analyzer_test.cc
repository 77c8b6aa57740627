#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/ghost_trace_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/json_line.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::kMs;
using testing::kSec;
using testing::kWall0;
using testing::RunOne;
using testing::TestRun;
using testing::WriteColl;
using testing::WritePhase;

constexpr int kBuckets = 3;
constexpr int kStuckStep = 5;
constexpr int64_t kStuckSeq = kStuckStep * kBuckets;  // 15: the first allreduce of step 5

std::vector<Finding> Analyze(const TestRun& run) { return RunOne(CreateHangAnalyzer(), run.dir()); }

std::vector<Finding> OfKind(const std::vector<Finding>& findings, std::string_view kind) {
  std::vector<Finding> out;
  for (const Finding& f : findings)
    if (f.kind == kind) out.push_back(f);
  return out;
}

// Rank-local clocks: each rank booted at another time; rank 1's wall clock is 2 s ahead.
int64_t Boot(int rank) { return (rank + 1) * 1000 * kSec; }
int64_t Skew(int rank) { return rank == 1 ? 2 * kSec : 0; }
int64_t Local(int rank, int64_t t) { return t + Boot(rank); }

int64_t StepStart(int64_t step) { return 10 * kMs + step * 100 * kMs; }
// When every rank enters allreduce k of `step` (true time).
int64_t Enter(int64_t step, int k) { return StepStart(step) + 16 * kMs + k * 7 * kMs; }

// Opens the rank's trace and writes `steps` whole steps (3 allreduces each on pg 0), then
// begins step `steps` and finishes its data and forward phases.
std::unique_ptr<trace::TraceWriter> WriteUpToStuckStep(TestRun* run, int rank, int world,
                                                       int steps = kStuckStep) {
  trace::TraceHeader h = TestRun::Header(rank, world);
  h.clock.mono_ns = Local(rank, 0);
  h.clock.wall_ns = kWall0 + Skew(rank);
  h.clock.offset_ns = Skew(rank);
  h.clock.offset_err_ns = 1000;
  auto w = run->Open(h);
  const test_support::StepTrace::Clock local = [rank](int64_t t) { return Local(rank, t); };
  for (int64_t s = 0; s <= steps; ++s) {
    test_support::StepTrace step(s, StepStart(s));
    step.Phase(trace::phase::kData, StepStart(s), 1 * kMs)
        .Phase(trace::phase::kForward, StepStart(s) + kMs, 15 * kMs);
    if (s == steps) {
      step.WriteBegun(w.get(), local);
      break;
    }
    for (int k = 0; k < kBuckets; ++k) {
      trace::records::CollRecord c;
      c.seq = s * kBuckets + k;
      c.op = "allreduce";
      c.dtype = "f32";
      c.count = 65536;
      c.bytes = 4 * c.count;
      c.dur = 1 * kMs;
      const std::string tag = "grad-bucket-" + std::to_string(k);
      c.tag = tag;
      step.Coll(c, Enter(s, k));
    }
    step.Phase(trace::phase::kBackward, StepStart(s) + 16 * kMs, 22 * kMs);
    step.record().dur = 41 * kMs;
    step.Write(w.get(), local);
  }
  return w;
}

// A waiter: backward of the stuck step done, then the probes' watchdog message (no pg/seq
// fields) after `timeout`, and an `end` with reason error.
void WriteWatchdogWaiter(TestRun* run, int rank, int world, int64_t timeout = 60 * kSec) {
  auto w = WriteUpToStuckStep(run, rank, world);
  WritePhase(w.get(), Local(rank, StepStart(kStuckStep) + 16 * kMs), "backward", 22 * kMs);
  const std::string message =
      "collective pg 0 seq " + std::to_string(kStuckSeq) +
      " (allreduce, grad-bucket-0) pending for 60.0 s, past the 60.0 s timeout";
  const int64_t fire = Enter(kStuckStep, 0) + timeout;
  w->BeginAt(trace::rec::kError, Local(rank, fire))
      .line()
      .Field("where", "watchdog")
      .Field("message", message);
  w->BeginAt(trace::rec::kEnd, Local(rank, fire + kMs))
      .line()
      .Field("reason", "error")
      .Field("status", 1)
      .Field("error", message);
}

// The culprit: stopped after the forward of the stuck step, without an end record.
void WriteSilentCulprit(TestRun* run, int rank, int world) { WriteUpToStuckStep(run, rank, world); }

struct DumpEntry {
  int pg = 0;
  int64_t seq = 0;
  std::string op = "allreduce";
  std::string tag = "grad-bucket-0";
  int64_t step = kStuckStep;
  std::string state = "started";
  int64_t issued = 0;  // true time
};

void WriteDump(TestRun* run, int rank, int world, std::string_view reason, int64_t ts,
               int64_t where_step, std::string_view where_phase,
               const std::vector<DumpEntry>& entries, std::string run_id = "test-run",
               const std::vector<trace::ThreadStack>& stacks = {}) {
  std::string out;
  trace::JsonLine l(&out);
  l.Field("schema", "dsdiag.flight/1")
      .Field("run_id", std::string_view(run_id))
      .Field("rank", rank)
      .Field("world_size", world)
      .Field("reason", reason)
      .Field("ts", Local(rank, ts));
  l.BeginObject("clock")
      .Field("mono", Local(rank, 0))
      .Field("wall", kWall0 + Skew(rank))
      .Field("offset", Skew(rank))
      .Field("offset_err", int64_t{1000})
      .EndObject();
  l.BeginObject("where").Field("step", where_step).Field("phase", where_phase).EndObject();
  l.BeginArray("entries");
  for (const DumpEntry& e : entries) {
    l.BeginObject()
        .Field("pg", e.pg)
        .Field("seq", e.seq)
        .Field("op", std::string_view(e.op))
        .Field("dtype", "f32")
        .Field("n", int64_t{65536})
        .Field("tag", std::string_view(e.tag))
        .Field("step", e.step)
        .Field("phase", "backward")
        .Field("state", std::string_view(e.state))
        .Field("issued", Local(rank, e.issued));
    if (e.state != "issued") l.Field("started", Local(rank, e.issued));
    if (e.state == "completed") l.Field("completed", Local(rank, e.issued + kMs));
    l.EndObject();
  }
  l.EndArray();
  if (!stacks.empty()) {
    l.BeginArray("stacks");
    for (const trace::ThreadStack& t : stacks) {
      l.BeginObject().Field("thread", std::string_view(t.thread)).BeginArray("frames");
      for (const std::string& frame : t.frames) l.Add(std::string_view(frame));
      l.EndArray().EndObject();
    }
    l.EndArray();
  }
  l.Finish();
  run->WriteFile(trace::FlightDumpFileName(rank), out);
}

// What a survivor's recorder holds when its watchdog fires: the last step's allreduces
// completed, the stuck step's first started and the others queued.
std::vector<DumpEntry> WaiterEntries() {
  std::vector<DumpEntry> entries;
  for (int k = 0; k < kBuckets; ++k) {
    entries.push_back({0, (kStuckStep - 1) * kBuckets + k, "allreduce",
                       "grad-bucket-" + std::to_string(k), kStuckStep - 1, "completed",
                       Enter(kStuckStep - 1, k)});
  }
  for (int k = 0; k < kBuckets; ++k) {
    entries.push_back({0, kStuckSeq + k, "allreduce", "grad-bucket-" + std::to_string(k),
                       kStuckStep, k == 0 ? "started" : "issued", Enter(kStuckStep, k)});
  }
  return entries;
}

TEST(HangAnalyzerTest, CleanRunGivesNothing) {
  TestRun run;
  for (int r = 0; r < 3; ++r) {
    auto w = WriteUpToStuckStep(&run, r, 3);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(HangAnalyzerTest, WatchdogMessagesNameTheCollectiveAndTheSilentRankIsTheCulprit) {
  TestRun run;
  for (int r : {0, 1, 3}) WriteWatchdogWaiter(&run, r, 4);
  WriteSilentCulprit(&run, 2, 4);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kHang);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.step, kStuckStep);
  EXPECT_EQ(f.subject, "allreduce pg 0 seq 15 (grad-bucket-0)");
  EXPECT_EQ(f.summary,
            "rank 2 never entered allreduce pg 0 seq 15 (grad-bucket-0) in step 5: its last "
            "record is from step 5 (last phase done: forward), then it stopped writing (no end "
            "record); ranks 0,1,3 waited in it");
  EXPECT_EQ(Evidence(f, "pg"), "0");
  EXPECT_EQ(Evidence(f, "seq"), "15");
  EXPECT_EQ(Evidence(f, "inferred"), "false");
  const trace::JsonValue& culprit = f.evidence.Find("culprits")->elements().at(0);
  EXPECT_EQ(culprit.Find("rank")->as_int(), 2);
  EXPECT_TRUE(culprit.Find("stopped_writing")->as_bool());
  EXPECT_EQ(culprit.Find("last_completed_seq")->as_int(), 14);
  EXPECT_EQ(culprit.Find("last_phase_done")->as_string(), "forward");
  const trace::JsonValue* waiters = f.evidence.Find("waiters");
  EXPECT_EQ(waiters->Find("count")->as_int(), 3);
  EXPECT_EQ(waiters->Find("ranks")->ToJson(), "[0,1,3]");
  EXPECT_TRUE(waiters->Find("since_rank0_ns")->is_null());  // no dump: entry time unknown
  EXPECT_EQ(waiters->Find("detail")->elements().at(0).Find("signal")->as_string(),
            "watchdog error");
}

// Four ranks: 0, 1 and 3 wait in seq 15 until their watchdogs fire and dump; rank 2 never
// entered it and was alive: its SIGTERM dump (the launcher tore the job down) has it loading
// data of step 5, in no collective.
void WriteDumpedCulpritRun(TestRun* run) {
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r : {0, 1, 3}) {
    WriteWatchdogWaiter(run, r, 4);
    WriteDump(run, r, 4, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  WriteSilentCulprit(run, 2, 4);
  WriteDump(run, 2, 4, "SIGTERM", fire + 5 * kSec, kStuckStep, "data",
            {{0, 14, "allreduce", "grad-bucket-2", 4, "completed", Enter(4, 2)}});
}

TEST(HangAnalyzerTest, FlightDumpsSaySinceWhenTheOthersWaitAndWhereTheCulpritWas) {
  TestRun run;
  WriteDumpedCulpritRun(&run);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.summary,
            "rank 2 never entered allreduce pg 0 seq 15 (grad-bucket-0) in step 5: its flight "
            "dump shows it in data of step 5; ranks 0,1,3 waited in it for up to 60.0 s");
  const trace::JsonValue& culprit = f.evidence.Find("culprits")->elements().at(0);
  EXPECT_FALSE(culprit.Find("stopped_writing")->as_bool());
  EXPECT_EQ(culprit.Find("dump_reason")->as_string(), "SIGTERM");
  EXPECT_EQ(culprit.Find("where_phase")->as_string(), "data");
  const trace::JsonValue* waiters = f.evidence.Find("waiters");
  // Every waiter entered at the same true time; rank 1's skewed clock maps to it too.
  EXPECT_EQ(waiters->Find("since_rank0_ns")->as_int(), kWall0 + Enter(kStuckStep, 0));
  for (const auto& row : waiters->Find("detail")->elements())
    EXPECT_EQ(row.Find("since_rank0_ns")->as_int(), kWall0 + Enter(kStuckStep, 0));
  EXPECT_DOUBLE_EQ(waiters->Find("waited_max_s")->as_double(), 60.0);
  EXPECT_DOUBLE_EQ(waiters->Find("since_run_start_s")->as_double(),
                   static_cast<double>(Enter(kStuckStep, 0)) / 1e9);
  ASSERT_TRUE(f.ts_rank.has_value());
  EXPECT_EQ(f.ts_ns, Local(*f.ts_rank, Enter(kStuckStep, 0)));
}

// A recv from `peer` that never came: the rank's watchdog ends it at `fire` (true time), and its
// dump lists the message pending (started at `since`) and no collective.
struct WaitedRecv {
  int peer;
  int64_t pair_seq, n, timeout_s, since;
};

void WriteMessageWaiter(TestRun* run, int rank, int world, const WaitedRecv& m, int64_t fire) {
  auto w = WriteUpToStuckStep(run, rank, world);
  const std::string secs = std::to_string(m.timeout_s) + ".0 s";
  const std::string message = "point-to-point recv from rank " + std::to_string(m.peer) +
                              " on group 0 (message " + std::to_string(m.pair_seq) +
                              " of the pair, recv) waited on for " + secs + ", past the " + secs +
                              " timeout";
  w->BeginAt(trace::rec::kError, Local(rank, fire))
      .line()
      .Field("where", "watchdog")
      .Field("message", message);
  w->BeginAt(trace::rec::kEnd, Local(rank, fire + kMs))
      .line()
      .Field("reason", "error")
      .Field("status", 1)
      .Field("error", message);
  const std::string at = std::to_string(Local(rank, m.since));
  run->WriteFile(
      trace::FlightDumpFileName(rank),
      "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":" + std::to_string(rank) +
          ",\"world_size\":" + std::to_string(world) +
          ",\"reason\":\"timeout\",\"ts\":" + std::to_string(Local(rank, fire)) +
          ",\"where\":{\"step\":5,\"phase\":\"forward\"},\"entries\":[],"
          "\"p2p\":[{\"pg\":0,\"seq\":" +
          std::to_string(m.pair_seq) + ",\"op\":\"recv\",\"peer\":" + std::to_string(m.peer) +
          ",\"dtype\":\"f32\",\"n\":" + std::to_string(m.n) +
          ",\"tag\":\"recv\",\"step\":5,\"phase\":\"forward\","
          "\"state\":\"started\",\"issued\":" +
          at + ",\"started\":" + at + "}]}\n");
}

// Rank 2 waits in a recv from rank 3 that never came (its watchdog timed out on the
// message, not on a collective) while ranks 0, 1 and 3 wait in allreduce seq 15: it is no
// witness of their collective — a message has no place in a group's sequence — but the rank
// that never joined it, and the finding says which message it waited in instead.
TEST(HangAnalyzerTest, ARankWaitingInAMessageIsACulpritSayingWhichPeerItWaitsFor) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r : {0, 1, 3}) {
    WriteWatchdogWaiter(&run, r, 4);
    WriteDump(&run, r, 4, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  WriteMessageWaiter(&run, 2, 4, {3, 4, 8, 60, Enter(kStuckStep, 0)}, fire);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{2});
  EXPECT_EQ(f.subject, "allreduce pg 0 seq 15 (grad-bucket-0)");
  EXPECT_NE(f.summary.find("it waited in a recv from rank 3 (pg 0, message 4 of the pair, recv)"),
            std::string::npos)
      << f.summary;
  const trace::JsonValue& culprit = f.evidence.Find("culprits")->elements().at(0);
  EXPECT_EQ(culprit.Find("waiting_in_message")->ToJson(),
            "{\"op\":\"recv\",\"peer\":3,\"pg\":0,\"pair_seq\":4,\"tag\":\"recv\",\"step\":5}");
}

// Two ranks: rank 1's watchdog ends it in a recv from rank 0 that never came; the launcher then
// stops rank 0 (SIGTERM) while it waits in allreduce seq 15, 6 s in, long before its own
// timeout. Rank 0 is still the hang's witness (its wait was only cut short), and rank 1 the
// rank that never joined. CI saw this order under load: without the rule, no hang finding.
TEST(HangAnalyzerTest, ARankStoppedWhileItsPeerTimedOutOnAMessageFromItWitnessesTheHang) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 10 * kSec;
  {
    auto w = WriteUpToStuckStep(&run, 0, 2);
    WritePhase(w.get(), Local(0, StepStart(kStuckStep) + 16 * kMs), "backward", 22 * kMs);
    TestRun::WriteEnd(w.get(), "signal", 143);
  }
  WriteDump(&run, 0, 2, "signal", Enter(kStuckStep, 0) + 6 * kSec, kStuckStep, "sync",
            WaiterEntries());
  WriteMessageWaiter(&run, 1, 2, {0, 0, 3, 10, Enter(kStuckStep, 0) - 4 * kSec}, fire);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.subject, "allreduce pg 0 seq 15 (grad-bucket-0)");
  EXPECT_NE(f.summary.find("it waited in a recv from rank 0 (pg 0, message 0 of the pair, recv)"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.evidence.ToJson().find("pending while rank 1 timed out on a message with it"),
            std::string::npos)
      << f.evidence.ToJson();
}

// Without a peer that timed out on a message with it, a short pending wait witnesses nothing:
// the same rank 0, stopped 6 s in, beside a rank 1 that crashed.
TEST(HangAnalyzerTest, AShortPendingWaitWithoutAPeerTimingOutIsNoWitness) {
  TestRun run;
  {
    auto w = WriteUpToStuckStep(&run, 0, 2);
    TestRun::WriteEnd(w.get(), "signal", 143);
  }
  WriteDump(&run, 0, 2, "signal", Enter(kStuckStep, 0) + 6 * kSec, kStuckStep, "sync",
            WaiterEntries());
  {
    auto w = WriteUpToStuckStep(&run, 1, 2);
    TestRun::WriteEnd(w.get(), "error", 1, "error", "ValueError: bad batch");
  }
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(HangAnalyzerTest, APythonCulpritsDumpGivesItsMainThreadsLine) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r : {0, 1, 3}) {
    WriteWatchdogWaiter(&run, r, 4);
    WriteDump(&run, r, 4, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  WriteSilentCulprit(&run, 2, 4);
  const std::vector<trace::ThreadStack> stacks = {
      {"Thread-1 (loader)", {"threading.py:995 in _bootstrap", "loader.py:10 in run"}},
      {"MainThread", {"train.py:50 in <module>", "train.py:31 in load_batch"}}};
  WriteDump(&run, 2, 4, "SIGTERM", fire + 5 * kSec, kStuckStep, "data",
            {{0, 14, "allreduce", "grad-bucket-2", 4, "completed", Enter(4, 2)}}, "test-run",
            stacks);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].summary.find("in data of step 5 (Python: train.py:31 in load_batch)"),
            std::string::npos)
      << findings[0].summary;
  const trace::JsonValue& culprit = findings[0].evidence.Find("culprits")->elements().at(0);
  EXPECT_EQ(culprit.Find("python_where")->as_string(), "train.py:31 in load_batch");
  ASSERT_EQ(culprit.Find("python_stack")->elements().size(), 2u);
  EXPECT_EQ(culprit.Find("python_stack")->elements()[0].as_string(), "train.py:50 in <module>");
}

TEST(HangAnalyzerTest, ACulpritBlockedInAnotherGroupSaysWhere) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r : {0, 1}) {
    WriteWatchdogWaiter(&run, r, 3);
    WriteDump(&run, r, 3, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  TestRun::WriteEnd(WriteUpToStuckStep(&run, 2, 3).get(), "signal", 143, "signal", "SIGTERM");
  WriteDump(&run, 2, 3, "SIGTERM", fire, kStuckStep, "forward",
            {{1, 3, "broadcast", "health", kStuckStep, "started", StepStart(kStuckStep) + kMs}});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_NE(findings[0].summary.find("it was blocked in broadcast pg 1 seq 3 (health); it ended "
                                     "with reason \"signal\""),
            std::string::npos)
      << findings[0].summary;
  const trace::JsonValue& culprit = findings[0].evidence.Find("culprits")->elements().at(0);
  EXPECT_EQ(culprit.Find("blocked_in")->ToJson(),
            "{\"pg\":1,\"seq\":3,\"op\":\"broadcast\",\"tag\":\"health\",\"step\":5}");
}

TEST(HangAnalyzerTest, ARankThatFinishedWhileOthersWaitIsTheCulprit) {
  // The classic uneven-data hang: rank 2 ran out of batches and left the loop cleanly.
  TestRun run;
  for (int r : {0, 1}) WriteWatchdogWaiter(&run, r, 3);
  TestRun::WriteEnd(WriteUpToStuckStep(&run, 2, 3).get(), "ok", 0);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_NE(findings[0].summary.find("it ended with reason \"ok\""), std::string::npos)
      << findings[0].summary;
  const trace::JsonValue& culprit = findings[0].evidence.Find("culprits")->elements().at(0);
  EXPECT_EQ(culprit.Find("end_reason")->as_string(), "ok");
  EXPECT_FALSE(culprit.Find("stopped_writing")->as_bool());
}

TEST(HangAnalyzerTest, PeerFailureAfterACrashIsNotAHang) {
  TestRun run;
  for (int r : {0, 2}) {
    auto w = WriteUpToStuckStep(&run, r, 3);
    const std::string message =
        "allreduce pg 0 seq 15 (grad-bucket-0) failed: connection closed by peer node0";
    w->BeginAt(trace::rec::kError, Local(r, Enter(kStuckStep, 0) + 2 * kMs))
        .line()
        .Field("where", "sync")
        .Field("message", message);
    TestRun::WriteEnd(w.get(), "peer-failure", 1, "error", message);
  }
  WriteSilentCulprit(&run, 1, 3);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(HangAnalyzerTest, WhenEveryRankWaitsThereIsNoCulprit) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r = 0; r < 3; ++r) {
    WriteWatchdogWaiter(&run, r, 3);
    WriteDump(&run, r, 3, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(Evidence(findings[0], "culprit_count"), "0");
  EXPECT_EQ(findings[0].summary.rfind("every rank still running entered allreduce pg 0 seq 15", 0),
            0u)
      << findings[0].summary;
  EXPECT_NE(findings[0].hint.find("transport"), std::string::npos);
}

// A waiter as `dsdiag train` writes one when its collective times out: the error (a Gloo
// timeout, naming no collective), then — when it could not publish it — the `error` record
// saying the store was unreachable, then the end record.
// `passed`: the rank completed the stuck step's first allreduce (its `coll` record is
// there) and waits in the second.
void WriteTrainWaiter(TestRun* run, int rank, int world, bool store_unreachable,
                      bool passed = false) {
  auto w = WriteUpToStuckStep(run, rank, world);
  if (passed) {
    WriteColl(w.get(), Local(rank, Enter(kStuckStep, 0)), 0, kStuckSeq, "allreduce", "f32", 65536,
              "grad-bucket-0");
  }
  WritePhase(w.get(), Local(rank, StepStart(kStuckStep) + 16 * kMs), "backward", 22 * kMs);
  const std::string message = "[gloo] Timed out waiting 5000ms for recv operation to complete";
  const int64_t fire = Enter(kStuckStep, 0) + 5 * kSec;
  w->BeginAt(trace::rec::kError, Local(rank, fire))
      .line()
      .Field("where", "sync")
      .Field("message", message);
  int64_t end = fire + kMs;
  if (store_unreachable) {
    end = fire + 2 * kSec + kMs;
    w->BeginAt(trace::rec::kError, Local(rank, fire + 2 * kSec))
        .line()
        .Field("where", "store")
        .Field("message",
               "could not reach the rendezvous store at 10.0.0.1:29500 to publish this rank's "
               "error (gave up after 2.0 s)")
        .Field("store_unreachable", true)
        .Field("store", "10.0.0.1:29500")
        .Field("tried_ms", int64_t{2001})
        .Field("store_error", "no answer within the bound");
  }
  w->BeginAt(trace::rec::kEnd, Local(rank, end))
      .line()
      .Field("reason", "error")
      .Field("status", 1)
      .Field("error", message);
}

// Every rank waits in the stuck collective; `cut` are the ranks that could not reach the
// store afterwards.
void WriteCutLinkRun(TestRun* run, int world, const std::vector<int>& cut) {
  const int64_t fire = Enter(kStuckStep, 0) + 5 * kSec;
  for (int r = 0; r < world; ++r) {
    const bool unreachable = std::find(cut.begin(), cut.end(), r) != cut.end();
    WriteTrainWaiter(run, r, world, unreachable);
    WriteDump(run, r, world, "error", fire + (unreachable ? 2 * kSec : kMs), kStuckStep, "sync",
              WaiterEntries());
  }
}

TEST(HangAnalyzerTest, ARankThatCouldNotReachTheStoreWhileTheOthersDidIsCutOff) {
  TestRun run;
  WriteCutLinkRun(&run, 2, {1});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(Evidence(f, "culprit_count"), "1");
  EXPECT_EQ(Evidence(f, "cut_off"), "{\"ranks\":[1],\"reached\":[0],\"store\":\"10.0.0.1:29500\"}");
  EXPECT_EQ(f.summary.rfind("rank 1 was cut off from the others in allreduce pg 0 seq 15 "
                            "(grad-bucket-0) in step 5: it could not reach the store at "
                            "10.0.0.1:29500 after its timeout while rank 0 "
                            "reached it: its host's link or network is cut; ",
                            0),
            0u)
      << f.summary;
  const std::string culprits = Evidence(f, "culprits");
  EXPECT_NE(culprits.find("\"store_unreachable\":true"), std::string::npos) << culprits;
  EXPECT_NE(culprits.find("\"store_tried_s\":2.001"), std::string::npos) << culprits;
  EXPECT_NE(f.hint.find("link or network"), std::string::npos);
  // Both ranks entered and waited in it.
  EXPECT_NE(Evidence(f, "waiters").find("\"ranks\":[0,1]"), std::string::npos)
      << Evidence(f, "waiters");
}

TEST(HangAnalyzerTest, AStoreNobodyReachedOrOnlyItsHostMissedNamesNoCutOffRank) {
  for (const std::vector<int>& cut :
       {std::vector<int>{0, 1, 2}, std::vector<int>{0}, std::vector<int>{0, 2}}) {
    SCOPED_TRACE("unreachable from ranks " + FormatRankRanges(cut));
    TestRun run;
    WriteCutLinkRun(&run, 3, cut);
    const auto findings = Analyze(run);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings[0].ranks, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(Evidence(findings[0], "culprit_count"), "0");
    EXPECT_EQ(Evidence(findings[0], "cut_off"), "");
  }
  // Without the store record, every rank waits: no culprit, as before.
  TestRun run;
  WriteCutLinkRun(&run, 2, {});
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(Evidence(findings[0], "culprit_count"), "0");
}

TEST(HangAnalyzerTest, ATimeoutThatNamesNoCollectiveIsInferredFromProgress) {
  TestRun run;
  for (int r : {0, 1}) {
    auto w = WriteUpToStuckStep(&run, r, 3);
    const std::string message = "Gloo: Timed out waiting 1800000ms for recv operation to complete";
    w->BeginAt(trace::rec::kError, Local(r, Enter(kStuckStep, 0) + 1800 * kSec))
        .line()
        .Field("where", "trainer")
        .Field("message", message);
    TestRun::WriteEnd(w.get(), "error", 1, "error", message);
  }
  WriteSilentCulprit(&run, 2, 3);
  // Rank 2 did not even finish step 4: it is behind.
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].subject, "collective pg 0 seq 15");
  EXPECT_EQ(Evidence(findings[0], "inferred"), "true");
  EXPECT_NE(findings[0].summary.find("inferred"), std::string::npos);
}

TEST(HangAnalyzerTest, TimeoutErrorsWithFieldsOrOnlyAnEndSayingTimeoutAreWitnesses) {
  // synth's style: the error record carries pg, seq, op and tag; no end record follows.
  TestRun run;
  for (int r : {0, 1}) {
    auto w = WriteUpToStuckStep(&run, r, 3);
    w->BeginAt(trace::rec::kError, Local(r, Enter(kStuckStep, 0) + 61 * kSec))
        .line()
        .Field("where", "sync")
        .Field("message",
               "collective timeout: allreduce pg 0 seq 15 (grad-bucket-0) not "
               "completed after 60 s")
        .Field("pg", 0)
        .Field("seq", kStuckSeq)
        .Field("op", "allreduce")
        .Field("tag", "grad-bucket-0");
  }
  WriteSilentCulprit(&run, 2, 3);
  auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
  EXPECT_EQ(findings[0].subject, "allreduce pg 0 seq 15 (grad-bucket-0)");

  // No error record at all: only the end says it timed out (the culprit has no trace).
  TestRun run2;
  for (int r : {0, 1}) {
    auto w = WriteUpToStuckStep(&run2, r, 2);
    TestRun::WriteEnd(w.get(), "error", 1, "error", "NCCL watchdog: collective operation timeout");
  }
  findings = Analyze(run2);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, kind::kHang);
}

TEST(HangAnalyzerTest, ALongPendingEntryInASignalDumpIsAHangWithoutAWatchdog) {
  for (const int64_t pending : {120 * kSec, 1 * kSec}) {
    TestRun run;
    for (int r : {0, 1}) {
      auto w = WriteUpToStuckStep(&run, r, 3);
      TestRun::WriteEnd(w.get(), "signal", 143, "signal", "SIGTERM");
      WriteDump(&run, r, 3, "SIGTERM", Enter(kStuckStep, 0) + pending, kStuckStep, "sync",
                WaiterEntries());
    }
    WriteSilentCulprit(&run, 2, 3);
    const auto findings = Analyze(run);
    if (pending > 60 * kSec) {
      ASSERT_EQ(findings.size(), 1u);
      EXPECT_EQ(findings[0].ranks, std::vector<int>{2});
      EXPECT_EQ(Evidence(findings[0], "seq"), "15");
    } else {
      EXPECT_TRUE(findings.empty()) << "pending for 1 s is not a hang";
    }
  }
}

TEST(HangAnalyzerTest, MalformedAndForeignDumpsAreTraceCorruptWarningsNotCrashes) {
  TestRun run;
  for (int r = 0; r < 4; ++r) {
    auto w = WriteUpToStuckStep(&run, r, 4);
    TestRun::WriteEnd(w.get(), "ok", 0);
  }
  run.WriteFile(trace::FlightDumpFileName(0), "{\"schema\":\"dsdiag.flight/1\",\"rank\":0,}");
  WriteDump(&run, 1, 4, "timeout", 200 * kSec, kStuckStep, "sync", WaiterEntries(), "old-run");
  run.WriteFile(trace::FlightDumpFileName(2), "");
  run.WriteFile(trace::FlightDumpFileName(3),
                "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"test-run\",\"rank\":3,\"ts\":1,"
                "\"reason\":\"SIGUSR1\",\"entries\":[{\"pg\":0,\"seq\":1,\"state\":\"completed\"},"
                "{\"pg\":0,\"state\":\"started\"}]}");
  // The run loader leaves the bad dumps out, trace-corrupt reports them, hang goes on.
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(CreateTraceCorruptAnalyzer());
  analyzers.push_back(CreateHangAnalyzer());
  const auto findings = RunCompareWith(run.dir(), analyzers).findings;
  EXPECT_TRUE(OfKind(findings, kind::kHang).empty());  // the foreign timeout dump is left out
  const auto corrupt = OfKind(findings, kind::kTraceCorrupt);
  ASSERT_EQ(corrupt.size(), 4u);
  for (const Finding& f : corrupt) EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(corrupt[0].subject, "flight-rank-00000.json");
  EXPECT_NE(corrupt[0].summary.find("flight-rank-00000.json:1:38: expected"), std::string::npos)
      << corrupt[0].summary;
  EXPECT_NE(corrupt[1].summary.find("belongs to another run (run_id old-run"), std::string::npos)
      << corrupt[1].summary;
  EXPECT_NE(corrupt[2].summary.find("expected a JSON object"), std::string::npos)
      << corrupt[2].summary;
  EXPECT_NE(corrupt[3].summary.find("1 malformed entries"), std::string::npos)
      << corrupt[3].summary;
  EXPECT_NE(corrupt[3].summary.find("entries[1]: expected integer field \"seq\""),
            std::string::npos)
      << corrupt[3].summary;
}

// --- the hang follow-on pass: the waiters' own failures are the hang's victims -----------

std::vector<Finding> AnalyzeWithRankDied(const TestRun& run) {
  std::vector<std::unique_ptr<Analyzer>> analyzers;
  analyzers.push_back(CreateRankDiedAnalyzer());
  analyzers.push_back(CreateHangAnalyzer());
  return RunCompareWith(run.dir(), analyzers).findings;
}

std::vector<std::string> Serious(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings)
    if (f.severity != Severity::kInfo) out.push_back(f.kind + " " + FormatRankRanges(f.ranks));
  return out;
}

TEST(HangFollowOnTest, TheWaitersTimeoutsAreFollowOnsAndTheCulpritKeepsItsOwnFinding) {
  TestRun run;
  WriteDumpedCulpritRun(&run);
  const auto findings = AnalyzeWithRankDied(run);
  // One error for the hang, the culprit's own death beside it; the waiters are victims.
  EXPECT_EQ(Serious(findings), (std::vector<std::string>{"hang 2", "rank-died 2"}));
  int follow_ons = 0;
  for (const Finding& f : findings) {
    if (f.kind == kind::kRankDied && f.ranks == std::vector<int>{2}) {
      EXPECT_EQ(f.summary, "rank 2 stopped in data of step 5 without an end record");
    }
    if (f.severity != Severity::kInfo) continue;
    ++follow_ons;
    EXPECT_EQ(f.kind, kind::kRankDied);
    EXPECT_EQ(Evidence(f, "follow_on_of"),
              "{\"kind\":\"hang\",\"subject\":\"allreduce pg 0 seq 15 (grad-bucket-0)\","
              "\"culprits\":[2]}");
    EXPECT_NE(f.summary.find("; a follow-on of the hang: rank 2 never entered allreduce pg 0 "
                             "seq 15 (grad-bucket-0)"),
              std::string::npos)
        << f.summary;
    EXPECT_EQ(f.summary.find(" failed in sync of step 5: collective pg 0 seq 15"), 6u) << f.summary;
  }
  EXPECT_EQ(follow_ons, 3);
}

TEST(HangFollowOnTest, WithoutACulpritEveryTimeoutStaysAnError) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 60 * kSec;
  for (int r = 0; r < 3; ++r) {
    WriteWatchdogWaiter(&run, r, 3);
    WriteDump(&run, r, 3, "timeout", fire, kStuckStep, "sync", WaiterEntries());
  }
  EXPECT_EQ(Serious(AnalyzeWithRankDied(run)),
            (std::vector<std::string>{"hang 0-2", "rank-died 0", "rank-died 1", "rank-died 2"}));
}

TEST(HangFollowOnTest, ACutOffRankLeavesOneErrorTheHangNamingIt) {
  TestRun run;
  WriteCutLinkRun(&run, 3, {1, 2});
  const auto findings = AnalyzeWithRankDied(run);
  EXPECT_EQ(Serious(findings), (std::vector<std::string>{"hang 1,2"}));
  int cut_follow_ons = 0;
  for (const Finding& f : findings) {
    if (f.kind != kind::kRankDied) continue;
    EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
    if (f.ranks != std::vector<int>{0}) {
      ++cut_follow_ons;
      EXPECT_NE(f.summary.find("; a follow-on of the hang: its host was cut off from the others"),
                std::string::npos)
          << f.summary;
    }
    if (f.ranks == std::vector<int>{0}) {
      EXPECT_NE(f.summary.find("; a follow-on of the hang: ranks 1,2 were cut off from the "
                               "others in allreduce pg 0 seq 15 (grad-bucket-0)"),
                std::string::npos)
          << f.summary;
    }
  }
  EXPECT_EQ(cut_follow_ons, 2);
}

// A link cut mid-allreduce can leave one side done with it: rank 0 completed seq 15 and
// then waited in seq 16 for rank 1, which never finished seq 15 and could not reach the
// store after its timeout. Rank 1 is still the one culprit, cut off, and rank 0's timeout in
// the later collective is a follow-on of the hang like a waiter's in seq 15.
TEST(HangFollowOnTest, ARankDoneWithTheStuckCollectiveBeforeTheCutIsAFollowOnToo) {
  TestRun run;
  const int64_t fire = Enter(kStuckStep, 0) + 5 * kSec;
  WriteTrainWaiter(&run, 0, 2, /*store_unreachable=*/false, /*passed=*/true);
  std::vector<DumpEntry> passed = WaiterEntries();
  for (DumpEntry& e : passed) {
    if (e.seq == kStuckSeq) e.state = "completed";
    if (e.seq == kStuckSeq + 1) e.state = "started";
  }
  WriteDump(&run, 0, 2, "error", fire + kMs, kStuckStep, "sync", passed);
  WriteTrainWaiter(&run, 1, 2, /*store_unreachable=*/true);
  WriteDump(&run, 1, 2, "error", fire + 2 * kSec, kStuckStep, "sync", WaiterEntries());

  const auto findings = AnalyzeWithRankDied(run);
  EXPECT_EQ(Serious(findings), (std::vector<std::string>{"hang 1"}));
  const auto hangs = OfKind(findings, kind::kHang);
  ASSERT_EQ(hangs.size(), 1u);
  EXPECT_EQ(Evidence(hangs[0], "seq"), std::to_string(kStuckSeq));
  EXPECT_EQ(Evidence(hangs[0], "cut_off"),
            "{\"ranks\":[1],\"reached\":[0],\"store\":\"10.0.0.1:29500\"}");
  for (const Finding& f : OfKind(findings, kind::kRankDied)) {
    if (f.ranks != std::vector<int>{0}) continue;
    EXPECT_NE(Evidence(f, "waiting_in").find("\"seq\":16"), std::string::npos)
        << Evidence(f, "waiting_in");
    EXPECT_NE(f.summary.find("; a follow-on of the hang: rank 1 was cut off from the others"),
              std::string::npos)
        << f.summary;
  }
}

Finding RankDied(int rank, Severity severity, std::optional<int64_t> seq) {
  Finding f;
  f.kind = std::string(kind::kRankDied);
  f.severity = severity;
  f.ranks = {rank};
  f.summary = "rank " + std::to_string(rank) + " failed";
  if (seq) {
    trace::JsonValue w = trace::JsonValue::Object();
    w.Set("pg", 0);
    w.Set("seq", *seq);
    f.evidence.Set("waiting_in", std::move(w));
  }
  return f;
}

TEST(HangFollowOnTest, OnlyRankDiedFindingsOfNonCulpritsWaitingInTheSameCollectiveChange) {
  Finding hang;
  hang.kind = std::string(kind::kHang);
  hang.severity = Severity::kError;
  hang.ranks = {2};
  hang.subject = "allreduce pg 0 seq 15 (grad-bucket-0)";
  hang.evidence.Set("pg", 0);
  hang.evidence.Set("seq", int64_t{15});
  hang.evidence.Set("culprit_count", int64_t{1});
  std::vector<Finding> findings = {hang,
                                   RankDied(0, Severity::kError, 15),    // a victim
                                   RankDied(1, Severity::kError, 14),    // an earlier one
                                   RankDied(2, Severity::kError, 15),    // the culprit
                                   RankDied(3, Severity::kWarning, {}),  // says nothing
                                   RankDied(4, Severity::kWarning, 15)};
  Finding other = RankDied(5, Severity::kError, 15);
  other.kind = std::string(kind::kCollectiveMismatch);
  findings.push_back(other);
  CreateHangFollowOnPass()->Apply(RunContext{}, &findings);
  std::vector<Severity> severities;
  for (const Finding& f : findings) severities.push_back(f.severity);
  EXPECT_EQ(severities, (std::vector<Severity>{Severity::kError, Severity::kInfo, Severity::kError,
                                               Severity::kError, Severity::kWarning,
                                               Severity::kInfo, Severity::kError}));
  EXPECT_EQ(findings[1].summary,
            "rank 0 failed; a follow-on of the hang: rank 2 never entered allreduce pg 0 seq 15 "
            "(grad-bucket-0)");
  EXPECT_EQ(Evidence(findings[2], "follow_on_of"), "");

  // A later collective of the same group waits for the same culprit; another group's does not.
  std::vector<Finding> later = {hang, RankDied(0, Severity::kError, 16),
                                RankDied(1, Severity::kError, 16)};
  trace::JsonValue other_group = trace::JsonValue::Object();
  other_group.Set("pg", 1);
  other_group.Set("seq", int64_t{16});
  later[2].evidence.Set("waiting_in", std::move(other_group));
  CreateHangFollowOnPass()->Apply(RunContext{}, &later);
  EXPECT_EQ(later[1].severity, Severity::kInfo);
  EXPECT_EQ(later[2].severity, Severity::kError);

  // The culprit stopped by SIGTERM once the job hung is a follow-on; one that crashed is not.
  std::vector<Finding> culprit = {hang, RankDied(2, Severity::kError, {}),
                                  RankDied(2, Severity::kError, {})};
  culprit[1].evidence.Set("signal", "SIGTERM");
  culprit[2].evidence.Set("signal", "SIGSEGV");
  CreateHangFollowOnPass()->Apply(RunContext{}, &culprit);
  EXPECT_EQ(culprit[1].severity, Severity::kInfo);
  EXPECT_EQ(culprit[1].summary,
            "rank 2 failed; stopped after it hung the job: see the hang finding");
  EXPECT_NE(Evidence(culprit[1], "follow_on_of"), "");
  EXPECT_EQ(culprit[2].severity, Severity::kError);

  // A hang whose every rank waits explains nobody's failure.
  std::vector<Finding> no_culprit = {hang, RankDied(0, Severity::kError, 15)};
  no_culprit[0].evidence.Set("culprit_count", int64_t{0});
  CreateHangFollowOnPass()->Apply(RunContext{}, &no_culprit);
  EXPECT_EQ(no_culprit[1].severity, Severity::kError);
}

}  // namespace
}  // namespace dsdiag::analyzers
