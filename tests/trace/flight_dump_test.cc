// trace/flight_dump.h: the dump written by the probes' flight recorder and synth, read by the
// run loader — the writer's output read back, every field, and located issues for bad files.
#include "trace/flight_dump.h"

#include <gtest/gtest.h>

#include <string>

namespace dsdiag::trace {
namespace {

TEST(FlightDumpTest, WhatTheWriterWritesReadsBack) {
  FlightDump d;
  d.run_id = "r";
  d.rank = 2;
  d.world_size = 4;
  d.reason = "SIGTERM";
  d.ts = 77;
  d.clock = ClockReference{100, 2000, -35, 12};
  d.where_step = 7;
  d.where_phase = "sync";
  FlightDumpEntry e;
  e.pg = 1;
  e.seq = 40;
  e.what.op = "allreduce";
  e.what.dtype = "f32";
  e.what.count = 12;
  e.what.bytes = 48;
  e.what.tag = "grad-bucket-2";
  e.step = 7;
  e.phase = "sync";
  e.state = CollectiveState::kStarted;
  e.issued = 70;
  e.started = 71;
  d.entries.push_back(e);
  const std::string text = FlightDumpJson(d);
  EXPECT_EQ(text,
            "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"r\",\"rank\":2,\"world_size\":4,"
            "\"reason\":\"SIGTERM\",\"ts\":77,\"clock\":{\"mono\":100,\"wall\":2000,\"offset\":-35,"
            "\"offset_err\":12},\"where\":{\"step\":7,\"phase\":\"sync\"},\"entries\":[{\"pg\":1,"
            "\"seq\":40,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":12,\"bytes\":48,\"tag\":"
            "\"grad-bucket-2\",\"step\":7,\"phase\":\"sync\",\"state\":\"started\",\"issued\":70,"
            "\"started\":71}]}\n");
  LocatedIssue issue;
  const auto back = ParseFlightDump(text, "f.json", &issue);
  ASSERT_TRUE(back.has_value()) << issue.ToString();
  EXPECT_EQ(FlightDumpJson(*back), text);
}

TEST(FlightDumpTest, PythonStacksReadBackAndAreOptional) {
  FlightDump d;
  d.run_id = "r";
  d.reason = "timeout";
  d.stacks = {{"MainThread", {"train.py:3 in <module>", "train.py:9 in step"}}, {"Thread-1", {}}};
  const std::string text = FlightDumpJson(d);
  EXPECT_NE(
      text.find("\"stacks\":[{\"thread\":\"MainThread\",\"frames\":[\"train.py:3 in "
                "<module>\",\"train.py:9 in step\"]},{\"thread\":\"Thread-1\",\"frames\":[]}]"),
      std::string::npos)
      << text;
  LocatedIssue issue;
  const auto back = ParseFlightDump(text, "f.json", &issue);
  ASSERT_TRUE(back.has_value()) << issue.ToString();
  ASSERT_EQ(back->stacks.size(), 2u);
  EXPECT_EQ(back->stacks[0].frames.back(), "train.py:9 in step");
  EXPECT_EQ(FlightDumpJson(*back), text);
  d.stacks.clear();
  EXPECT_EQ(FlightDumpJson(d).find("stacks"), std::string::npos);
}

LocatedIssue Issue(const std::string& text) {
  LocatedIssue issue;
  EXPECT_FALSE(ParseFlightDump(text, "run/flight-rank-00001.json", &issue).has_value());
  return issue;
}

TEST(FlightDumpTest, ParsesEveryField) {
  const std::string text =
      "{\"schema\":\"dsdiag.flight/1\",\"run_id\":\"r\",\"rank\":1,\"world_size\":4,"
      "\"reason\":\"timeout\",\"ts\":912345678,\"clock\":{\"mono\":100,\"wall\":2000,"
      "\"offset\":-35,\"offset_err\":12},\"where\":{\"step\":7,\"phase\":\"sync\"},"
      "\"future_field\":[1,2],\"entries\":["
      "{\"pg\":0,\"seq\":39,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":12,\"bytes\":48,"
      "\"tag\":\"grad-bucket-1\",\"step\":7,\"phase\":\"backward\",\"state\":\"completed\","
      "\"issued\":900,\"started\":901,\"completed\":950},"
      "{\"pg\":0,\"seq\":40,\"op\":\"allreduce\",\"dtype\":\"f32\",\"n\":12,\"bytes\":48,"
      "\"tag\":\"grad-bucket-2\",\"step\":7,\"phase\":\"sync\",\"state\":\"started\","
      "\"issued\":912000000,\"started\":912000100}]}\n";
  LocatedIssue issue;
  const auto d = ParseFlightDump(text, "p", &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString();
  EXPECT_EQ(d->rank, 1);
  EXPECT_EQ(d->world_size, 4);
  EXPECT_EQ(d->reason, "timeout");
  EXPECT_EQ(d->ts, 912345678);
  ASSERT_TRUE(d->clock.has_value());
  EXPECT_EQ(d->clock->offset_ns, -35);
  EXPECT_EQ(d->where_step, 7);
  EXPECT_EQ(d->where_phase, "sync");
  ASSERT_EQ(d->entries.size(), 2u);
  EXPECT_FALSE(d->entries[0].pending());
  EXPECT_EQ(d->entries[0].completed, 950);
  const FlightDumpEntry* pending = d->OldestPending();
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->seq, 40);
  EXPECT_EQ(pending->state, CollectiveState::kStarted);
  EXPECT_EQ(pending->what.tag, "grad-bucket-2");
  EXPECT_EQ(pending->issued, 912000000);
  EXPECT_EQ(d->entries_skipped, 0);
}

TEST(FlightDumpTest, BadDumpsGiveLocatedIssues) {
  LocatedIssue i = Issue("{\"schema\":\"dsdiag.flight/1\",\n\"rank\":1,}");
  EXPECT_EQ(i.line, 2);
  EXPECT_EQ(i.column, 10);
  EXPECT_EQ(i.ToString().rfind("run/flight-rank-00001.json:2:10: expected", 0), 0u) << i.ToString();

  i = Issue("{\"schema\":\"dsdiag.flight/2\",\"rank\":1,\"ts\":1,\"entries\":[]}");
  EXPECT_EQ(i.expected, "flight dump schema major 1 (\"dsdiag.flight/1\")");
  EXPECT_EQ(i.column, 11);

  i = Issue("{\"schema\":\"dsdiag.trace/1\",\"rank\":1}");
  EXPECT_EQ(i.expected, "\"schema\": \"dsdiag.flight/1\"");

  i = Issue("{\"schema\":\"dsdiag.flight/1\",\"rank\":\"one\",\"ts\":1,\"entries\":[]}");
  EXPECT_EQ(i.expected, "integer field \"rank\" >= 0");

  i = Issue("{\"schema\":\"dsdiag.flight/1\",\"rank\":1,\"ts\":1}");
  EXPECT_EQ(i.expected, "array field \"entries\"");
  EXPECT_EQ(i.found, "no \"entries\"");

  i = Issue("");
  EXPECT_EQ(i.line, 1);
  EXPECT_EQ(i.expected.empty(), false);

  i = Issue("[1,2]");
  EXPECT_EQ(i.column, 1);
}

TEST(FlightDumpTest, BadEntriesAreSkippedAndCounted) {
  LocatedIssue issue;
  const auto d = ParseFlightDump(
      "{\"schema\":\"dsdiag.flight/1\",\"rank\":1,\"ts\":1,\"entries\":[7,"
      "{\"pg\":0,\"seq\":1,\"state\":\"done\"},{\"pg\":0,\"seq\":2,\"state\":\"issued\"}]}",
      "p", &issue);
  ASSERT_TRUE(d.has_value()) << issue.ToString();
  EXPECT_EQ(d->entries.size(), 1u);
  EXPECT_EQ(d->entries_skipped, 2);
  EXPECT_EQ(d->first_entry_problem, "entries[0]: expected an object");
}

TEST(FlightDumpTest, PerPeerSizesReadBackAndMustHaveOneCountPerPeer) {
  FlightDump d;
  d.rank = 1;
  d.world_size = 4;
  FlightDumpEntry e;
  e.pg = 1;
  e.seq = 3;
  e.what.op = "alltoall";
  e.counts = PeerCounts{{1, 3}, {4, 6}, {5, 5}};
  d.entries.push_back(e);
  const std::string text = FlightDumpJson(d);
  EXPECT_NE(text.find("\"send\":[4,6],\"recv\":[5,5],\"peers\":[1,3]"), std::string::npos) << text;
  LocatedIssue issue;
  const auto back = ParseFlightDump(text, "f.json", &issue);
  ASSERT_TRUE(back.has_value()) << issue.ToString();
  ASSERT_EQ(back->entries.size(), 1u);
  EXPECT_EQ(back->entries[0].counts, e.counts);

  const auto bad = ParseFlightDump(
      "{\"schema\":\"dsdiag.flight/1\",\"rank\":1,\"ts\":1,\"entries\":["
      "{\"pg\":0,\"seq\":1,\"state\":\"issued\",\"send\":[1,2],\"recv\":[1]},"
      "{\"pg\":0,\"seq\":2,\"state\":\"issued\",\"send\":\"x\",\"recv\":[1]}]}",
      "p", &issue);
  ASSERT_TRUE(bad.has_value()) << issue.ToString();
  EXPECT_TRUE(bad->entries.empty());
  EXPECT_EQ(bad->entries_skipped, 2);
  EXPECT_EQ(bad->first_entry_problem,
            "entries[0]: expected \"send\" and \"recv\" with one count per peer");
}

// Point-to-point messages are a list of their own (`p2p`), never `entries`: their seq is
// their pair's. Peer, group peer (where it differs) and the job's tag read back.
TEST(FlightDumpTest, PointToPointMessagesReadBackInTheirOwnList) {
  FlightDump d;
  d.rank = 2;
  d.world_size = 4;
  FlightDumpEntry e;
  e.pg = 1;
  e.seq = 3;
  e.what.op = "recv";
  e.peer = 3;
  e.group_peer = 1;
  e.match_tag = 7;
  e.what.dtype = "f32";
  e.what.count = 16;
  e.what.tag = "irecv";
  e.state = CollectiveState::kStarted;
  e.issued = 5;
  e.started = 6;
  d.p2p.push_back(e);
  FlightDumpEntry any = e;  // a recv from any source, not yet matched
  any.seq = -1;
  any.peer = -1;
  any.group_peer = -1;
  any.match_tag = 0;
  any.state = CollectiveState::kIssued;
  any.started.reset();
  d.p2p.push_back(any);
  const std::string text = FlightDumpJson(d);
  EXPECT_NE(text.find("\"entries\":[],\"p2p\":[{\"pg\":1,\"seq\":3,\"op\":\"recv\",\"peer\":3,"
                      "\"group_peer\":1,\"match_tag\":7,\"dtype\":\"f32\""),
            std::string::npos)
      << text;
  LocatedIssue issue;
  const auto back = ParseFlightDump(text, "f.json", &issue);
  ASSERT_TRUE(back.has_value()) << issue.ToString();
  EXPECT_TRUE(back->entries.empty());
  EXPECT_EQ(back->OldestPending(), nullptr);  // collectives only
  ASSERT_EQ(back->p2p.size(), 2u);
  EXPECT_EQ(back->p2p[0].peer, 3);
  EXPECT_EQ(back->p2p[0].group_peer, 1);
  EXPECT_EQ(back->p2p[0].match_tag, 7);
  EXPECT_EQ(back->p2p[1].peer, -1);
  EXPECT_EQ(back->p2p[1].group_peer, -1);  // on the default group: the global rank
  EXPECT_EQ(FlightDumpJson(*back), text);

  const auto bad = ParseFlightDump(
      "{\"schema\":\"dsdiag.flight/1\",\"rank\":1,\"ts\":1,\"entries\":[],\"p2p\":["
      "{\"pg\":0,\"seq\":1,\"op\":\"send\",\"state\":\"issued\"},"
      "{\"pg\":0,\"seq\":2,\"op\":\"send\",\"peer\":1,\"state\":\"issued\"}]}",
      "p", &issue);
  ASSERT_TRUE(bad.has_value()) << issue.ToString();
  ASSERT_EQ(bad->p2p.size(), 1u);
  EXPECT_EQ(bad->p2p[0].group_peer, 1);
  EXPECT_EQ(bad->entries_skipped, 1);
  EXPECT_EQ(bad->first_entry_problem, "p2p[0]: expected integer field \"peer\" (-1: any source)");
}

TEST(FlightDumpTest, AMissingFileIsAnIssueNotAnException) {
  LocatedIssue issue;
  EXPECT_FALSE(ReadFlightDumpFile("/nonexistent/flight-rank-00001.json", &issue).has_value());
  EXPECT_EQ(issue.line, 0);
  EXPECT_EQ(issue.file, "/nonexistent/flight-rank-00001.json");
  EXPECT_NE(issue.ToString().find("expected a readable flight dump"), std::string::npos);
}

}  // namespace
}  // namespace dsdiag::trace
