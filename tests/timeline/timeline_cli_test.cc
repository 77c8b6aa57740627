// `dsdiag timeline` end to end on `dsdiag synth` runs: valid JSON with every rank, thread,
// span, counter and finding; a clock-skewed rank aligned; --steps/--ranks; bad input; and
// the output loaded by a real viewer's importer (speedscope, when installed).
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/shell.h"
#include "tests/timeline/timeline_test_util.h"

namespace dsdiag::timeline {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::Timeline;
using trace::JsonValue;

using test_support::CommandResult;
using test_support::Quote;
using test_support::RunShell;

using test_support::Contains;

class TimelineCliTest : public ::testing::Test {
 protected:
  CommandResult Dsdiag(const std::string& args) { return test_support::RunDsdiag(args); }
  // A synthetic run under the scratch dir; fails the test if synth does.
  std::string Synth(const std::string& name, const std::string& args) {
    const std::string dir = tmp_ / name;
    const CommandResult r = Dsdiag("synth " + args + " --out " + Quote(dir));
    EXPECT_EQ(r.status, 0) << r.err;
    return dir;
  }
  // `dsdiag timeline` on `dir`, expecting success; returns the file's text.
  std::string Draw(const std::string& dir, const std::string& extra = "") {
    const std::string out = dir + ".json";
    const CommandResult r = Dsdiag("timeline " + Quote(dir) + " -o " + Quote(out) + " " + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");  // quiet when stderr is not a terminal
    EXPECT_EQ(r.out, "");
    return ReadFile(out);
  }
  static std::vector<const JsonValue*> Cat(const Timeline& t, const std::string& cat) {
    return t.Where([&](const JsonValue& e) { return Timeline::Str(e, "cat") == cat; });
  }

  TempDir tmp_;
};

TEST_F(TimelineCliTest, HelpExitsZero) {
  const CommandResult r = Dsdiag("timeline --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "usage: dsdiag timeline RUN_DIR -o FILE.json")) << r.out;
  EXPECT_TRUE(Contains(r.out, "--steps")) << r.out;
  EXPECT_TRUE(Contains(r.out, "--ranks")) << r.out;
  EXPECT_TRUE(Contains(Dsdiag("help").out, "timeline"));
}

TEST_F(TimelineCliTest, BadUsageExitsTwoNamingTheProblem) {
  const std::string run = Synth("run", "--ranks 2 --steps 2");
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : {
           Case{"timeline", "missing RUN_DIR"},
           Case{"timeline " + run, "missing -o"},
           Case{"timeline " + run + " -o x.json --steps 5:2", "--steps"},
           Case{"timeline " + run + " -o x.json --steps abc", "--steps"},
           Case{"timeline " + run + " -o x.json --ranks 1-a", "--ranks"},
           Case{"timeline " + run + " -o x.json --bogus", "bogus"},
           Case{"timeline " + run + " -o x.json --format xml", "--format must be json or perfetto"},
       }) {
    const CommandResult r = Dsdiag(c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_TRUE(Contains(r.err, c.message)) << c.args << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

// The output's name picks the format unless --format says otherwise. A Perfetto trace is a
// protobuf Trace: its first byte is packet's tag (field 1, length-delimited); the decoding
// itself is perfetto_decode_test.py's, with Perfetto's own protos.
TEST_F(TimelineCliTest, FormatFollowsTheFileNameUnlessGiven) {
  const std::string run = Synth("run", "--ranks 2 --steps 2");
  struct Case {
    std::string file, extra;
    bool perfetto;
  };
  for (const Case& c :
       {Case{"t.json", "", false}, Case{"t.pftrace", "", true}, Case{"t.perfetto-trace", "", true},
        Case{"t.trace", "", false}, Case{"u.json", "--format perfetto", true},
        Case{"u.pftrace", "--format json", false}}) {
    const std::string out = tmp_ / c.file;
    const CommandResult r = Dsdiag("timeline " + Quote(run) + " -o " + Quote(out) + " " + c.extra);
    ASSERT_EQ(r.status, 0) << c.file << " " << c.extra << ": " << r.err;
    const std::string text = ReadFile(out);
    ASSERT_FALSE(text.empty()) << c.file;
    if (c.perfetto) {
      EXPECT_EQ(text[0], '\x0a') << c.file << " " << c.extra;
    } else {
      EXPECT_TRUE(Timeline(text).valid()) << c.file << " " << c.extra;
    }
  }
}

TEST_F(TimelineCliTest, UnreadableRunDirExitsTwoLikeCompare) {
  const std::string out = tmp_ / "t.json";
  const std::string missing = tmp_ / "no-such-run";
  CommandResult r = Dsdiag("timeline " + Quote(missing) + " -o " + Quote(out));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, missing)) << r.err;
  EXPECT_EQ(r.err, Dsdiag("compare " + Quote(missing)).err.replace(7, 7, "timeline"));
  EXPECT_FALSE(fs::exists(out)) << "the output is not touched when the input is bad";

  const std::string empty = tmp_ / "empty";
  fs::create_directory(empty);
  r = Dsdiag("timeline " + Quote(empty) + " -o " + Quote(out));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "no rank traces")) << r.err;
}

TEST_F(TimelineCliTest, UnwritableOutputExitsTwoNamingThePath) {
  const std::string run = Synth("run", "--ranks 2 --steps 2");
  for (const std::string& out : {tmp_ / "no-such-dir/t.json", tmp_.path()}) {
    const CommandResult r = Dsdiag("timeline " + Quote(run) + " -o " + Quote(out));
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_TRUE(Contains(r.err, "cannot write '" + out + "'")) << r.err;
  }
}

TEST_F(TimelineCliTest, RanksSelectingNoTraceExitsTwo) {
  const std::string run = Synth("run", "--ranks 2 --steps 2");
  const CommandResult r =
      Dsdiag("timeline " + Quote(run) + " -o " + Quote(tmp_ / "t.json") + " --ranks 5-9");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "--ranks 5-9 selects none")) << r.err;
}

