#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"
#include "tests/analyzers/analyzer_test_util.h"
#include "tests/analyzers/test_run.h"
#include "trace/clock.h"
#include "trace/json_line.h"
#include "trace/record_types.h"
#include "trace/records/end_record.h"
#include "trace/run_files.h"

namespace dsdiag::analyzers {
namespace {

using testing::Evidence;
using testing::RunOne;
using testing::TestRun;

std::vector<Finding> Analyze(const TestRun& run) {
  return RunOne(CreateRankDiedAnalyzer(), run.dir());
}

// A rank that runs `steps` steps, begins one more, finishes `phase` in it and stops dead.
void WriteDeadRank(TestRun* run, int rank, int world_size, int steps, std::string_view phase) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
  w->Begin(trace::rec::kPhase).line().Field("name", phase).Field("dur", int64_t{10});
}

void WriteEndedRank(TestRun* run, int rank, int world_size, int steps, std::string_view reason,
                    int status, std::string_view key = {}, std::string_view detail = {}) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  TestRun::WriteEnd(w.get(), reason, status, key, detail);
}

TEST(RankDiedAnalyzerTest, CleanRunGivesNothing) {
  TestRun run;
  for (int r = 0; r < 3; ++r) run.WriteCleanRank(TestRun::Header(r, 3), 2);
  EXPECT_TRUE(Analyze(run).empty());
}

TEST(RankDiedAnalyzerTest, TraceWithoutEndIsAnErrorAtTheLastStepBegun) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteDeadRank(&run, 1, 2, 3, "forward");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, kind::kRankDied);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.summary,
            "rank 1 stopped during step 3 without an end record (last phase done: forward)");
  EXPECT_EQ(Evidence(f, "file"), "\"rank-00001.jsonl\"");
  EXPECT_EQ(Evidence(f, "last_step_done"), "2");
  EXPECT_EQ(Evidence(f, "last_phase_done"), "\"forward\"");
  EXPECT_EQ(Evidence(f, "peers_max_step"), "4");
  EXPECT_EQ(Evidence(f, "pid"), "101");
  EXPECT_EQ(f.ts_rank, 1);
  EXPECT_TRUE(f.ts_ns.has_value());
}

TEST(RankDiedAnalyzerTest, MissingRanksAreOneErrorSayingThereIsNoFile) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 4), 1);
  run.WriteCleanRank(TestRun::Header(2, 4), 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_FALSE(findings[0].step.has_value());
  EXPECT_EQ(Evidence(findings[0], "expected_files"), "[\"rank-00001.jsonl\",\"rank-00003.jsonl\"]");
  EXPECT_NE(findings[0].summary.find("no trace"), std::string::npos);
}

TEST(RankDiedAnalyzerTest, SignalAndErrorEndsAreErrorsNamingTheCause) {
  TestRun run;
  // Rank 0 stopped on SIGTERM before rank 1's error: both are causes of their own.
  WriteEndedRank(&run, 0, 3, 1, "signal", 143, "signal", "SIGTERM");
  WriteEndedRank(&run, 1, 3, 2, "error", 1, "error", "CUDA out of memory");
  run.WriteCleanRank(TestRun::Header(2, 3), 3);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  // Rank 0 stopped during step 0, rank 1 failed during step 1: by step.
  EXPECT_EQ(findings[0].ranks, std::vector<int>{0});
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_NE(findings[0].summary.find("SIGTERM"), std::string::npos) << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "status"), "143");
  EXPECT_EQ(findings[1].ranks, std::vector<int>{1});
  EXPECT_NE(findings[1].summary.find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(Evidence(findings[1], "error"), "\"CUDA out of memory\"");
}

