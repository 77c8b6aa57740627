// synth/synth_run.h: the synthetic traces are deterministic, schema-valid (every line is a
// JSON object with type/ts/step), shaped like the trainer's, and each imitated fault
// leaves the footprint the analyzers look for.
#include "synth/synth_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "tests/synth/synth_test_util.h"

namespace dsdiag::synth {
namespace {

using testing::OfType;
using testing::ParseRecords;
using testing::ReadFile;
using testing::Record;
using testing::TempDir;

constexpr int64_t kMsNs = 1000000;

SynthConfig Config(int ranks, int64_t steps, std::vector<std::string> injects = {},
                   uint64_t seed = 1234) {
  SynthConfig c;
  c.ranks = ranks;
  c.steps = steps;
  c.seed = seed;
  c.injects = std::move(injects);
  return c;
}

// The header's clock pair and offset: maps a rank's ts onto rank 0's wall clock.
struct HeaderClock {
  int64_t mono = 0, wall = 0, offset = 0, offset_err = 0;
  int64_t ToRank0(int64_t ts) const { return ts - mono + wall - offset; }
};

HeaderClock ClockOf(const std::string& trace) {
  simdjson::dom::parser parser;
  simdjson::dom::element header = parser.parse(testing::SplitLines(trace).at(0));
  HeaderClock c;
  c.mono = int64_t(header["clock"]["mono"]);
  c.wall = int64_t(header["clock"]["wall"]);
  c.offset = int64_t(header["clock"]["offset"]);
  c.offset_err = int64_t(header["clock"]["offset_err"]);
  return c;
}

// --- determinism and files ---------------------------------------------------------------

TEST(SynthRunTest, SameSeedSameBytesOtherSeedOtherBytes) {
  const SynthRun a(Config(6, 8, {"straggler:rank=1,ms=20"}));
  const SynthRun b(Config(6, 8, {"straggler:rank=1,ms=20"}));
  const SynthRun c(Config(6, 8, {"straggler:rank=1,ms=20"}, 99));
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(a.RankTrace(r), b.RankTrace(r)) << "rank " << r;
    EXPECT_NE(a.RankTrace(r), c.RankTrace(r)) << "rank " << r;
  }
}

TEST(SynthRunTest, WrittenFilesDoNotDependOnThreads) {
  const SynthRun run(Config(37, 5, {"hang:rank=4,step=3"}));
  TempDir one, four;
  WriteOptions o;
  o.threads = 1;
  o.out_dir = one.path() + "/run";
  const WriteResult r1 = WriteRun(run, o);
  o.threads = 4;
  o.out_dir = four.path() + "/run";
  const WriteResult r4 = WriteRun(run, o);
  EXPECT_EQ(r1.files, 37 + 36);  // every rank, plus the 36 survivors' flight dumps
  EXPECT_EQ(r1.files, r4.files);
  EXPECT_EQ(r1.bytes, r4.bytes);
  for (const auto& e : std::filesystem::directory_iterator(one.path() + "/run")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(ReadFile(e.path().string()), ReadFile(four.path() + "/run/" + name)) << name;
  }
}

TEST(SynthRunTest, FileNamesAreRankPadded) {
  TempDir dir;
  WriteOptions o;
  o.out_dir = dir / "run";
  WriteRun(SynthRun(Config(12, 2)), o);
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(o.out_dir))
    names.insert(e.path().filename().string());
  std::set<std::string> expected;
  for (int r = 0; r < 12; ++r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "rank-%05d.jsonl", r);
    expected.insert(buf);
  }
  EXPECT_EQ(names, expected);
}

TEST(SynthRunTest, RefusesNonEmptyDirUnlessForced) {
  TempDir dir;
  WriteOptions o;
  o.out_dir = dir.path();
  WriteRun(SynthRun(Config(4, 2)), o);
  EXPECT_THROW(WriteRun(SynthRun(Config(2, 2)), o), SynthSpecError);
  { std::ofstream(dir / "notes.txt") << "keep me"; }
  o.force = true;
  WriteRun(SynthRun(Config(2, 2)), o);
  // The stale ranks 2 and 3 of the first run are gone; other files are left alone.
  EXPECT_TRUE(std::filesystem::exists(dir / "rank-00001.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-00002.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "rank-00003.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir / "notes.txt"));
}