TEST_F(TimelineCliTest, CleanRunHasEveryRankThreadSpanAndCounter) {
  const std::string run = Synth("clean", "--ranks 4 --steps 6");
  Timeline t(Draw(run));
  ASSERT_TRUE(t.valid());
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(t.MetaName("process_name", rank), "rank " + std::to_string(rank) + " (synth-host-0)");
    EXPECT_EQ(t.MetaName("thread_name", rank, 0), "main");
    for (int s = 0; s < 6; ++s) EXPECT_NE(t.One("X", "step " + std::to_string(s), rank), nullptr);
    EXPECT_NE(t.One("i", "end: ok", rank), nullptr);
  }
  EXPECT_EQ(Cat(t, "phase").size(), 4u * 6 * 5);
  const auto colls = Cat(t, "coll");
  ASSERT_FALSE(colls.empty());
  EXPECT_EQ(colls.size() % 4, 0u);
  for (const JsonValue* c : colls) {
    const JsonValue& a = Timeline::Args(*c);
    for (const char* key : {"seq", "pg", "op", "bytes", "n", "tag", "wait", "last"})
      EXPECT_NE(a.Find(key), nullptr) << key;
    EXPECT_GE(Timeline::Int(a, "wait"), 0);
    EXPECT_LE(Timeline::Num(a, "wait") / 1000, Timeline::Num(*c, "dur") + 0.125);
    EXPECT_EQ(Timeline::Int(a, "ranks"), 4);
  }
  std::set<std::string> counters;
  for (const JsonValue* c : t.Phase("C")) counters.insert(Timeline::Str(*c, "name"));
  EXPECT_EQ(counters, (std::set<std::string>{"grad norm", "loss", "lr", "samples/s",
                                             "collectives ms", "collective wait ms"}));
  EXPECT_TRUE(Cat(t, "finding").empty());  // a clean run has no finding
  // Timestamps start near 0.
  double earliest = 1e300;
  for (const JsonValue& e : t.events())
    if (Timeline::Str(e, "ph") != "M") earliest = std::min(earliest, Timeline::Num(e, "ts"));
  EXPECT_EQ(earliest, 0.0);
}