// The classic ones get a hint of their own: DDP's `module.` prefix between a checkpoint
// and the model, and a map_location naming a device the rank lacks.
TEST(RankDiedAnalyzerTest, ClassicCheckpointErrorsGetTheirOwnHint) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 1, "error", 1, "error",
                 "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in "
                 "state_dict: \"body.weight\", \"body.bias\". \n\tUnexpected key(s) in "
                 "state_dict: \"module.body.weight\", \"module.body.bias\". ");
  WriteEndedRank(&run, 1, 2, 1, "error", 1, "error",
                 "RuntimeError: Attempting to deserialize object on CUDA device 3 but "
                 "torch.cuda.device_count() is 2.");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(Evidence(findings[0], "known_cause"), "\"ddp-module-prefix\"");
  EXPECT_NE(findings[0].hint.find("model.module.state_dict()"), std::string::npos);
  EXPECT_EQ(Evidence(findings[1], "known_cause"), "\"map-location\"");
  EXPECT_NE(findings[1].hint.find("map_location"), std::string::npos);
}

TEST(RankDiedAnalyzerTest, KeysThatDifferByMoreThanThePrefixAreNotThePrefixMistake) {
  TestRun run;
  WriteEndedRank(&run, 0, 1, 1, "error", 1, "error",
                 "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in "
                 "state_dict: \"head.weight\". \n\tUnexpected key(s) in state_dict: "
                 "\"module.body.weight\". ");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].evidence.Find("known_cause"), nullptr);
  EXPECT_NE(findings[0].hint.find("evidence.error"), std::string::npos);
}

// Uneven inputs: rank 0 ran out of batches and ended cleanly; rank 1 went on and lost it in
// the next step's allreduce. No rank failed of its own: the one that finished early is named.
TEST(RankDiedAnalyzerTest, ARankThatFinishedEarlyIsNamedWhenTheOthersLostIt) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteEndedRank(&run, 1, 2, 6, "error", 1, "error",
                 "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u) << findings[0].summary;
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{0});
  EXPECT_EQ(findings[0].step, 5);
  EXPECT_EQ(findings[0].summary,
            "rank 0 finished cleanly after step 4 while rank 1 went on to step 5 and lost it: the "
            "ranks ran different numbers of steps (uneven inputs)");
  EXPECT_EQ(Evidence(findings[0], "lost_peers"), "[1]");
}

// dsdiag run and torchrun stop the other ranks once one exits on an error: their SIGTERM
// is the error's consequence.
TEST(RankDiedAnalyzerTest, SigtermAfterAnotherRanksErrorIsAFollowOnInfo) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 2, "signal", 143, "signal", "SIGTERM");
  WriteEndedRank(&run, 1, 3, 1, "error", 1, "error", "ValueError: bad batch");
  run.WriteCleanRank(TestRun::Header(2, 3), 3);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[1].ranks, std::vector<int>{0});
  EXPECT_EQ(findings[1].severity, Severity::kInfo);
  EXPECT_EQ(Evidence(findings[1], "after_failures_of"), "[1]");
  EXPECT_NE(findings[1].summary.find("after rank 1 failed: a follow-on"), std::string::npos)
      << findings[1].summary;
}

TEST(RankDiedAnalyzerTest, SigtermAfterASilentDeathIsAFollowOnInfo) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 5, "signal", 143, "signal", "SIGTERM");
  WriteDeadRank(&run, 1, 3, 4, "forward");
  WriteEndedRank(&run, 2, 3, 5, "signal", 143, "signal", "SIGKILL");
  auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 3u);
  // The silent death and the SIGKILL are errors; the SIGTERM the launcher sent is not.
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[1].severity, Severity::kError);
  const Finding& follow_on = findings[2];
  EXPECT_EQ(follow_on.severity, Severity::kInfo);
  EXPECT_EQ(follow_on.ranks, std::vector<int>{0});
  EXPECT_EQ(Evidence(follow_on, "after_deaths_of"), "[1]");
  // The dead rank's finding says what the others saw.
  EXPECT_EQ(Evidence(findings[0], "survivors"),
            "[{\"rank\":0,\"ended\":\"signal\",\"detail\":\"SIGTERM\",\"last_step_begun\":4},"
            "{\"rank\":2,\"ended\":\"signal\",\"detail\":\"SIGKILL\",\"last_step_begun\":4}]");
  EXPECT_NE(follow_on.summary.find("follow-on"), std::string::npos) << follow_on.summary;
}

