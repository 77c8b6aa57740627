// FlightRecorder, CollectiveProbe and Watchdog: the evidence a hung job leaves behind.
#include "probes/flight_recorder.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "probes/collective_op.h"
#include "probes/collective_probe.h"
#include "probes/peer_op.h"
#include "probes/watchdog.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/record_types.h"
#include "trace/records/p2p_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

trace::TraceHeader Header(int rank) {
  trace::TraceHeader h;
  h.run_id = "flight-test";
  h.rank = rank;
  h.world_size = 2;
  return h;
}

using test_support::ReadFile;

// A session of rank `rank` writing into a fresh run directory, removed with this object.
struct SessionInTempDir {
  explicit SessionInTempDir(int rank, Mode mode = Mode::kLight) : header(Header(rank)) {
    SessionConfig c;
    c.mode = mode;
    c.run_dir = dir.path();
    c.header = header;
    std::string error;
    session = Session::Start(c, &error);
    EXPECT_TRUE(session) << error;
  }
  test_support::TempDir dir{"flight"};
  trace::TraceHeader header;
  std::unique_ptr<Session> session;
};

TEST(FlightRecorderTest, DumpListsEntriesOldestFirstWithStates) {
  FlightRecorder rec(Header(1), "/tmp", 4);
  for (int i = 0; i < 6; ++i) {  // wraps: only the last 4 stay
    int64_t h = rec.Issue(0, i, {"allreduce", "f32", 10, 40, "grad-bucket-0"}, i, Phase::kSync);
    rec.Start(h);
    if (i < 5) rec.Complete(h);
  }
  simdjson::dom::parser parser;
  std::string json = rec.DumpJson("timeout", 5, Phase::kSync);
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["schema"]), "dsdiag.flight/1");
  EXPECT_EQ(int64_t(doc["rank"]), 1);
  EXPECT_EQ(std::string_view(doc["where"]["phase"]), "sync");
  simdjson::dom::array entries = doc["entries"];
  ASSERT_EQ(entries.size(), 4u);
  int64_t expected_seq = 2;
  for (simdjson::dom::element e : entries) EXPECT_EQ(int64_t(e["seq"]), expected_seq++);
  EXPECT_EQ(std::string_view(entries.at(3)["state"]), "started");
  EXPECT_EQ(std::string_view(entries.at(2)["state"]), "completed");

  FlightEntry pending;
  ASSERT_TRUE(rec.OldestPending(&pending));
  EXPECT_EQ(pending.seq, 5);
}

// An all-to-all's per-peer sizes go into its entry (and into the dump), up to kMaxPeerCounts.
TEST(FlightRecorderTest, AnEntryKeepsPerPeerSizesOfGroupsUpToTheLimit) {
  FlightRecorder rec(Header(1), "/tmp", 4);
  const trace::PeerCounts counts{{}, {3, 4}, {5, 6}};
  rec.Issue(0, 0, {"alltoall", "f32", 11, 44, "alltoall"}, 0, Phase::kForward, &counts);
  trace::PeerCounts large;
  large.send.assign(kMaxPeerCounts + 1, 1);
  large.recv.assign(kMaxPeerCounts + 1, 1);
  rec.Issue(0, 1, {"alltoall", "f32", 33, 132, "alltoall"}, 0, Phase::kForward, &large);
  trace::LocatedIssue issue;
  const auto dump = trace::ParseFlightDump(rec.DumpJson("test", 0, Phase::kForward), "d", &issue);
  ASSERT_TRUE(dump.has_value()) << issue.ToString();
  ASSERT_EQ(dump->entries.size(), 2u);
  EXPECT_EQ(dump->entries[0].counts, counts);
  EXPECT_TRUE(dump->entries[1].counts.empty());  // the trace's record has them
}