// Rank 1's wall clock runs 500 ms ahead; its trace's offset says so. Its steps must line up
// with the other ranks' (they start together within ~0.1 ms in synth).
TEST_F(TimelineCliTest, ClockSkewedRankIsAligned) {
  const std::string run = Synth("skew", "--ranks 4 --steps 5 --inject clock-skew:rank=1,ms=500");
  // The premise: rank 1's raw clocks really are 500 ms off rank 0's.
  std::map<int, trace::ClockReference> clocks;
  for (int rank : {0, 1}) {
    std::string error;
    auto reader = trace::TraceReader::Open(run + "/" + trace::RankTraceFileName(rank), &error);
    ASSERT_TRUE(reader) << error;
    ASSERT_TRUE(reader->ReadHeader());
    clocks[rank] = reader->header()->clock;
  }
  const int64_t raw_skew =
      (clocks[1].wall_ns - clocks[1].mono_ns) - (clocks[0].wall_ns - clocks[0].mono_ns);
  ASSERT_GT(std::llabs(raw_skew), 400 * 1000000LL) << "synth did not skew rank 1";

  Timeline t(Draw(run));
  ASSERT_TRUE(t.valid());
  for (int s = 0; s < 5; ++s) {
    const std::string name = "step " + std::to_string(s);
    const JsonValue* ref = t.One("X", name, 0);
    ASSERT_NE(ref, nullptr);
    for (int rank : {1, 2, 3}) {
      const JsonValue* e = t.One("X", name, rank);
      ASSERT_NE(e, nullptr);
      EXPECT_LT(std::fabs(Timeline::Num(*e, "ts") - Timeline::Num(*ref, "ts")), 5000.0)
          << name << " of rank " << rank << " (us)";
    }
  }
}

struct FindingText {
  std::string kind, severity, summary;
  bool operator<(const FindingText& o) const {
    return std::tie(kind, severity, summary) < std::tie(o.kind, o.severity, o.summary);
  }
  bool operator==(const FindingText& o) const {
    return std::tie(kind, severity, summary) == std::tie(o.kind, o.severity, o.summary);
  }
};

// Whatever compare finds for these faults (its analyzers grow over time) must be drawn.
TEST_F(TimelineCliTest, EveryFindingOfCompareIsAnInstant) {
  size_t total = 0;
  for (const std::string inject : {"crash:rank=2,step=3", "hang:rank=1,step=2",
                                   "straggler:rank=3,ms=40", "unused-param:rank=1"}) {
    SCOPED_TRACE(inject);
    const std::string name = inject.substr(0, inject.find(':'));
    const std::string run = Synth(name, "--ranks 4 --steps 6 --inject " + inject);
    const CommandResult compare = Dsdiag("compare --format json " + Quote(run));
    ASSERT_NE(compare.status, 2) << compare.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_FALSE(parser.parse(compare.out).get(doc)) << compare.out;
    std::multiset<FindingText> expected;
    for (simdjson::dom::element f : doc["findings"].get_array()) {
      expected.insert({std::string(f["kind"].get_string().value()),
                       std::string(f["severity"].get_string().value()),
                       std::string(f["summary"].get_string().value())});
    }
    total += expected.size();

    Timeline t(Draw(run));
    ASSERT_TRUE(t.valid());
    std::multiset<FindingText> drawn;
    for (const JsonValue* e : Cat(t, "finding")) {
      EXPECT_EQ(Timeline::Str(*e, "ph"), "i");
      const JsonValue& a = Timeline::Args(*e);
      drawn.insert(
          {Timeline::Str(a, "kind"), Timeline::Str(a, "severity"), Timeline::Str(a, "summary")});
      EXPECT_NE(a.Find("subject"), nullptr);
      EXPECT_GE(Timeline::Num(*e, "ts"), 0.0);
    }
    EXPECT_TRUE(drawn == expected) << drawn.size() << " drawn, " << expected.size() << " expected";
  }
  EXPECT_GT(total, 0u) << "compare found nothing to draw";
}

TEST_F(TimelineCliTest, StepsAndRanksSelect) {
  const std::string run = Synth("run", "--ranks 4 --steps 6");
  Timeline t(Draw(run, "--steps 2:3 --ranks 1,3"));
  ASSERT_TRUE(t.valid());
  std::set<int64_t> pids;
  std::set<std::string> steps;
  for (const JsonValue& e : t.events()) {
    pids.insert(Timeline::Int(e, "pid"));
    if (Timeline::Str(e, "cat") == "step") steps.insert(Timeline::Str(e, "name"));
  }
  EXPECT_EQ(pids, (std::set<int64_t>{1, 3}));
  EXPECT_EQ(steps, (std::set<std::string>{"step 2", "step 3"}));
  const JsonValue* other = t.root().Find("otherData");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(Timeline::Str(*other, "ranks"), "1,3");
  EXPECT_EQ(Timeline::Str(*other, "steps"), "2:3");
}