TEST(RankDiedAnalyzerTest, ManyRanksEndingAlikeAreOneFinding) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 12), 3);
  for (int r = 1; r < 12; ++r)
    WriteEndedRank(&run, r, 12, 3, "error", 1, "error", "collective timeout: allreduce seq 9");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks.size(), 11u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_NE(findings[0].summary.find("11 ranks (1-11)"), std::string::npos) << findings[0].summary;
  EXPECT_NE(findings[0].summary.find("collective timeout"), std::string::npos);
  EXPECT_EQ(Evidence(findings[0], "ranks_alike"), "11");
}

TEST(RankDiedAnalyzerTest, PeerFailureIsInfoWhenTheFailureIsHere) {
  TestRun run;
  WriteEndedRank(&run, 0, 3, 2, "peer-failure", 1);
  WriteDeadRank(&run, 1, 3, 2, "backward");
  WriteEndedRank(&run, 2, 3, 2, "peer-failure", 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding& peers = findings[1].severity == Severity::kInfo ? findings[1] : findings[0];
  EXPECT_EQ(peers.severity, Severity::kInfo);
  EXPECT_EQ(peers.ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(Evidence(peers, "failed_ranks"), "[1]");
}

TEST(RankDiedAnalyzerTest, PeerFailureWithoutAFailedRankIsAWarning) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 2, "peer-failure", 1);
  run.WriteCleanRank(TestRun::Header(1, 2), 2);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{0});
}

TEST(RankDiedAnalyzerTest, EveryRankStoppingSilentlyIsOneFinding) {
  TestRun run;
  WriteDeadRank(&run, 0, 3, 4, "sync");
  WriteDeadRank(&run, 1, 3, 2, "forward");
  WriteDeadRank(&run, 2, 3, 4, "sync");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(f.step, 2);  // the earliest
  EXPECT_EQ(f.summary.rfind("all 3 ranks", 0), 0u) << f.summary;
  EXPECT_EQ(Evidence(f, "count"), "3");
  // The rank that stopped first is listed first.
  EXPECT_EQ(Evidence(f, "earliest").rfind("[{\"rank\":1,", 0), 0u) << Evidence(f, "earliest");
}

TEST(RankDiedAnalyzerTest, UnknownEndReasonIsAWarning) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 1, "destroyed", 0);
  run.WriteCleanRank(TestRun::Header(1, 2), 1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(Evidence(findings[0], "reason"), "\"destroyed\"");
}

// --- signals, flight dumps and what the rank was waiting in ------------------------------

// A dump written after everything in the traces (`late`), or long before (a stale one).
int64_t DumpTs(bool late) { return late ? trace::MonotonicNs() + int64_t{1000000000} : 1; }

// flight-rank-<R>.json: `where` = (step, phase); one pending allreduce `pending_seq` (none
// when negative) after a completed one.
void WriteDump(TestRun* run, int rank, int world, std::string_view reason, int64_t ts, int64_t step,
               std::string_view phase, int64_t pending_seq, std::string_view run_id = "test-run") {
  std::string out;
  trace::JsonLine l(&out);
  l.Field("schema", "dsdiag.flight/1")
      .Field("run_id", run_id)
      .Field("rank", rank)
      .Field("world_size", world)
      .Field("reason", reason)
      .Field("ts", ts);
  l.BeginObject("where").Field("step", step).Field("phase", phase).EndObject();
  l.BeginArray("entries");
  l.BeginObject()
      .Field("pg", 0)
      .Field("seq", pending_seq < 0 ? int64_t{3} : pending_seq - 1)
      .Field("op", "allreduce")
      .Field("tag", "grad-bucket-0")
      .Field("state", "completed")
      .EndObject();
  if (pending_seq >= 0) {
    l.BeginObject()
        .Field("pg", 0)
        .Field("seq", pending_seq)
        .Field("op", "allreduce")
        .Field("dtype", "f32")
        .Field("n", int64_t{1024})
        .Field("tag", "grad-bucket-1")
        .Field("step", step)
        .Field("phase", phase)
        .Field("state", "started")
        .Field("issued", ts - 1000)
        .EndObject();
  }
  l.EndArray();
  l.Finish();
  run->WriteFile(trace::FlightDumpFileName(rank), out);
}

