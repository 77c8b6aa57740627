// Call sites (probes/call_sites.h): a collective's `coll` record names the line that issued
// it by a `site` id, its `site` record written once; light mode's `colls` records carry the
// sites in their template, so a steady step adds no byte; flight dumps list the sites their
// entries name; and a trace without sites still reads (every site unknown).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "probes/collective_probe.h"
#include "probes/flight_recorder.h"
#include "probes/session.h"
#include "tests/support/files.h"
#include "tests/support/temp_dir.h"
#include "trace/flight_dump.h"
#include "trace/records/coll_record.h"
#include "trace/records/site_record.h"
#include "trace/trace_reader.h"

namespace dsdiag::probes {
namespace {

std::unique_ptr<Session> Start(const std::string& dir, Mode mode) {
  SessionConfig config;
  config.mode = mode;
  config.run_dir = dir;
  config.header.run_id = "call-sites-test";
  config.header.world_size = 1;
  std::string error;
  auto s = Session::Start(config, &error);
  EXPECT_TRUE(s) << error;
  return s;
}

TEST(CallSites, EachLineIsWrittenOnceAndASteadyStepAddsNoByte) {
  test_support::TempDir dir("call-sites");
  int grads_line = 0, metrics_line = 0;
  {
    auto s = Start(dir.path(), Mode::kLight);
    CollectiveProbe probe(s.get(), nullptr);
    for (int step = 0; step < 6; ++step) {
      s->BeginStep(step, 0);
      {
        grads_line = __LINE__ + 1;  // the scope's own line
        CollectiveScope c(&probe, 0, {"allreduce", "f32", 8, 32, "grads"});
      }
      {
        metrics_line = __LINE__ + 1;
        CollectiveScope c(&probe, 0, {"allreduce", "f32", 8, 32, "metrics"});
      }
      s->EndStep({});
    }
    s->End("ok", 0);
  }
  const std::string path = dir.path() + "/rank-00000.jsonl";
  const std::string text = test_support::ReadFile(path);
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  ASSERT_TRUE(reader) << error;
  std::map<int64_t, std::pair<std::string, int64_t>> sites;  // id -> (file, line)
  std::vector<std::string> colls;
  trace::Record r;
  while (reader->Next(&r)) {
    if (r.type_id() == trace::rec_id::kSite) {
      const trace::records::SiteView v(r);
      EXPECT_FALSE(sites.count(*v.id())) << "site " << *v.id() << " written twice";
      sites[*v.id()] = {std::string(*v.file()), *v.line()};
      EXPECT_EQ(*v.fn(), "TestBody");
    } else if (r.type_id() == trace::rec_id::kCollective) {
      const trace::records::CollView c(r);
      ASSERT_TRUE(sites.count(c.site())) << "a coll record names an unwritten site";
      colls.push_back(std::string(*c.tag()) + "@" + std::to_string(sites[c.site()].second));
    }
  }
  ASSERT_EQ(sites.size(), 2u);
  for (const auto& [id, site] : sites)
    EXPECT_NE(site.first.find("call_sites_test.cc"), std::string::npos) << site.first;
  ASSERT_EQ(colls.size(), 12u);
  for (size_t i = 0; i < colls.size(); i += 2) {
    EXPECT_EQ(colls[i], "grads@" + std::to_string(grads_line));
    EXPECT_EQ(colls[i + 1], "metrics@" + std::to_string(metrics_line));
  }
  // Steps 1..5 repeat step 0: one `colls` record each, which names no site.
  size_t compact = 0;
  for (size_t at = text.find("\"type\":\"colls\""); at != std::string::npos;
       at = text.find("\"type\":\"colls\"", at + 1)) {
    ++compact;
    EXPECT_EQ(text.substr(at, text.find('\n', at) - at).find("site"), std::string::npos);
  }
  EXPECT_EQ(compact, 5u);
}

TEST(CallSites, ASiteGivenAsTextIsNumberedOnceAndNamedInFlightDumps) {
  test_support::TempDir dir("call-sites");
  auto s = Start(dir.path(), Mode::kFull);
  trace::TraceHeader header;
  header.run_id = "call-sites-test";
  FlightRecorder recorder(header, dir.path());
  CollectiveProbe probe(s.get(), &recorder);
  const int64_t id = probe.SiteId("train.py", 35, "train_step");
  EXPECT_NE(id, 0);
  EXPECT_EQ(probe.SiteId("train.py", 35, "train_step"), id);
  EXPECT_NE(probe.SiteId("train.py", 31, "train_step"), id);
  trace::Collective what{"allreduce", "f32", 8, 32, "metrics", id};
  CollectiveScope pending(&probe, 0, what, SourceLocation{});
  pending.Started();
  trace::LocatedIssue issue;
  const auto dump = trace::ParseFlightDump(recorder.DumpJson("test", 0, Phase::kSync),
                                           "flight-rank-00000.json", &issue);
  ASSERT_TRUE(dump) << issue.ToString();
  ASSERT_EQ(dump->entries.size(), 1u);
  const trace::CallSite* site = dump->Site(dump->entries[0].what.site);
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->file, "train.py");
  EXPECT_EQ(site->line, 35);
  EXPECT_EQ(site->fn, "train_step");
  EXPECT_EQ(dump->sites.size(), 2u);
  // Written back as read.
  const auto again = trace::ParseFlightDump(trace::FlightDumpJson(*dump), "again", &issue);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->entries[0].what, dump->entries[0].what);
  EXPECT_EQ(again->Site(id)->line, 35);
}

// A v2 trace from before sites: `coll` records without `site` and a `colls` record after them.
TEST(CallSites, ATraceWithoutSitesReadsWithEverySiteUnknown) {
  test_support::TempDir dir("call-sites");
  const std::string path = dir.path() + "/rank-00000.jsonl";
  test_support::WriteFile(
      path,
      "{\"type\":\"header\",\"ts\":1,\"step\":0,\"schema\":\"dsdiag.trace/2\",\"run_id\":\"old\","
      "\"rank\":0,\"world_size\":1}\n"
      "{\"type\":\"coll\",\"ts\":10,\"step\":0,\"pg\":0,\"seq\":0,\"op\":\"allreduce\","
      "\"dtype\":\"f32\",\"n\":8,\"bytes\":32,\"dur\":5,\"tag\":\"grads\"}\n"
      "{\"type\":\"colls\",\"ts\":100,\"step\":1,\"pg\":0,\"seq\":1,\"at_us\":[0],"
      "\"dur_us\":[1]}\n");
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  ASSERT_TRUE(reader) << error;
  int colls = 0;
  trace::Record r;
  while (reader->Next(&r)) {
    if (r.type_id() != trace::rec_id::kCollective) continue;
    ++colls;
    EXPECT_EQ(trace::records::CollView(r).site(), 0);
    EXPECT_FALSE(r.Has(trace::records::CollKeys::site));
  }
  EXPECT_EQ(colls, 2);
  EXPECT_EQ(reader->issue_count(), 0);
}

}  // namespace
}  // namespace dsdiag::probes