TEST(SynthRunTest, OutThatIsAFileIsRefused) {
  TempDir dir;
  { std::ofstream(dir / "file") << "x"; }
  WriteOptions o;
  o.out_dir = dir / "file";
  o.force = true;
  EXPECT_THROW(WriteRun(SynthRun(Config(2, 2)), o), SynthSpecError);
}

// --- schema ------------------------------------------------------------------------------

TEST(SynthRunTest, EveryLineIsARecordWithTypeTsStep) {
  const SynthRun run(Config(3, 4));
  for (int r = 0; r < 3; ++r) {
    const std::string trace = run.RankTrace(r);
    ASSERT_FALSE(trace.empty());
    EXPECT_EQ(trace.back(), '\n');
    const std::vector<Record> records = ParseRecords(trace);
    EXPECT_EQ(records.size(), testing::SplitLines(trace).size());
    int64_t last_step = 0;
    for (const Record& rec : records) {
      EXPECT_FALSE(rec.type.empty()) << rec.raw;
      EXPECT_GT(rec.ts, 0) << rec.raw;
      EXPECT_GE(rec.step, last_step) << "step went back: " << rec.raw;
      last_step = rec.step;
    }
    EXPECT_EQ(records.front().type, "header");
    EXPECT_EQ(records.back().type, "end");
    EXPECT_EQ(records.back().reason, "ok");
    EXPECT_EQ(records.back().status, 0);
  }
}

TEST(SynthRunTest, HeaderSaysWhoWroteTheFile) {
  const SynthRun run(Config(10, 2, {}, 7));
  simdjson::dom::parser parser;
  for (int r : {0, 7, 8, 9}) {
    const std::string trace = run.RankTrace(r);
    simdjson::dom::element h = parser.parse(testing::SplitLines(trace).at(0));
    EXPECT_EQ(std::string_view(h["schema"]), "dsdiag.trace/1");
    EXPECT_EQ(std::string_view(h["run_id"]), run.run_id());
    EXPECT_EQ(int64_t(h["rank"]), r);
    EXPECT_EQ(int64_t(h["world_size"]), 10);
    EXPECT_EQ(int64_t(h["local_rank"]), r % 8);
    EXPECT_EQ(std::string_view(h["host"]), "synth-host-" + std::to_string(r / 8));
    EXPECT_GT(int64_t(h["pid"]), 0);
    EXPECT_EQ(std::string_view(h["versions"]["dsdiag"]), DSDIAG_VERSION);
    EXPECT_EQ(std::string_view(h["env"]["OMP_NUM_THREADS"]), "1");
    EXPECT_EQ(int64_t(h["config"]["steps"]), 2);
    EXPECT_EQ(int64_t(h["config"]["batch_size"]), 8);
    EXPECT_EQ(std::string_view(h["config"]["amp"]), "off");
    EXPECT_EQ(std::string_view(h["config"]["probes"]), "light");
    EXPECT_EQ(int64_t(h["config"]["seed"]), 7);
    EXPECT_EQ(std::string_view(h["config"]["model"]), "synth");
    EXPECT_EQ(int64_t(h["clock"]["mono"]), int64_t(h["ts"]));
    EXPECT_GT(int64_t(h["clock"]["wall"]), int64_t{1700000000} * 1000000000);
    EXPECT_EQ(int64_t(h["clock"]["offset_err"]) == 0, r == 0);
    if (r == 0) {
      EXPECT_EQ(int64_t(h["clock"]["offset"]), 0);
    }
  }
}

