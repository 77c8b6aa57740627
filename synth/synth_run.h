// SynthRun: a synthetic run directory — what `dsdiag synth` writes — shaped like the
// reference trainer's traces, at any scale, without LibTorch. For tests and benchmarks of
// the analyzers. The same config (seed included) gives the same bytes, whatever the
// number of threads.
//
// Faults it imitates (--inject) and what they leave in the traces:
//   straggler:rank=R,ms=M   R's backward takes M ms longer each step: R calls every
//                           gradient allreduce late, the others' `coll` durs (and sync
//                           phases) include the wait.
//   clock-skew:rank=R,ms=M  R's wall clock runs M ms ahead: its header clock.wall, and the
//                           measured offset (header and `clock` records) = +M ms within
//                           offset_err.
//   unused-param:rank=R     blocks.1.moe.experts.2.* get no gradient on R: its `grad`
//                           records have n_missing 2, and step 0's `missing` lists them.
//   grad-desync:rank=R,step=K
//                           R's after-sync `fp` hash of bucket 0 differs at step K, and
//                           from then on R's parameter hashes (periodic, final) differ.
//   no-broadcast            every rank but 0 has its own parameter hashes, from `init` on.
//   config-mismatch:rank=R  R was launched with other settings: its header's config
//                           batch_size is doubled (and its `step` records' samples), its
//                           env has OMP_NUM_THREADS "4" and an extra NCCL_DEBUG "INFO".
//                           synth's own (the trainer refuses it): a footprint in the
//                           header only.
//   crash:rank=R,step=K     R dies in step K's backward: its file ends with step_begin,
//                           phase data and a cut-off forward record (no newline, no end).
//                           The others finish backward (phase, grad), wait in sync, then
//                           write phase sync, an `error` (where sync, the pending
//                           allreduce's pg/seq/op/tag, "connection closed by peer") and
//                           `end` reason peer-failure, status 1.
//   hang:rank=R,step=K      R stops in step K's backward: its file ends, whole lines, with
//                           step_begin, phase data, phase forward (no end). The others have
//                           issued step K's allreduces (seq K*B..K*B+B-1, B buckets) and
//                           never complete the first; 60 s after entering it their
//                           watchdog writes an `error` ("collective timeout: ...", where
//                           sync, pg/seq/op/tag) and `end` reason error, status 1, and a
//                           flight-rank-<R>.json dump (reason timeout).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "synth/faults.h"
#include "synth/rank_trace.h"
#include "synth/schedule.h"
#include "synth/synth_model.h"
#include "synth/time_model.h"

namespace dsdiag::synth {

struct SynthConfig {
  int ranks = 0;
  int64_t steps = 0;
  uint64_t seed = 1234;
  std::vector<std::string> injects;  // --inject texts as given
};

// The output directory cannot be prepared or a file cannot be written.
class SynthIoError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SynthRun {
 public:
  static constexpr int kMaxRanks = 1 << 20;

  // Throws SynthSpecError for a config it cannot honour (bad sizes, bad or unsupported
  // --inject), with a message that says what was expected.
  explicit SynthRun(const SynthConfig& config);
  SynthRun(const SynthRun&) = delete;
  SynthRun& operator=(const SynthRun&) = delete;

  int ranks() const { return facts_.ranks; }
  const std::string& run_id() const { return facts_.run_id; }

  // The contents of rank-<R>.jsonl, whole (tests; the writer streams instead).
  std::string RankTrace(int rank) const;
  // Whether `rank` leaves a flight-rank-<R>.json, and its contents.
  bool HasFlightDump(int rank) const;
  std::string FlightDump(int rank) const;

  void RenderRank(int rank, std::string* buffer, const Drain& drain) const;

 private:
  SynthModel params_;
  Faults faults_;
  std::unique_ptr<TimeModel> model_;
  Schedule schedule_;
  RunFacts facts_;
};

struct WriteOptions {
  std::string out_dir;
  bool force = false;  // write into a non-empty directory, replacing its rank files
  int threads = 2;
  // Called (from any worker, serialised) as rank files are finished.
  std::function<void(int done, int total)> progress;
};

struct WriteResult {
  int files = 0;
  int64_t bytes = 0;
};

// Writes every rank's file (and dumps) into options.out_dir, creating it. A non-empty
// directory is refused (SynthSpecError) unless options.force; with force, existing
// rank-*.jsonl, flight-rank-*.json and nccl_trace_rank_<R> files are removed first (an
// earlier run's would join this one), other files are kept (synth/run_dir_writer.h).
// Throws SynthIoError when the disk says no.
WriteResult WriteRun(const SynthRun& run, const WriteOptions& options);

}  // namespace dsdiag::synth