// An exception's dump and a SIGTERM's can coincide on two threads: every dump left on disk
// is a whole one (they are written one at a time), the later replacing the earlier.
TEST(FlightRecorderTest, DumpsFromTwoThreadsAtOnceLeaveAWholeDump) {
  test_support::TempDir dir{"flight-race"};
  FlightRecorder recorder(Header(0), dir.path());
  // Big dumps (long stacks), so that two unserialised writers would interleave.
  recorder.SetStackProvider([] {
    return std::vector<trace::ThreadStack>{
        {"MainThread", std::vector<std::string>(400, "train.py:1 in step")}};
  });
  auto dumps = [&](const char* reason) {
    for (int i = 0; i < 100; ++i) {
      std::string error;
      EXPECT_TRUE(recorder.Dump(reason, 0, Phase::kNone, &error)) << error;
    }
  };
  std::thread a(dumps, "error");
  std::thread b(dumps, "SIGTERM");
  for (int i = 0; i < 50; ++i) {
    trace::LocatedIssue issue;
    const std::string text = ReadFile(recorder.dump_path());
    if (!text.empty()) EXPECT_TRUE(trace::ParseFlightDump(text, "d", &issue)) << issue.ToString();
  }
  a.join();
  b.join();
  trace::LocatedIssue issue;
  EXPECT_TRUE(trace::ParseFlightDump(ReadFile(recorder.dump_path()), "d", &issue))
      << issue.ToString();
}

TEST(CollectiveProbeTest, SequenceNumbersPerGroupAndCollRecords) {
  SessionInTempDir run(0);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(Header(0), run.dir.path());
  CollectiveProbe probe(s, &rec);
  for (int i = 0; i < 3; ++i) {
    CollectiveScope scope(&probe, 0, "allreduce", "f32", 100, 400, "grad-bucket-0");
    scope.Started();
    EXPECT_EQ(scope.seq(), i);
  }
  { CollectiveScope scope(&probe, 1, "barrier", "none", 0, 0, "health"); }
  EXPECT_EQ(probe.next_seq(0), 3);
  EXPECT_EQ(probe.next_seq(1), 1);
  s->End("ok", 0);

  std::string error;
  auto reader = trace::TraceReader::Open(run.dir / "rank-00000.jsonl", &error);
  ASSERT_TRUE(reader);
  trace::Record r;
  int colls = 0;
  while (reader->Next(&r)) {
    if (r.type() != trace::rec::kCollective) continue;
    ++colls;
    EXPECT_TRUE(r.Int("dur"));
    if (colls <= 3) {
      EXPECT_EQ(r.Int("seq"), colls - 1);
      EXPECT_EQ(r.Str("tag"), "grad-bucket-0");
      EXPECT_EQ(r.Int("bytes"), 400);
    } else {
      EXPECT_EQ(r.Int("pg"), 1);
      EXPECT_EQ(r.Str("op"), "barrier");
    }
  }
  EXPECT_EQ(colls, 4);
  FlightEntry pending;
  EXPECT_FALSE(rec.OldestPending(&pending));
}

TEST(CollectiveProbeTest, AnOpLeftByAnExceptionStaysPendingAndIsMarkedFailed) {
  SessionInTempDir run(0);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(Header(0), run.dir.path());
  CollectiveProbe probe(s, &rec);
  try {
    CollectiveScope scope(&probe, 0, "allreduce", "f32", 4, 16, "grad-bucket-3");
    scope.Started();
    throw std::runtime_error("peer closed the connection");
  } catch (const std::runtime_error&) {
  }
  s->End("error", 1);
  FlightEntry pending;
  ASSERT_TRUE(rec.OldestPending(&pending));
  EXPECT_EQ(pending.seq, 0);
  EXPECT_EQ(pending.state, trace::CollectiveState::kStarted);
  std::string error;
  auto reader = trace::TraceReader::Open(run.dir / "rank-00000.jsonl", &error);
  trace::Record r;
  int failed = 0;
  while (reader->Next(&r))
    if (r.type() == trace::rec::kCollective && r.Bool("failed") == true) ++failed;
  EXPECT_EQ(failed, 1);
}