// A rank that runs `steps` steps, begins one more, records `signal` and is killed.
void WriteKilledAfterSignal(TestRun* run, int rank, int world_size, int steps,
                            std::string_view signal, int signo) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
  w->Begin(trace::rec::kSignal).line().Field("signal", signal).Field("signo", signo);
}

TEST(RankDiedAnalyzerTest, ASignalRecordedBeforeAKillIsNamedWithThePhaseFromTheDump) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteKilledAfterSignal(&run, 1, 2, 3, "SIGTERM", 15);
  WriteDump(&run, 1, 2, "SIGTERM", DumpTs(true), 3, "sync", 16);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.summary,
            "rank 1 received SIGTERM and was killed in sync of step 3 before writing its end "
            "record");
  EXPECT_EQ(Evidence(f, "signal"), "\"SIGTERM\"");
  EXPECT_EQ(f.evidence.Find("signal_recorded")->Find("step")->as_int(), 3);
  EXPECT_EQ(Evidence(f, "stopped_in"),
            "{\"step\":3,\"phase\":\"sync\",\"from\":\"flight-rank-00001.json\","
            "\"dump_reason\":\"SIGTERM\"}");
  EXPECT_EQ(Evidence(f, "waiting_in"),
            "{\"pg\":0,\"seq\":16,\"op\":\"allreduce\",\"tag\":\"grad-bucket-1\",\"step\":3,"
            "\"from\":\"flight dump\"}");
}

// A C++ exception nobody caught (Gloo's enforce on its own thread): the terminate handler's
// dump is the rank's last word, and the hint follows the message, not Python's case.
TEST(RankDiedAnalyzerTest, ADeathInStdTerminateSaysSoAndFollowsItsMessage) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteEndedRank(&run, 1, 2, 3, "error", 134, "error",
                 "[enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 48 vs 32");
  WriteDump(&run, 1, 2, "terminate", DumpTs(true), 2, "backward", 9);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(Evidence(f, "died_by"), "\"std::terminate\"");
  EXPECT_NE(f.hint.find("The rank died in C++"), std::string::npos) << f.hint;
  EXPECT_NE(f.hint.find("a Gloo check"), std::string::npos) << f.hint;
  EXPECT_EQ(f.hint.find("an error it caught"), std::string::npos) << f.hint;
}

// A rank the fatal-signal handler saw die (probes/fatal_signals.h): `steps` steps, one more
// begun, then its `end` record with reason signal and how the signal came.
void WriteFatalSignalRank(TestRun* run, int rank, int world_size, int steps,
                          std::string_view signal, int signo,
                          const trace::records::FatalSignalFields& how) {
  auto w = run->Open(TestRun::Header(rank, world_size));
  TestRun::WriteSteps(w.get(), 0, steps);
  w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
  trace::records::EndRecord end;
  end.reason = "signal";
  end.status = 128 + signo;
  end.detail = signal;
  end.fatal = &how;
  AppendFields(end, &w->Begin(end.kType).line());
}