TEST_F(TimelineCliTest, DashWritesToStdout) {
  const std::string run = Synth("run", "--ranks 2 --steps 2");
  const CommandResult r = Dsdiag("timeline " + Quote(run) + " -o -");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  Timeline t(r.out);
  EXPECT_TRUE(t.valid());
  EXPECT_NE(t.One("X", "step 1", 1), nullptr);
}

// ---- speedscope ----

std::string FindSpeedscope() {
  std::vector<std::string> candidates;
  if (const char* d = std::getenv("DSDIAG_SPEEDSCOPE_DIR")) candidates.push_back(d);
  candidates.push_back(std::string(DSDIAG_BUILD_DIR) + "/npm/node_modules/speedscope");
  if (const char* d = std::getenv("DSDIAG_VIEWERS_DIR"))
    candidates.push_back(std::string(d) + "/node_modules/speedscope");
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache || home) {
    candidates.push_back((cache ? std::string(cache) : std::string(home) + "/.cache") +
                         "/dsdiag/viewers/node_modules/speedscope");
  }
  for (const auto& c : candidates)
    if (fs::exists(c + "/package.json")) return c;
  return "";
}

class SpeedscopeTest : public TimelineCliTest {
 protected:
  void SetUp() override {
    if (RunShell("command -v node").status != 0)
      GTEST_SKIP() << "node not found: install Node.js to load timelines with speedscope";
    speedscope_ = FindSpeedscope();
    if (speedscope_.empty())
      GTEST_SKIP() << "speedscope not installed: run scripts/install-viewers "
                      "(or set DSDIAG_SPEEDSCOPE_DIR to its package dir)";
  }
  // Runs speedscope's importer on `file`; its one-line JSON report, parsed.
  JsonValue Import(const std::string& file, int* status) {
    const CommandResult r = RunShell(
        "node " + Quote(std::string(DSDIAG_SOURCE_DIR) + "/tests/timeline/speedscope_import.mjs") +
        " " + Quote(speedscope_) + " " + Quote(file));
    *status = r.status;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (r.status != 0 || parser.parse(r.out).get(doc)) {
      ADD_FAILURE() << "speedscope import failed (" << r.status << "): " << r.err << r.out;
      return JsonValue();
    }
    return trace::ToJsonValue(doc);
  }
  std::string speedscope_;
};

TEST_F(SpeedscopeTest, ImportsTheTimelineAsChromeTraceWithNestedSpans) {
  for (const std::string inject : {"", "--inject crash:rank=2,step=3"}) {
    SCOPED_TRACE(inject);
    const std::string run =
        Synth(inject.empty() ? "clean" : "crash", "--ranks 4 --steps 5 " + inject);
    Draw(run);
    int status = 0;
    const JsonValue report = Import(run + ".json", &status);
    ASSERT_EQ(status, 0);
    EXPECT_EQ(Timeline::Str(report, "format"), "Trace Event Format profile");
    const JsonValue* profiles = report.Find("profiles");
    ASSERT_TRUE(profiles && profiles->is_array());
    // One profile per track: each rank's main thread and its collectives lane.
    std::set<std::string> names;
    for (const JsonValue& p : profiles->elements()) names.insert(Timeline::Str(p, "name"));
    for (int rank = 0; rank < 4; ++rank) {
      const std::string process =
          "rank " + std::to_string(rank) + " (synth-host-0) (pid " + std::to_string(rank) + ")";
      EXPECT_TRUE(names.count(process + ", main (tid 0)")) << process;
      EXPECT_TRUE(names.count(process + ", collectives (tid 1000000)")) << process;
    }
    const JsonValue* problems = report.Find("problems");
    ASSERT_TRUE(problems && problems->is_array());
    EXPECT_TRUE(problems->elements().empty()) << problems->ToJson();
  }
}

// The check above can fail: spans that overlap without nesting are reported.
TEST_F(SpeedscopeTest, ReportsSpansThatDoNotNest) {
  const std::string file = tmp_ / "bad.json";
  std::ofstream(file) << R"({"traceEvents":[
    {"ph":"X","name":"a","pid":0,"tid":0,"ts":0,"dur":10},
    {"ph":"X","name":"b","pid":0,"tid":0,"ts":5,"dur":10}]})";
  int status = 0;
  const JsonValue report = Import(file, &status);
  ASSERT_EQ(status, 0);
  const JsonValue* problems = report.Find("problems");
  ASSERT_TRUE(problems && problems->is_array());
  EXPECT_FALSE(problems->elements().empty());
}

}  // namespace
}  // namespace dsdiag::timeline