// The `step` record sums the step's collectives: count, bytes, time in them and time
// waiting after the backend accepted them; collectives outside a step count nowhere.
TEST(CollectiveProbeTest, TheStepRecordCarriesTheStepsCollectiveTotals) {
  SessionInTempDir run(0);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  CollectiveProbe probe(s, nullptr);
  { CollectiveScope before(&probe, 0, "broadcast", "f32", 1000, 4000, "init-broadcast"); }
  s->BeginStep(0, 0);
  for (int k = 0; k < 2; ++k) {
    CollectiveScope scope(&probe, 0, "allreduce", "f32", 100, 400, "grad-bucket-0");
    scope.Started();
  }
  { CollectiveScope never_started(&probe, 0, "barrier", "none", 0, 0, "health"); }
  s->EndStep({});
  s->BeginStep(1, 0);
  s->EndStep({});
  s->End("ok", 0);

  std::string error;
  auto reader = trace::TraceReader::Open(run.dir / "rank-00000.jsonl", &error);
  ASSERT_TRUE(reader) << error;
  trace::Record r;
  std::vector<std::optional<trace::JsonValue>> totals;
  int64_t coll_dur = 0;
  while (reader->Next(&r)) {
    if (r.type() == trace::rec::kStep) totals.push_back(r.Value("coll"));
    if (r.type() == trace::rec::kCollective && r.step() == 0 && r.Str("op") != "broadcast")
      coll_dur += *r.Int("dur");
  }
  ASSERT_EQ(totals.size(), 2u);
  ASSERT_TRUE(totals[0].has_value());
  const trace::JsonValue& t = *totals[0];
  EXPECT_EQ(t.Find("n")->as_int(), 3);
  EXPECT_EQ(t.Find("bytes")->as_int(), 800);
  EXPECT_EQ(t.Find("dur")->as_int(), coll_dur);
  EXPECT_GE(t.Find("wait")->as_int(), 0);
  EXPECT_LE(t.Find("wait")->as_int(), t.Find("dur")->as_int());
  EXPECT_FALSE(totals[1].has_value());  // no collective: no `coll` object
}

// A phase left by an exception stays the session's current phase, so that the handler's
// error record and flight dump say where the failure happened; its record is still written.
TEST(CollectiveProbeTest, APhaseLeftByAnExceptionStaysCurrentForTheHandler) {
  SessionInTempDir run(0, Mode::kFull);  // light mode writes no phase records
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  s->BeginStep(0, 0);
  try {
    PhaseScope sync(s, Phase::kSync);
    throw std::runtime_error("collective timed out");
  } catch (const std::runtime_error&) {
    EXPECT_EQ(s->current_phase(), Phase::kSync);
  }
  { PhaseScope next(s, Phase::kOptimizer); }
  EXPECT_EQ(s->current_phase(), Phase::kSync);  // restored to what it found
  s->BeginStep(1, 0);                           // a loop that handled the exception and went on
  EXPECT_EQ(s->current_phase(), Phase::kNone);
  s->End("error", 1);
  std::string error;
  auto reader = trace::TraceReader::Open(run.dir / "rank-00000.jsonl", &error);
  trace::Record r;
  int phases = 0;
  while (reader->Next(&r)) phases += r.type() == trace::rec::kPhase;
  EXPECT_EQ(phases, 2);
}

// Waits (generously) for `pred`; the watchdog polls every few ms.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(WatchdogTest, DumpsWhenACollectiveOutlivesTheTimeoutAndOnSigusr1) {
  SessionInTempDir run(1);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(run.header, run.dir.path());
  CollectiveProbe probe(s, &rec);
  Watchdog watchdog(s, &rec, /*timeout_s=*/0.05, /*poll_interval_ms=*/5);
  Watchdog::InstallSigusr1Handler(&watchdog);

  s->BeginStep(7, 0);
  {
    PhaseScope phase(s, Phase::kSync);
    CollectiveScope hung(&probe, 0, "allreduce", "f32", 8, 32, "grad-bucket-1");
    hung.Started();
    ASSERT_TRUE(Eventually([&] { return watchdog.timed_out(); }));
    ASSERT_TRUE(Eventually([&] { return watchdog.dumps_written() >= 1; }));
  }
  const std::string dump = ReadFile(rec.dump_path());
  EXPECT_NE(dump.find("\"reason\":\"timeout\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"state\":\"started\""), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"where\":{\"step\":7,\"phase\":\"sync\"}"), std::string::npos) << dump;

  raise(SIGUSR1);
  ASSERT_TRUE(Eventually([&] { return watchdog.dumps_written() >= 2; }));
  EXPECT_NE(ReadFile(rec.dump_path()).find("\"reason\":\"SIGUSR1\""), std::string::npos);
  s->End("ok", 0);

  // The timeout also left an `error` record naming the collective.
  std::string error;
  auto reader = trace::TraceReader::Open(run.dir.path() + "/rank-00001.jsonl", &error);
  trace::Record r;
  bool found = false;
  while (reader->Next(&r))
    if (r.type() == trace::rec::kError && r.Str("where") == "watchdog") {
      found = true;
      EXPECT_NE(std::string(*r.Str("message")).find("seq 0"), std::string::npos);
    }
  EXPECT_TRUE(found);
}