// A segfault inside a collective: the summary says how and where (the phase and the
// collective from the handler's dump), the hint follows the fault instead of listing every
// way a rank can vanish, and the launcher's SIGTERM to the other rank is its follow-on.
TEST(RankDiedAnalyzerTest, ASegfaultSaysHowAndWhereTheRankCrashed) {
  TestRun run;
  WriteEndedRank(&run, 0, 2, 5, "signal", 143, "signal", "SIGTERM");
  trace::records::FatalSignalFields how;
  how.origin = "fault";
  how.code = "SEGV_MAPERR";
  how.addr = "0x0";
  how.pc = "libbad.so (bad_kernel+0x1c)";
  WriteFatalSignalRank(&run, 1, 2, 3, "SIGSEGV", 11, how);
  WriteDump(&run, 1, 2, "SIGSEGV", DumpTs(true), 3, "backward", 16);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.summary,
            "rank 1 crashed on SIGSEGV in backward of step 3 with allreduce pg 0 seq 16 in "
            "flight (invalid memory access at 0x0, SEGV_MAPERR, in libbad.so (bad_kernel+0x1c))");
  EXPECT_EQ(Evidence(f, "died_by"), "\"SIGSEGV\"");
  EXPECT_EQ(Evidence(f, "fault"),
            "{\"origin\":\"fault\",\"code\":\"SEGV_MAPERR\",\"addr\":\"0x0\","
            "\"pc\":\"libbad.so (bad_kernel+0x1c)\"}");
  EXPECT_EQ(f.evidence.Find("stopped_in")->Find("phase")->as_string(), "backward");
  EXPECT_NE(f.hint.find("native code"), std::string::npos) << f.hint;
  EXPECT_NE(f.hint.find("A collective was in flight"), std::string::npos) << f.hint;
  EXPECT_EQ(f.hint.find("SIGKILL"), std::string::npos) << f.hint;
  const Finding& follow_on = findings[1];
  EXPECT_EQ(follow_on.severity, Severity::kInfo);
  EXPECT_EQ(follow_on.ranks, std::vector<int>{0});
  EXPECT_EQ(Evidence(follow_on, "after_failures_of"), "[1]");
}

TEST(RankDiedAnalyzerTest, ABusErrorPointsAtSharedMemory) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  trace::records::FatalSignalFields how;
  how.origin = "fault";
  how.code = "BUS_ADRERR";
  how.addr = "0x7f0000001000";
  WriteFatalSignalRank(&run, 1, 2, 3, "SIGBUS", 7, how);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].summary,
            "rank 1 crashed on SIGBUS during step 3 (bus error at 0x7f0000001000, BUS_ADRERR)");
  EXPECT_NE(findings[0].hint.find("/dev/shm"), std::string::npos) << findings[0].hint;
}

// abort() outside std::terminate: the hint is native code's abort, not an uncaught exception.
TEST(RankDiedAnalyzerTest, AnAbortOutsideTerminateSaysSo) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  trace::records::FatalSignalFields how;
  how.origin = "raise";
  WriteFatalSignalRank(&run, 1, 2, 3, "SIGABRT", 6, how);
  WriteDump(&run, 1, 2, "SIGABRT", DumpTs(true), 3, "forward", -1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_EQ(f.summary, "rank 1 aborted (SIGABRT: abort() in native code) in forward of step 3");
  EXPECT_EQ(Evidence(f, "died_by"), "\"SIGABRT\"");
  EXPECT_NE(f.hint.find("called abort()"), std::string::npos) << f.hint;
  EXPECT_NE(f.hint.find("Not std::terminate"), std::string::npos) << f.hint;
}

TEST(RankDiedAnalyzerTest, AFatalSignalAnotherProcessSentSaysWhoSentIt) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  trace::records::FatalSignalFields how;
  how.origin = "kill";
  how.sender = 4242;
  WriteFatalSignalRank(&run, 1, 2, 3, "SIGABRT", 6, how);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].summary, "rank 1 was killed by SIGABRT from process 4242 during step 3");
  EXPECT_EQ(Evidence(findings[0], "fault"), "{\"origin\":\"kill\",\"sender\":4242}");
}

