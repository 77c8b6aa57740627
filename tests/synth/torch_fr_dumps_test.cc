// synth/torch_fr_dumps.h and `dsdiag synth --torch-fr`: every dump reads back through
// trace/torch_fr's reader in torch 2.13's layout, holds the ring buffer's last N allreduces,
// and shows each fault as the recorder would (hang: the others' last allreduces started or
// scheduled and unretired, the hung rank's dump shorter; crash: no dump; mismatch: one size
// halved); the same seed gives the same bytes, whatever the threads.
#include "synth/torch_fr_dumps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/shell.h"
#include "tests/synth/synth_test_util.h"
#include "trace/torch_fr/torch_fr_dump.h"
#include "trace/torch_fr/torch_fr_files.h"

namespace dsdiag::synth {
namespace {

using testing::ReadFile;
using testing::TempDir;
using trace::TorchFrDump;
using trace::TorchFrEntry;
using trace::TorchFrState;

SynthConfig Config(int ranks, int64_t steps, std::vector<std::string> injects = {},
                   uint64_t seed = 1234) {
  SynthConfig c;
  c.ranks = ranks;
  c.steps = steps;
  c.seed = seed;
  c.injects = std::move(injects);
  return c;
}

TorchFrDump Parse(const std::string& bytes, int rank) {
  trace::LocatedIssue issue;
  auto d = trace::ParseTorchFrDump(TorchFrDumpFileName(rank), bytes, &issue);
  EXPECT_TRUE(d.has_value()) << issue.ToString();
  if (!d) return TorchFrDump{};
  EXPECT_EQ(d->entries_skipped, 0) << d->first_entry_problem;
  return *d;
}

TorchFrDump Parse(const TorchFrDumps& dumps, int rank) { return Parse(dumps.Dump(rank), rank); }

// What holds of every entry, whatever the fault.
void ExpectTorchLayout(const TorchFrDump& d, int ranks) {
  EXPECT_EQ(d.version, "2.10");
  EXPECT_EQ(d.comm_lib_version, "2.21.5");
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].name, "0");
  EXPECT_EQ(d.groups[0].desc, "default_pg");
  EXPECT_EQ(d.groups[0].ranks.size(), static_cast<size_t>(ranks));
  for (const TorchFrEntry& e : d.entries) {
    EXPECT_EQ(e.profiling_name, "nccl:all_reduce");
    EXPECT_EQ(e.pg_id, 0);
    EXPECT_EQ(e.pg_name, "0");
    EXPECT_EQ(e.pg_desc, "default_pg");
    EXPECT_EQ(e.op_id, e.collective_seq_id);
    EXPECT_EQ(e.record_id, e.collective_seq_id - 1);
    EXPECT_EQ(e.p2p_seq_id, 0);
    EXPECT_EQ(e.is_p2p, false);
    EXPECT_EQ(e.timeout_ms, 60000);
    EXPECT_EQ(e.input_dtypes, std::vector<std::string>{"Float"});
    EXPECT_EQ(e.output_sizes, e.input_sizes);
    ASSERT_EQ(e.input_sizes.size(), 1u);
    EXPECT_EQ(e.thread_name, "python");
    EXPECT_FALSE(e.thread_id.empty());
    ASSERT_EQ(e.frames.size(), 7u);
    EXPECT_EQ(e.frames[3].filename, "/workspace/train.py");
    EXPECT_EQ(e.frames[3].line, 88);
    EXPECT_EQ(e.frames[3].name, "train_step");
    ASSERT_TRUE(e.time_created_ns.has_value());
    if (e.state == TorchFrState::kCompleted) {
      EXPECT_EQ(e.retired, true);
      ASSERT_TRUE(e.time_discovered_started_ns && e.time_discovered_completed_ns);
      EXPECT_GE(*e.time_discovered_started_ns, *e.time_created_ns);
      EXPECT_GT(*e.time_discovered_completed_ns, *e.time_discovered_started_ns);
      ASSERT_TRUE(e.duration_ms.has_value());
      EXPECT_NEAR(*e.duration_ms,
                  (*e.time_discovered_completed_ns - *e.time_discovered_started_ns) / 1e6, 1e-3);
    } else {
      EXPECT_EQ(e.retired, false);
      EXPECT_FALSE(e.time_discovered_completed_ns.has_value());
      EXPECT_FALSE(e.duration_ms.has_value());
    }
  }
  for (size_t i = 1; i < d.entries.size(); ++i) {
    EXPECT_EQ(d.entries[i].collective_seq_id, d.entries[i - 1].collective_seq_id + 1);
    EXPECT_GT(*d.entries[i].time_created_ns, *d.entries[i - 1].time_created_ns);
  }
}

int64_t Count(const TorchFrDump& d, TorchFrState state) {
  int64_t n = 0;
  for (const TorchFrEntry& e : d.entries) n += e.state == state;
  return n;
}