// Point-to-point messages are numbered per (group, peer, direction, tag): rank i's k-th
// send to j meets j's k-th recv from i. They take no number of the group's collective
// sequence, and their `p2p` records say peer, group peer (on a sub-group) and tag.
TEST(PeerOpTest, MessagesAreNumberedPerPairApartFromTheGroupsCollectives) {
  SessionInTempDir run(0);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(Header(0), run.dir.path());
  CollectiveProbe probe(s, &rec);
  auto message = [&](int pg, const char* op, int64_t peer, int64_t group_peer, int64_t tag) {
    auto m = std::make_unique<PeerOp>(
        &probe, PeerMessage{pg, {op, "f32", 4, 16, "isend"}, peer, group_peer, tag});
    m->Completed();
    m->Write();
    return m->seq();
  };
  EXPECT_EQ(message(0, "send", 1, 1, 0), 0);
  EXPECT_EQ(message(0, "send", 1, 1, 0), 1);
  EXPECT_EQ(message(0, "recv", 1, 1, 0), 0);  // the other direction counts apart
  EXPECT_EQ(message(0, "send", 2, 2, 0), 0);  // another peer
  EXPECT_EQ(message(0, "send", 1, 1, 5), 0);  // another tag
  EXPECT_EQ(message(1, "send", 3, 1, 0), 0);  // another group
  EXPECT_EQ(probe.next_seq(0), 0);            // no collective number taken
  { CollectiveScope scope(&probe, 0, "allreduce", "f32", 4, 16, "loss"); }
  EXPECT_EQ(probe.next_seq(0), 1);

  // A recv from any source is numbered once its sender is known.
  PeerOp any(&probe, PeerMessage{0, {"recv", "f32", 4, 16, "irecv"}, -1, -1, 0});
  EXPECT_EQ(any.seq(), -1);
  any.SetPeer(1, 1);
  EXPECT_EQ(any.seq(), 1);
  any.Completed();
  any.Write();
  s->End("ok", 0);

  std::string error;
  auto reader = trace::TraceReader::Open(run.dir / "rank-00000.jsonl", &error);
  ASSERT_TRUE(reader) << error;
  trace::Record r;
  std::vector<std::string> seen;
  while (reader->Next(&r)) {
    if (r.type() != trace::rec::kP2P) continue;
    const trace::records::P2PView v(r);
    seen.push_back(std::string(*v.op()) + " pg" + std::to_string(*v.pg()) + " peer" +
                   std::to_string(*v.peer()) + "/" + std::to_string(*v.group_peer()) + " tag" +
                   std::to_string(v.match_tag()) + " #" + std::to_string(*v.seq()));
    EXPECT_EQ(v.count(), 4);
    EXPECT_EQ(v.bytes(), 16);
    EXPECT_EQ(v.dtype(), "f32");
    EXPECT_FALSE(v.failed());
    EXPECT_TRUE(v.dur());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"send pg0 peer1/1 tag0 #0", "send pg0 peer1/1 tag0 #1",
                                            "recv pg0 peer1/1 tag0 #0", "send pg0 peer2/2 tag0 #0",
                                            "send pg0 peer1/1 tag5 #0", "send pg1 peer3/1 tag0 #0",
                                            "recv pg0 peer1/1 tag0 #1"}));
  // group_peer is written where it differs from the global rank only (the sub-group's).
  const std::string text = ReadFile(run.dir / "rank-00000.jsonl");
  EXPECT_NE(text.find("\"peer\":3,\"group_peer\":1,\"seq\":0"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"peer\":1,\"group_peer\""), std::string::npos) << text;
}