TEST(SynthRunTest, ParamsTableAndBucketsCoverEveryParameterOnce) {
  const std::string trace = SynthRun(Config(2, 1)).RankTrace(1);
  const std::vector<Record> params = OfType(ParseRecords(trace), "params");
  ASSERT_EQ(params.size(), 1u);
  simdjson::dom::parser parser;
  simdjson::dom::element p = parser.parse(params[0].raw);
  std::vector<std::string> names;
  for (simdjson::dom::element n : simdjson::dom::array(p["names"]))
    names.emplace_back(std::string_view(n));
  ASSERT_EQ(names.size(), 24u);
  EXPECT_EQ(names.front(), "embed.weight");
  EXPECT_EQ(names.back(), "head.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "blocks.1.moe.experts.3.w_out.weight"),
            names.end());
  EXPECT_EQ(simdjson::dom::array(p["shapes"]).size(), 24u);
  EXPECT_EQ(simdjson::dom::array(p["dtypes"]).size(), 24u);
  std::multiset<int64_t> seen;
  size_t buckets = 0;
  for (simdjson::dom::element b : simdjson::dom::array(p["buckets"])) {
    ++buckets;
    for (simdjson::dom::element i : simdjson::dom::array(b)) seen.insert(int64_t(i));
  }
  EXPECT_GE(buckets, 2u);
  EXPECT_EQ(seen.size(), 24u);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(seen.count(i), 1u) << "param " << i;
}