TEST(TorchFrDumpsTest, CleanRunKeepsTheLastEntries) {
  const TorchFrDumps dumps(Config(4, 40), 50);
  const int64_t b = dumps.buckets();
  ASSERT_GE(b * 40, 50);
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(dumps.HasDump(r));
    const TorchFrDump d = Parse(dumps, r);
    ExpectTorchLayout(d, 4);
    ASSERT_EQ(d.entries.size(), 50u);  // the ring buffer's size
    EXPECT_EQ(d.entries.back().collective_seq_id, 40 * b);
    EXPECT_EQ(d.entries.front().collective_seq_id, 40 * b - 49);
    EXPECT_EQ(Count(d, TorchFrState::kCompleted), 50);
    const trace::TorchFrGroupStatus* s = d.FindStatus(0);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->last_enqueued, 40 * b);
    EXPECT_EQ(s->last_started, 40 * b);
    EXPECT_EQ(s->last_completed, 40 * b);
  }
  // A buffer larger than the run holds all of it.
  const TorchFrDumps all(Config(2, 5), 2000);
  EXPECT_EQ(Parse(all, 1).entries.size(), static_cast<size_t>(5 * b));
}

TEST(TorchFrDumpsTest, HangLeavesTheOthersWaitingAndTheHungRankShort) {
  const TorchFrDumps dumps(Config(4, 20, {"hang:rank=2,step=15"}), 2000);
  const int64_t b = dumps.buckets();
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(dumps.HasDump(r));
    const TorchFrDump d = Parse(dumps, r);
    ExpectTorchLayout(d, 4);
    const trace::TorchFrGroupStatus* s = d.FindStatus(0);
    ASSERT_NE(s, nullptr);
    if (r == 2) {
      // Never issued step 15's allreduces: everything it has is done.
      ASSERT_EQ(d.entries.size(), static_cast<size_t>(15 * b));
      EXPECT_EQ(Count(d, TorchFrState::kCompleted), 15 * b);
      EXPECT_EQ(s->last_enqueued, 15 * b);
      continue;
    }
    ASSERT_EQ(d.entries.size(), static_cast<size_t>(16 * b)) << r;
    EXPECT_EQ(Count(d, TorchFrState::kCompleted), 15 * b);
    const TorchFrEntry& first_stuck = d.entries[static_cast<size_t>(15 * b)];
    EXPECT_EQ(first_stuck.collective_seq_id, 15 * b + 1);
    EXPECT_EQ(first_stuck.state, TorchFrState::kStarted);
    EXPECT_TRUE(first_stuck.time_discovered_started_ns.has_value());
    EXPECT_EQ(Count(d, TorchFrState::kStarted), 1);
    EXPECT_EQ(Count(d, TorchFrState::kScheduled), b - 1);
    EXPECT_EQ(d.entries.back().state, b > 1 ? TorchFrState::kScheduled : TorchFrState::kStarted);
    EXPECT_EQ(d.entries.back().retired, false);
    EXPECT_EQ(s->last_enqueued, 16 * b);
    EXPECT_EQ(s->last_started, 15 * b + 1);
    EXPECT_EQ(s->last_completed, 15 * b);
  }
}

TEST(TorchFrDumpsTest, CrashedRankWritesNoDump) {
  const TorchFrDumps dumps(Config(4, 20, {"crash:rank=1,step=10"}), 2000);
  const int64_t b = dumps.buckets();
  EXPECT_FALSE(dumps.HasDump(1));
  for (int r : {0, 2, 3}) {
    ASSERT_TRUE(dumps.HasDump(r));
    const TorchFrDump d = Parse(dumps, r);
    ExpectTorchLayout(d, 4);
    ASSERT_EQ(d.entries.size(), static_cast<size_t>(11 * b));
    EXPECT_EQ(Count(d, TorchFrState::kCompleted), 10 * b);
    EXPECT_EQ(d.entries[static_cast<size_t>(10 * b)].state, TorchFrState::kStarted);
  }
}

TEST(TorchFrDumpsTest, CollectiveMismatchHalvesOneSize) {
  const TorchFrDumps dumps(Config(4, 10, {"collective-mismatch:rank=3,step=5"}), 2000);
  const int64_t b = dumps.buckets();
  const TorchFrDump good = Parse(dumps, 0);
  const TorchFrDump odd = Parse(dumps, 3);
  ExpectTorchLayout(odd, 4);
  ASSERT_EQ(good.entries.size(), odd.entries.size());
  int differing = 0;
  for (size_t i = 0; i < good.entries.size(); ++i) {
    if (good.entries[i].input_sizes == odd.entries[i].input_sizes) continue;
    ++differing;
    EXPECT_EQ(odd.entries[i].collective_seq_id, 5 * b + 1);
    EXPECT_EQ(odd.entries[i].input_numel() * 2, good.entries[i].input_numel());
    EXPECT_EQ(odd.entries[i].state, TorchFrState::kCompleted);  // the run goes on
  }
  EXPECT_EQ(differing, 1);
  EXPECT_EQ(Count(odd, TorchFrState::kCompleted), 10 * b);
}