// An `end` naming a fatal signal without saying how it came (another writer): still a crash.
TEST(RankDiedAnalyzerTest, AFatalSignalEndWithoutItsOriginIsStillACrash) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteEndedRank(&run, 1, 2, 3, "signal", 139, "signal", "SIGSEGV");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].summary, "rank 1 crashed on SIGSEGV during step 2");
  EXPECT_EQ(Evidence(findings[0], "fault"), "");
}

TEST(RankDiedAnalyzerTest, ASilentDeathNamesThePhaseItDiedInFromALateDump) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteDeadRank(&run, 1, 2, 3, "forward");
  WriteDump(&run, 1, 2, "SIGUSR1", DumpTs(true), 3, "backward", -1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].summary, "rank 1 stopped in backward of step 3 without an end record");
  EXPECT_EQ(findings[0].evidence.Find("stopped_in")->Find("phase")->as_string(), "backward");
  EXPECT_EQ(Evidence(findings[0], "waiting_in"), "");  // nothing pending
}

TEST(RankDiedAnalyzerTest, ADumpOlderThanTheLastRecordsSaysNothingOfWhereTheRankStopped) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 2), 5);
  WriteDeadRank(&run, 1, 2, 3, "forward");
  WriteDump(&run, 1, 2, "SIGUSR1", DumpTs(false), 3, "data", 7);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].summary,
            "rank 1 stopped during step 3 without an end record (last phase done: forward)");
  EXPECT_EQ(Evidence(findings[0], "stopped_in"), "");
  EXPECT_EQ(Evidence(findings[0], "waiting_in"), "");  // it went on past that collective
  EXPECT_EQ(Evidence(findings[0], "flight_dump"), "\"flight-rank-00001.json\"");
}

TEST(RankDiedAnalyzerTest, ADumpOfAnotherRunOrAnotherStepIsNotUsed) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 3), 5);
  WriteDeadRank(&run, 1, 3, 3, "forward");
  WriteDump(&run, 1, 3, "SIGUSR1", DumpTs(true), 3, "backward", 16, "another-run");
  WriteDeadRank(&run, 2, 3, 3, "forward");
  WriteDump(&run, 2, 3, "SIGUSR1", DumpTs(true), 2, "backward", -1);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  for (const Finding& f : findings) {
    EXPECT_EQ(Evidence(f, "stopped_in"), "") << f.summary;
    EXPECT_NE(f.summary.find("during step 3"), std::string::npos) << f.summary;
  }
  EXPECT_EQ(Evidence(findings[0], "waiting_in"), "");
}

TEST(RankDiedAnalyzerTest, ASigtermThenAKillAfterASilentDeathIsAFollowOn) {
  TestRun run;
  WriteKilledAfterSignal(&run, 0, 2, 5, "SIGTERM", 15);
  WriteDeadRank(&run, 1, 2, 4, "forward");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].severity, Severity::kError);
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  EXPECT_EQ(findings[0].summary.rfind("rank 1 stopped during step 4", 0), 0u);
  const Finding& follow_on = findings[1];
  EXPECT_EQ(follow_on.severity, Severity::kInfo);
  EXPECT_EQ(follow_on.ranks, std::vector<int>{0});
  EXPECT_EQ(follow_on.summary,
            "rank 0 was stopped (SIGTERM, then killed before its end record) during step 5 "
            "after rank 1 died: a follow-on, not a cause");
  EXPECT_EQ(Evidence(follow_on, "after_deaths_of"), "[1]");
}