TEST(SynthRunTest, StepsHavePhasesCollectivesGradAndSummary) {
  const int64_t kSteps = 5;
  const SynthRun run(Config(4, kSteps));
  std::vector<std::vector<int64_t>> seqs;
  for (int r = 0; r < 4; ++r) {
    const std::vector<Record> records = ParseRecords(run.RankTrace(r));
    const std::vector<Record> steps = OfType(records, "step");
    ASSERT_EQ(steps.size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(OfType(records, "step_begin").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(OfType(records, "grad").size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(OfType(records, "phase").size(), static_cast<size_t>(5 * kSteps));
    // The step's dur is the sum of its phases, and the phase names are the trainer's.
    std::map<int64_t, int64_t> phase_sum;
    for (const Record& p : OfType(records, "phase")) {
      EXPECT_TRUE(p.name == "data" || p.name == "forward" || p.name == "backward" ||
                  p.name == "sync" || p.name == "optimizer")
          << p.raw;
      EXPECT_GT(p.dur, 0) << p.raw;
      phase_sum[p.step] += p.dur;
    }
    for (const Record& s : steps) EXPECT_EQ(s.dur, phase_sum[s.step]) << s.raw;
    // Loss falls over the run.
    simdjson::dom::parser parser;
    const double first = double(parser.parse(steps.front().raw)["loss"]);
    const double last = double(parser.parse(steps.back().raw)["loss"]);
    EXPECT_LT(last, first);
    std::vector<int64_t> seq;
    for (const Record& c : OfType(records, "coll")) {
      seq.push_back(c.seq);
      EXPECT_EQ(c.tag.rfind("grad-bucket-", 0), 0u) << c.raw;
      EXPECT_GT(c.dur, 0) << c.raw;
    }
    seqs.push_back(seq);
  }
  ASSERT_FALSE(seqs[0].empty());
  EXPECT_EQ(seqs[0].size() % kSteps, 0u);
  for (size_t i = 0; i < seqs[0].size(); ++i) EXPECT_EQ(seqs[0][i], static_cast<int64_t>(i));
  for (int r = 1; r < 4; ++r) EXPECT_EQ(seqs[r], seqs[0]) << "rank " << r;
}

// Per collective: when each rank entered and left it, on rank 0's clock.
struct CollTimes {
  std::map<int64_t, std::vector<int64_t>> enter, exit;  // seq -> per rank
};

CollTimes Collectives(const SynthRun& run, int ranks) {
  CollTimes t;
  for (int r = 0; r < ranks; ++r) {
    const std::string trace = run.RankTrace(r);
    const HeaderClock clock = ClockOf(trace);
    for (const Record& c : OfType(ParseRecords(trace), "coll")) {
      t.enter[c.seq].push_back(clock.ToRank0(c.ts));
      t.exit[c.seq].push_back(clock.ToRank0(c.ts + c.dur));
    }
  }
  return t;
}

TEST(SynthRunTest, CollectivesEndTogetherAfterTheLastRankEnters) {
  const int kRanks = 16;  // two hosts: offsets and their errors come into play
  const CollTimes t = Collectives(SynthRun(Config(kRanks, 6)), kRanks);
  ASSERT_FALSE(t.enter.empty());
  for (const auto& [seq, enters] : t.enter) {
    ASSERT_EQ(enters.size(), static_cast<size_t>(kRanks));
    const std::vector<int64_t>& exits = t.exit.at(seq);
    const int64_t last_enter = *std::max_element(enters.begin(), enters.end());
    const auto [lo, hi] = std::minmax_element(exits.begin(), exits.end());
    // Exits agree to within the clocks' error (tens of us); all come after the last enter.
    EXPECT_LT(*hi - *lo, 100000) << "seq " << seq;
    EXPECT_GT(*lo, last_enter - 100000) << "seq " << seq;
  }
}

// --- faults ------------------------------------------------------------------------------

TEST(SynthRunTest, StragglerEntersEveryGradientAllreduceLate) {
  const int kRanks = 8, kStraggler = 5;
  const SynthRun run(Config(kRanks, 6, {"straggler:rank=5,ms=40"}));
  const CollTimes t = Collectives(run, kRanks);
  for (const auto& [seq, enters] : t.enter) {
    for (int r = 0; r < kRanks; ++r) {
      if (r == kStraggler) continue;
      EXPECT_GT(enters[kStraggler], enters[r] + 30 * kMsNs) << "seq " << seq << " rank " << r;
    }
  }
  // The others wait for it: their first allreduce of each step lasts about 40 ms.
  for (const Record& c : OfType(ParseRecords(run.RankTrace(0)), "coll")) {
    if (c.tag == "grad-bucket-0") {
      EXPECT_GT(c.dur, 30 * kMsNs) << c.raw;
    }
  }
  // Its own backward is the long one.
  const auto backward = [&](int r) {
    int64_t sum = 0;
    for (const Record& p : OfType(ParseRecords(run.RankTrace(r)), "phase"))
      if (p.name == "backward") sum += p.dur;
    return sum;
  };
  EXPECT_GT(backward(kStraggler), backward(0) + 6 * 30 * kMsNs);
}

TEST(SynthRunTest, CleanRunHasNoConsistentLastArriver) {
  const int kRanks = 8;
  const CollTimes t = Collectives(SynthRun(Config(kRanks, 20)), kRanks);
  std::set<int> last;
  for (const auto& [seq, enters] : t.enter) {
    last.insert(static_cast<int>(std::max_element(enters.begin(), enters.end()) - enters.begin()));
  }
  EXPECT_GT(last.size(), 2u);
}

TEST(SynthRunTest, ClockSkewMovesWallClockAndMeasuredOffset) {
  const SynthRun plain(Config(4, 2));
  const SynthRun skewed(Config(4, 2, {"clock-skew:rank=1,ms=250"}));
  const HeaderClock p0 = ClockOf(plain.RankTrace(0)), p1 = ClockOf(plain.RankTrace(1));
  const HeaderClock s0 = ClockOf(skewed.RankTrace(0)), s1 = ClockOf(skewed.RankTrace(1));
  // Ranks 0 and 1 share a host (and its clocks): only the skew separates them.
  EXPECT_EQ((s1.wall - s1.mono) - (s0.wall - s0.mono), 250 * kMsNs);
  EXPECT_EQ((p1.wall - p1.mono) - (p0.wall - p0.mono), 0);
  EXPECT_LE(std::abs(s1.offset - 250 * kMsNs), s1.offset_err);
  EXPECT_LE(std::abs(p1.offset), p1.offset_err);
  // The `clock` records say the same.
  for (const Record& c : OfType(ParseRecords(skewed.RankTrace(1)), "clock")) {
    simdjson::dom::parser parser;
    EXPECT_EQ(int64_t(parser.parse(c.raw)["offset"]), s1.offset);
  }
}

TEST(SynthRunTest, UnusedParamListsTheExpertOnThatRankAtStepZero) {
  const SynthRun run(Config(4, 3, {"unused-param:rank=2"}));
  // blocks.1.moe.experts.2.w_in.weight / w_out.weight: indices 19 and 20 of the table.
  const std::vector<Record> grads = OfType(ParseRecords(run.RankTrace(2)), "grad");
  ASSERT_EQ(grads.size(), 3u);
  EXPECT_TRUE(grads[0].has_missing);
  EXPECT_EQ(grads[0].missing, (std::vector<int64_t>{19, 20}));
  for (const Record& g : grads) EXPECT_EQ(g.n_missing, 2) << g.raw;
  EXPECT_FALSE(grads[1].has_missing);  // unchanged sets are not repeated
  for (int r : {0, 1, 3}) {
    for (const Record& g : OfType(ParseRecords(run.RankTrace(r)), "grad")) {
      EXPECT_EQ(g.n_missing, 0) << g.raw;
      EXPECT_TRUE(g.missing.empty()) << g.raw;
    }
  }
  simdjson::dom::parser parser;
  simdjson::dom::element p = parser.parse(OfType(ParseRecords(run.RankTrace(2)), "params")[0].raw);
  EXPECT_EQ(std::string_view(p["names"].at(19)), "blocks.1.moe.experts.2.w_in.weight");
  EXPECT_EQ(std::string_view(p["names"].at(20)), "blocks.1.moe.experts.2.w_out.weight");
}

TEST(SynthRunTest, CrashCutsTheRankShortAndFailsThePeers) {
  const SynthRun run(Config(4, 6, {"crash:rank=2,step=3"}));
  const std::string dead = run.RankTrace(2);
  EXPECT_NE(dead.back(), '\n') << "the crashed rank's last line should be cut short";
  const std::vector<Record> records = ParseRecords(dead, /*allow_cut_tail=*/true);
  EXPECT_EQ(records.size() + 1, testing::SplitLines(dead).size());
  EXPECT_TRUE(OfType(records, "end").empty());
  EXPECT_EQ(records.back().type, "phase");
  EXPECT_EQ(records.back().step, 3);
  EXPECT_EQ(OfType(records, "step_begin").back().step, 3);
  EXPECT_EQ(OfType(records, "step").back().step, 2);

  const int64_t buckets =
      static_cast<int64_t>(OfType(ParseRecords(run.RankTrace(0)), "coll").size()) / 3;
  for (int r : {0, 1, 3}) {
    const std::vector<Record> peer = ParseRecords(run.RankTrace(r));
    ASSERT_GE(peer.size(), 2u);
    const Record& error = peer[peer.size() - 2];
    const Record& end = peer.back();
    EXPECT_EQ(error.type, "error");
    EXPECT_EQ(error.seq, 3 * buckets);
    EXPECT_EQ(end.type, "end");
    EXPECT_EQ(end.reason, "peer-failure");
    EXPECT_EQ(end.status, 1);
    EXPECT_EQ(OfType(peer, "step").back().step, 2);
    for (const Record& rec : peer) EXPECT_LE(rec.step, 3) << rec.raw;
    EXPECT_LT(OfType(peer, "coll").back().seq, 3 * buckets);
  }
}

TEST(SynthRunTest, HangLeavesPeersTimedOutInTheCollective) {
  const SynthRun run(Config(4, 6, {"hang:rank=1,step=2"}));
  const std::string stuck = run.RankTrace(1);
  EXPECT_EQ(stuck.back(), '\n');
  const std::vector<Record> records = ParseRecords(stuck);
  EXPECT_TRUE(OfType(records, "end").empty());
  EXPECT_EQ(records.back().type, "phase");
  EXPECT_EQ(records.back().name, "forward");
  EXPECT_EQ(records.back().step, 2);
  EXPECT_FALSE(run.HasFlightDump(1));

  const int64_t buckets =
      static_cast<int64_t>(OfType(ParseRecords(run.RankTrace(0)), "coll").size()) / 2;
  simdjson::dom::parser parser;
  for (int r : {0, 2, 3}) {
    const std::vector<Record> peer = ParseRecords(run.RankTrace(r));
    const Record& error = peer[peer.size() - 2];
    const Record& end = peer.back();
    EXPECT_EQ(error.type, "error");
    EXPECT_EQ(error.message.rfind("collective timeout", 0), 0u) << error.raw;
    EXPECT_EQ(error.seq, 2 * buckets);
    EXPECT_EQ(end.reason, "error");
    EXPECT_EQ(end.status, 1);
    // 60 s after entering the allreduce it never left.
    EXPECT_GT(error.ts - OfType(peer, "step_begin").back().ts, 60000 * kMsNs);

    ASSERT_TRUE(run.HasFlightDump(r));
    const std::string dump = run.FlightDump(r);
    simdjson::dom::element d = parser.parse(dump);
    EXPECT_EQ(std::string_view(d["schema"]), "dsdiag.flight/1");
    EXPECT_EQ(std::string_view(d["reason"]), "timeout");
    EXPECT_EQ(int64_t(d["rank"]), r);
    EXPECT_EQ(int64_t(d["where"]["step"]), 2);
    simdjson::dom::array entries = d["entries"];
    ASSERT_GT(entries.size(), static_cast<size_t>(buckets));
    bool found = false;
    for (simdjson::dom::element e : entries) {
      if (int64_t(e["seq"]) != 2 * buckets) continue;
      found = true;
      EXPECT_EQ(std::string_view(e["state"]), "started");
    }
    EXPECT_TRUE(found);
  }
}

// --- fingerprints ------------------------------------------------------------------------

// One `fp` record: (what, why, step) and its hashes.
struct Fp {
  std::string what, why, gran;
  int64_t step = -1;
  std::vector<std::string> h;
  std::string Key() const { return what + " " + why + " " + std::to_string(step); }
};

std::vector<Fp> FingerprintsOf(const std::string& trace) {
  std::vector<Fp> out;
  simdjson::dom::parser parser;
  for (const Record& r : OfType(ParseRecords(trace), "fp")) {
    simdjson::dom::element e = parser.parse(r.raw);
    Fp fp;
    fp.what = testing::StringOr(e, "what");
    fp.why = testing::StringOr(e, "why");
    fp.gran = testing::StringOr(e, "gran");
    fp.step = r.step;
    for (simdjson::dom::element x : simdjson::dom::array(e["h"]))
      fp.h.emplace_back(std::string_view(x));
    out.push_back(std::move(fp));
  }
  return out;
}

// Every rank's fingerprints by key ("param periodic 10" -> rank -> hashes).
std::map<std::string, std::vector<std::vector<std::string>>> FingerprintsByKey(
    const SynthRun& run) {
  std::map<std::string, std::vector<std::vector<std::string>>> out;
  for (int r = 0; r < run.ranks(); ++r) {
    for (Fp& fp : FingerprintsOf(run.RankTrace(r))) out[fp.Key()].push_back(std::move(fp.h));
  }
  return out;
}

TEST(SynthRunTest, FingerprintsAreWrittenLikeTheLightProbe) {
  const SynthRun run(Config(3, 12));
  const std::vector<Record> records = ParseRecords(run.RankTrace(1));
  const std::vector<Fp> fps = FingerprintsOf(run.RankTrace(1));
  // init, after-sync and pre-step each step, periodic after steps 0 and 10 (and the parameters
  // again before the steps after those), final.
  std::vector<std::string> keys;
  for (const Fp& fp : fps) {
    keys.push_back(fp.Key());
    EXPECT_EQ(fp.gran, "bucket");
    ASSERT_EQ(fp.h.size(), 3u) << fp.Key();  // one per bucket of the params table
    for (const std::string& h : fp.h) {
      EXPECT_EQ(h.size(), 16u) << h;
      EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
    }
  }
  std::vector<std::string> expected = {"param init 0", "grad after-sync 0", "grad pre-step 0",
                                       "param periodic 0"};
  for (int64_t s = 1; s < 12; ++s) {
    expected.push_back("grad after-sync " + std::to_string(s));
    expected.push_back("grad pre-step " + std::to_string(s));
    if (s == 1 || s == 11) expected.push_back("param pre-step " + std::to_string(s));
    if (s == 10) expected.push_back("param periodic 10");
  }
  expected.push_back("param final 12");
  EXPECT_EQ(keys, expected);
  // init comes after the broadcast, before step 0 begins.
  const auto first = [&](const std::string& type) {
    return std::find_if(records.begin(), records.end(),
                        [&](const Record& r) { return r.type == type; }) -
           records.begin();
  };
  EXPECT_LT(first("params"), first("fp"));
  EXPECT_LT(first("fp"), first("step_begin"));
  // Hashes move with the step and the bucket.
  EXPECT_NE(fps[1].h[0], fps[3].h[0]);
  EXPECT_NE(fps[1].h[0], fps[1].h[1]);
  EXPECT_NE(fps[0].h[0], fps[2].h[0]);
}

TEST(SynthRunTest, CleanFingerprintsAgreeAcrossRanksAndDependOnTheSeed) {
  const auto a = FingerprintsByKey(SynthRun(Config(5, 11)));
  const auto b = FingerprintsByKey(SynthRun(Config(5, 11)));
  const auto c = FingerprintsByKey(SynthRun(Config(5, 11, {}, 99)));
  EXPECT_EQ(a, b);
  // init, after-sync + pre-step, periodic at 0 and 10, the param pre-step of step 1, final
  EXPECT_EQ(a.size(), 1u + 2u * 11u + 2u + 1u + 1u);
  for (const auto& [key, by_rank] : a) {
    ASSERT_EQ(by_rank.size(), 5u) << key;
    for (const auto& h : by_rank) EXPECT_EQ(h, by_rank[0]) << key;
    EXPECT_NE(by_rank[0], c.at(key)[0]) << key;
  }
}

TEST(SynthRunTest, GradDesyncAltersOneBucketAtTheStepThenTheReplica) {
  const auto fps = FingerprintsByKey(SynthRun(Config(4, 25, {"grad-desync:rank=2,step=10"})));
  for (const auto& [key, by_rank] : fps) {
    ASSERT_EQ(by_rank.size(), 4u) << key;
    EXPECT_EQ(by_rank[0], by_rank[1]) << key;
    EXPECT_EQ(by_rank[0], by_rank[3]) << key;
  }
  for (int64_t s = 0; s < 25; ++s) {
    // Every rank agrees at the allreduce's completion; the edit shows before the step.
    const auto& synced = fps.at("grad after-sync " + std::to_string(s));
    EXPECT_EQ(synced[2], synced[0]) << "step " << s;
    const auto& g = fps.at("grad pre-step " + std::to_string(s));
    if (s != 10) {
      EXPECT_EQ(g[2], g[0]) << "step " << s;
      continue;
    }
    EXPECT_NE(g[2][0], g[0][0]);
    EXPECT_EQ(g[2][1], g[0][1]);
    EXPECT_EQ(g[2][2], g[0][2]);
  }
  for (const char* key : {"param init 0", "param periodic 0"})
    EXPECT_EQ(fps.at(key)[2], fps.at(key)[0]) << key;
  for (const char* key : {"param periodic 10", "param periodic 20", "param final 25"}) {
    const auto& p = fps.at(key);
    for (size_t k = 0; k < p[0].size(); ++k) EXPECT_NE(p[2][k], p[0][k]) << key << " bucket " << k;
  }
}

TEST(SynthRunTest, NoBroadcastGivesEveryRankItsOwnParameters) {
  const auto clean = FingerprintsByKey(SynthRun(Config(4, 12)));
  const auto fps = FingerprintsByKey(SynthRun(Config(4, 12, {"no-broadcast"})));
  for (const auto& [key, by_rank] : fps) {
    if (key.rfind("grad ", 0) == 0) {
      // The allreduce averages whatever the replicas hold: gradients still agree.
      for (const auto& h : by_rank) EXPECT_EQ(h, by_rank[0]) << key;
      continue;
    }
    // Rank 0 is the reference (the broadcast's source); every other rank is its own.
    EXPECT_EQ(by_rank[0], clean.at(key)[0]) << key;
    std::set<std::vector<std::string>> distinct(by_rank.begin(), by_rank.end());
    EXPECT_EQ(distinct.size(), 4u) << key;
  }
}

TEST(SynthRunTest, ConfigMismatchChangesThatRanksHeaderOnly) {
  const SynthRun clean(Config(3, 4));
  const SynthRun run(Config(3, 4, {"config-mismatch:rank=1"}));
  simdjson::dom::parser parser;
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<std::string> lines = testing::SplitLines(run.RankTrace(r));
    const std::vector<std::string> clean_lines = testing::SplitLines(clean.RankTrace(r));
    ASSERT_EQ(lines.size(), clean_lines.size());
    simdjson::dom::element h = parser.parse(lines.at(0));
    EXPECT_EQ(std::string_view(h["config"]["inject"]), "config-mismatch:rank=1");
    EXPECT_EQ(int64_t(h["local_rank"]), r);  // per rank by design, mismatch or not
    std::string_view nccl_debug;
    const bool has_nccl_debug = h["env"]["NCCL_DEBUG"].get(nccl_debug) == simdjson::SUCCESS;
    if (r == 1) {
      EXPECT_EQ(int64_t(h["config"]["batch_size"]), 16);
      EXPECT_EQ(std::string_view(h["env"]["OMP_NUM_THREADS"]), "4");
      EXPECT_TRUE(has_nccl_debug);
      EXPECT_EQ(nccl_debug, "INFO");
    } else {
      EXPECT_EQ(int64_t(h["config"]["batch_size"]), 8);
      EXPECT_EQ(std::string_view(h["env"]["OMP_NUM_THREADS"]), "1");
      EXPECT_FALSE(has_nccl_debug);
    }
    // After the header, only the mismatched rank's step summaries differ: their samples.
    for (size_t i = 1; i < lines.size(); ++i) {
      simdjson::dom::element e = parser.parse(lines[i]);
      if (r == 1 && std::string_view(e["type"]) == "step") {
        EXPECT_EQ(int64_t(e["samples"]), 16) << lines[i];
        EXPECT_NE(lines[i], clean_lines[i]);
      } else {
        EXPECT_EQ(lines[i], clean_lines[i]);
      }
    }
  }
}

// --- bad requests ------------------------------------------------------------------------

void ExpectSpecError(const SynthConfig& c, const std::string& needle) {
  try {
    SynthRun run(c);
    ADD_FAILURE() << "accepted; expected an error containing: " << needle;
  } catch (const SynthSpecError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SynthRunTest, RejectsWhatItCannotImitate) {
  ExpectSpecError(Config(4, 5, {"scaler-desync:rank=1"}),
                  "synth cannot imitate --inject scaler-desync:rank=1");
  ExpectSpecError(Config(4, 5, {"rng-collision"}), "synth cannot imitate --inject rng-collision");
  ExpectSpecError(Config(4, 5, {"grad-desync:rank=1"}), "missing key 'step'");
  ExpectSpecError(Config(4, 5, {"grad-desync:rank=1,step=5"}), "past the run's last step");
  ExpectSpecError(Config(4, 5, {"stragler:rank=1,ms=5"}), "unknown kind");
  ExpectSpecError(Config(4, 5, {"straggler:rank=4,ms=5"}), "out of range");
  ExpectSpecError(Config(4, 5, {"straggler:rank=1"}), "missing key 'ms'");
  ExpectSpecError(Config(4, 5, {"crash:rank=1,step=5"}), "past the run's last step");
  ExpectSpecError(Config(4, 5, {"crash:rank=1,step=1", "hang:rank=2,step=2"}), "one crash or hang");
  ExpectSpecError(Config(4, 5, {"config-mismatch:rank=4"}), "out of range");
  ExpectSpecError(Config(0, 5), "--ranks");
  ExpectSpecError(Config(4, 0), "--steps");
}

}  // namespace
}  // namespace dsdiag::synth