// NCCL's future completes once the allreduce is queued: the host's end is not the op's.
// The entry stays started until the refresher (the Python package polling the op's device
// event) completes it; a dump and a watchdog about to time it out ask the refresher first.
TEST(WatchdogTest, AnOpQueuedOnADeviceIsPendingUntilTheRefresherSeesItDone) {
  SessionInTempDir run(1);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(run.header, run.dir.path());
  CollectiveProbe probe(s, &rec);
  s->BeginStep(3, 0);
  CollectiveOp op(&probe, 0, {"allreduce", "f32", 8, 32, "ddp-bucket-0"});
  op.Started();
  op.QueuedOnDevice();
  EXPECT_TRUE(op.completed());  // the host's side: the record's time
  op.Write();
  FlightEntry pending;
  ASSERT_TRUE(rec.OldestPending(&pending));
  EXPECT_EQ(pending.what.tag, "ddp-bucket-0");

  std::atomic<bool> done_on_device{false};
  std::atomic<int> asked{0};
  rec.SetRefresher([&] {
    ++asked;
    if (done_on_device.load()) op.DeviceCompleted();
  });
  EXPECT_NE(rec.DumpJson("SIGUSR1", 3, Phase::kSync).find("\"state\":\"started\""),
            std::string::npos);
  EXPECT_EQ(asked.load(), 1);
  {  // Never done on the device: a hang like any other.
    Watchdog watchdog(s, &rec, /*timeout_s=*/0.05, /*poll_interval_ms=*/5);
    ASSERT_TRUE(Eventually([&] { return watchdog.timed_out(); }));
  }

  // Done on the device, not yet polled: the watchdog asks before it times the op out.
  done_on_device = true;
  {
    Watchdog watchdog(s, &rec, /*timeout_s=*/0.05, /*poll_interval_ms=*/5);
    ASSERT_TRUE(Eventually([&] { return !rec.OldestPending(&pending); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(watchdog.timed_out());
    EXPECT_EQ(watchdog.dumps_written(), 0);
  }
  EXPECT_EQ(rec.DumpJson("SIGUSR1", 3, Phase::kSync).find("\"state\":\"started\""),
            std::string::npos);
  rec.SetRefresher({});
  s->EndStep({});
  s->End("ok", 0);
}

// A message times out only while the rank waits in it: a request posted and never waited on
// (an isend whose work the job drops) is no hang. The dump lists messages in `p2p`, not in
// `entries`, and the watchdog's error names the peer, not a collective's "pg N seq M".
TEST(WatchdogTest, AMessageTimesOutOnlyWhileTheRankWaitsInIt) {
  SessionInTempDir run(1);
  ASSERT_TRUE(run.session);
  Session* s = run.session.get();
  FlightRecorder rec(run.header, run.dir.path());
  CollectiveProbe probe(s, &rec);
  Watchdog watchdog(s, &rec, /*timeout_s=*/0.05, /*poll_interval_ms=*/5);
  PeerOp posted(&probe, PeerMessage{0, {"send", "f32", 4, 16, "isend"}, 0, 0, 0});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(watchdog.timed_out());
  FlightEntry pending;
  EXPECT_FALSE(rec.OldestPending(&pending));

  PeerOp waited(&probe, PeerMessage{0, {"recv", "f32", 8, 32, "irecv"}, 0, 0, 0});
  waited.Waiting();
  ASSERT_TRUE(Eventually([&] { return watchdog.timed_out(); }));
  ASSERT_TRUE(Eventually([&] { return watchdog.dumps_written() >= 1; }));
  trace::LocatedIssue issue;
  const auto dump = trace::ParseFlightDump(ReadFile(rec.dump_path()), "d", &issue);
  ASSERT_TRUE(dump.has_value()) << issue.ToString();
  EXPECT_TRUE(dump->entries.empty());
  ASSERT_EQ(dump->p2p.size(), 2u);
  EXPECT_EQ(dump->p2p[0].state, trace::CollectiveState::kIssued);
  EXPECT_EQ(dump->p2p[1].state, trace::CollectiveState::kStarted);
  EXPECT_EQ(dump->p2p[1].what.op, "recv");
  EXPECT_EQ(dump->p2p[1].peer, 0);
  s->End("ok", 0);

  std::string error;
  auto reader = trace::TraceReader::Open(run.dir.path() + "/rank-00001.jsonl", &error);
  ASSERT_TRUE(reader) << error;
  trace::Record r;
  std::string message;
  while (reader->Next(&r))
    if (r.type() == trace::rec::kError && r.Str("where") == "watchdog")
      message = std::string(*r.Str("message"));
  EXPECT_NE(message.find("point-to-point recv from rank 0 on group 0"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("seq"), std::string::npos) << message;
}

}  // namespace
}  // namespace dsdiag::probes