TEST(RankDiedAnalyzerTest, AFailureSaysThePhaseAndTheCollectiveItWasWaitingIn) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 3), 5);
  {
    // The error end, after the dump: the dump still says where the rank failed.
    auto w = run.Open(TestRun::Header(1, 3));
    TestRun::WriteSteps(w.get(), 0, 3);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    WriteDump(&run, 1, 3, "error", DumpTs(true), 3, "sync", 16);
    TestRun::WriteEnd(w.get(), "error", 1, "error", "allreduce grad-bucket-1 (seq 16): timed out");
  }
  {
    // No dump: the watchdog's error record names the collective.
    auto w = run.Open(TestRun::Header(2, 3));
    TestRun::WriteSteps(w.get(), 0, 3);
    w->Begin(trace::rec::kError)
        .line()
        .Field("where", "watchdog")
        .Field("message",
               "collective pg 0 seq 16 (allreduce, grad-bucket-1) pending for 6.0 s, past the "
               "5.0 s timeout");
    TestRun::WriteEnd(w.get(), "error", 1, "error", "timed out");
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  const Finding& dumped = findings[0].ranks == std::vector<int>{1} ? findings[0] : findings[1];
  const Finding& named = findings[0].ranks == std::vector<int>{1} ? findings[1] : findings[0];
  EXPECT_EQ(dumped.summary,
            "rank 1 failed in sync of step 3: allreduce grad-bucket-1 (seq 16): timed out");
  EXPECT_EQ(dumped.evidence.Find("waiting_in")->Find("seq")->as_int(), 16);
  EXPECT_EQ(dumped.evidence.Find("waiting_in")->Find("from")->as_string(), "flight dump");
  EXPECT_EQ(Evidence(named, "waiting_in"),
            "{\"pg\":0,\"seq\":16,\"op\":\"allreduce\",\"tag\":\"grad-bucket-1\",\"step\":3,"
            "\"from\":\"error record\"}");
}

TEST(RankDiedAnalyzerTest, SurvivorsSayWhichCollectiveTheyWereLeftIn) {
  TestRun run;
  WriteDeadRank(&run, 0, 2, 4, "forward");
  {
    auto w = run.Open(TestRun::Header(1, 2));
    TestRun::WriteSteps(w.get(), 0, 4);
    w->Begin(trace::rec::kStepBegin).line().Field("epoch", 0);
    WriteDump(&run, 1, 2, "error", DumpTs(true), 4, "sync", 21);
    TestRun::WriteEnd(w.get(), "peer-failure", 1, "error", "Connection closed by peer");
  }
  const auto findings = Analyze(run);
  const Finding* dead = nullptr;
  for (const Finding& f : findings)
    if (f.severity == Severity::kError) dead = &f;
  ASSERT_NE(dead, nullptr);
  const trace::JsonValue& survivor = dead->evidence.Find("survivors")->elements().at(0);
  EXPECT_EQ(survivor.Find("rank")->as_int(), 1);
  EXPECT_EQ(survivor.Find("waiting_in")->Find("seq")->as_int(), 21);
}

TEST(RankDiedAnalyzerTest, ManyRanksLeftInTheSameCollectiveShareItInTheGroupedFinding) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 12), 3);
  for (int r = 1; r < 12; ++r) {
    auto w = run.Open(TestRun::Header(r, 12));
    TestRun::WriteSteps(w.get(), 0, 3);
    w->Begin(trace::rec::kError)
        .line()
        .Field("where", "sync")
        .Field("message", "collective timeout")
        .Field("pg", 0)
        .Field("seq", int64_t{9})
        .Field("op", "allreduce")
        .Field("tag", "grad-bucket-0");
    TestRun::WriteEnd(w.get(), "error", 1, "error", "collective timeout: allreduce seq 9");
  }
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].ranks.size(), 11u);
  EXPECT_EQ(findings[0].evidence.Find("waiting_in")->Find("seq")->as_int(), 9);
}

// --- a trace cut short by a failed write (disk full) ----------------------------------