TEST(TorchFrDumpsTest, SameSeedSameBytes) {
  const TorchFrDumps a(Config(3, 30, {"straggler:rank=1,ms=20"}), 64);
  const TorchFrDumps b(Config(3, 30, {"straggler:rank=1,ms=20"}), 64);
  const TorchFrDumps other(Config(3, 30, {"straggler:rank=1,ms=20"}, 99), 64);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(a.Dump(r), b.Dump(r));
    EXPECT_NE(a.Dump(r), other.Dump(r));
  }
  EXPECT_NE(a.Dump(0), a.Dump(1));  // times and thread ids are each rank's own
}

TEST(TorchFrDumpsTest, BadConfigIsASpecError) {
  EXPECT_THROW(TorchFrDumps(Config(4, 10), 0), SynthSpecError);
  EXPECT_THROW(TorchFrDumps(Config(0, 10), 10), SynthSpecError);
  EXPECT_THROW(TorchFrDumps(Config(4, 10, {"rng-collision"}), 10), SynthSpecError);
  EXPECT_THROW(TorchFrDumps(Config(4, 10, {"hang:rank=1,step=10"}), 10), SynthSpecError);
}

// `dsdiag synth --torch-fr` end to end.
using Result = test_support::CommandResult;
Result Synth(const std::string& args) { return test_support::RunDsdiag("synth " + args); }

TEST(TorchFrDumpsTest, CommandWritesDumpsInsteadOfRankTraces) {
  TempDir scratch;
  const std::string run = scratch / "run";
  const Result r = Synth(
      "--ranks 4 --steps 30 --torch-fr --fr-entries 40 --inject "
      "hang:rank=3,step=25 --out " +
      run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 Flight Recorder dumps"), std::string::npos) << r.out;
  const trace::TorchFrFindResult found = trace::FindTorchFrDumps(run);
  ASSERT_EQ(found.groups.size(), 1u);
  EXPECT_EQ(found.groups[0].prefix, "nccl_trace_rank_");
  ASSERT_EQ(found.groups[0].files.size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(run + "/rank-00000.jsonl"));
  for (const trace::TorchFrFile& f : found.groups[0].files) {
    trace::LocatedIssue issue;
    const auto d = trace::ReadTorchFrDumpFile(f.path, &issue);
    ASSERT_TRUE(d.has_value()) << issue.ToString();
    EXPECT_EQ(d->rank, f.rank);
    EXPECT_EQ(d->entries.size(), 40u);
    const TorchFrState last = d->entries.back().state;
    EXPECT_EQ(last == TorchFrState::kCompleted, f.rank == 3) << f.rank;
  }
  // The same arguments, another thread count: the same bytes.
  ASSERT_EQ(Synth("--ranks 4 --steps 30 --torch-fr --fr-entries 40 --inject "
                  "hang:rank=3,step=25 --threads 1 --out " +
                  (scratch / "again"))
                .status,
            0);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "/" + TorchFrDumpFileName(rank);
    EXPECT_EQ(ReadFile(run + name), ReadFile(scratch / "again" + name)) << name;
  }
}

TEST(TorchFrDumpsTest, CommandCrashAndForce) {
  TempDir scratch;
  const std::string run = scratch / "run";
  ASSERT_EQ(Synth("--ranks 3 --steps 4 --out " + run).status, 0);             // rank traces
  EXPECT_EQ(Synth("--ranks 3 --steps 4 --torch-fr --out " + run).status, 2);  // not empty
  const Result r =
      Synth("--ranks 3 --steps 4 --torch-fr --force --inject crash:rank=1,step=2 --out " + run);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(run + "/rank-00000.jsonl"));  // replaced
  EXPECT_TRUE(std::filesystem::exists(run + "/nccl_trace_rank_0"));
  EXPECT_FALSE(std::filesystem::exists(run + "/nccl_trace_rank_1"));  // died: no dump
  EXPECT_TRUE(std::filesystem::exists(run + "/nccl_trace_rank_2"));
  EXPECT_NE(r.out.find("2 Flight Recorder dumps"), std::string::npos) << r.out;
}

TEST(TorchFrDumpsTest, CommandBadUsage) {
  TempDir scratch;
  const std::string run = scratch / "run";
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --fr-entries 10 --out " + run).status, 2);  // no --torch-fr
  EXPECT_EQ(Synth("--ranks 2 --steps 2 --torch-fr --fr-entries 0 --out " + run).status, 2);
  const Result help = Synth("--help");
  EXPECT_NE(help.out.find("--torch-fr"), std::string::npos);
  EXPECT_NE(help.out.find("--fr-entries"), std::string::npos);
}

}  // namespace
}  // namespace dsdiag::synth