// A rank whose trace stops after `steps` steps in the middle of a line, as a short write
// leaves it: at a 4096-byte block boundary unless `at_block` is false (then as a process
// killed mid-record would). Returns the file's size.
int64_t WriteCutShortRank(TestRun* run, int rank, int world_size, int steps, bool at_block = true) {
  {
    auto w = run->Open(TestRun::Header(rank, world_size));
    TestRun::WriteSteps(w.get(), 0, steps);
  }
  const std::string file = trace::RankTraceFileName(rank);
  const std::string path = run->dir() + "/" + file;
  std::string partial = "{\"type\":\"step_begin\",\"ts\":123,\"st";
  const size_t size = std::filesystem::file_size(path) + partial.size();
  if (at_block) partial += std::string((4096 - size % 4096) % 4096, 'x');
  if (!at_block && size % 4096 == 0) partial += "x";
  run->AppendRaw(file, partial);
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

TEST(RankDiedAnalyzerTest, TracesEndingInAPartialLineAreCutShortWarningsNotDeaths) {
  TestRun run;
  const int64_t bytes0 = WriteCutShortRank(&run, 0, 2, 14);
  const int64_t bytes1 = WriteCutShortRank(&run, 1, 2, 13);
  auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 2u);
  std::sort(findings.begin(), findings.end(),
            [](const Finding& a, const Finding& b) { return a.ranks < b.ranks; });
  for (int r = 0; r < 2; ++r) {
    const Finding& f = findings[static_cast<size_t>(r)];
    EXPECT_EQ(f.kind, kind::kRankDied);
    EXPECT_EQ(f.severity, Severity::kWarning);
    EXPECT_EQ(f.ranks, std::vector<int>{r});
    EXPECT_EQ(Evidence(f, "truncated_tail"), "true");
    EXPECT_NE(f.hint.find("free space"), std::string::npos) << f.hint;
    EXPECT_NE(f.hint.find("quota"), std::string::npos) << f.hint;
  }
  EXPECT_EQ(findings[0].summary, "rank 0's trace was cut short by a failed write at byte " +
                                     std::to_string(bytes0) +
                                     ", after step 13 (disk full or quota?): what the rank did "
                                     "after that is unknown");
  EXPECT_EQ(findings[1].summary, "rank 1's trace was cut short by a failed write at byte " +
                                     std::to_string(bytes1) +
                                     ", after step 12 (disk full or quota?): what the rank did "
                                     "after that is unknown");
  EXPECT_EQ(Evidence(findings[0], "bytes"), std::to_string(bytes0));
}

TEST(RankDiedAnalyzerTest, AWholeLastLineOrARecordedSignalStillMeansTheRankDied) {
  TestRun run;
  const int64_t bytes = WriteCutShortRank(&run, 0, 4, 5);
  EXPECT_EQ(bytes % 4096, 0);
  WriteDeadRank(&run, 1, 4, 5, "forward");  // whole lines: killed
  // A partial line off a block boundary: killed mid-record, not a refused write.
  EXPECT_NE(WriteCutShortRank(&run, 3, 4, 5, /*at_block=*/false) % 4096, 0);
  {
    auto w = run.Open(TestRun::Header(2, 4));
    TestRun::WriteSteps(w.get(), 0, 5);
    w->Begin(trace::rec::kSignal).line().Field("signal", "SIGSEGV").Field("signo", 11);
  }
  run.AppendRaw(trace::RankTraceFileName(2), "{\"type\":\"ph");
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 4u);
  std::vector<std::pair<int, Severity>> got;
  for (const Finding& f : findings) got.emplace_back(f.ranks.front(), f.severity);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::pair<int, Severity>>{{0, Severity::kWarning},
                                                        {1, Severity::kError},
                                                        {2, Severity::kError},
                                                        {3, Severity::kError}}));
}

TEST(RankDiedAnalyzerTest, ManyCutShortTracesAreOneWarning) {
  TestRun run;
  for (int r = 0; r < 10; ++r) WriteCutShortRank(&run, r, 10, 3);
  const auto findings = Analyze(run);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::kWarning);
  EXPECT_EQ(findings[0].ranks.size(), 10u);
  EXPECT_EQ(findings[0].summary.rfind("10 ranks' traces were cut short by a failed write", 0), 0u)
      << findings[0].summary;
  EXPECT_EQ(Evidence(findings[0], "count"), "10");
}

}  // namespace
}  // namespace dsdiag::analyzers
