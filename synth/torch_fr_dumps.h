// TorchFrDumps: what a synthetic run's ranks would leave had the job run without dsdiag but
// with PyTorch's Flight Recorder on (TORCH_FR_BUFFER_SIZE=N, NCCL): one pickle per rank,
// `nccl_trace_rank_<R>`, in torch 2.13's layout (format version "2.10", the keys and key
// order of FlightRecorderDetail.hpp's dump(), the opcodes of torch::jit::Pickler; see
// docs/torch-flight-recorder.md). `dsdiag synth --torch-fr` writes these instead of the
// rank traces; the bench compares dsdiag with torch's fr_trace on them.
//
// The facts are synth's (synth_run.h): the same seed, ranks, steps, buckets and time model,
// so a dump's times are those the rank trace of the same config would show (wall clock,
// ns). Each step issues one `nccl:all_reduce` per gradient bucket in the default group
// (pg 0, name "0", desc "default_pg"): collective_seq_id = op_id = step × buckets + bucket
// + 1, record_id counts from 0, input and output one flat Float tensor of the bucket's
// elements. A finished allreduce is `completed` and retired, with its discovery times and
// duration_ms (timing on). The dump holds the last N entries (the ring buffer), oldest
// first; every entry has the same Python stack (loss.backward() in train.py's train_step).
//
// Faults (--inject), as the recorder would see them:
//   hang:rank=R,step=K   R stops before step K's allreduces: its dump ends with step K-1's
//                        last, all completed. The others issued all of step K's: the first
//                        `started`, the rest `scheduled`, none retired (their watchdog fired).
//   crash:rank=R,step=K  R writes no dump; the others are as in a hang.
//   collective-mismatch:rank=R,step=K
//                        R's first allreduce of step K has half the elements (input and
//                        output sizes); every rank goes on.
// straggler and clock-skew show in the times; the other kinds leave nothing here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "synth/synth_run.h"

namespace dsdiag::synth {

inline constexpr int kDefaultFrEntries = 2000;  // torch's TORCH_FR_BUFFER_SIZE default

class TorchFrDumps {
 public:
  // Throws SynthSpecError as SynthRun does, and for `entries` < 1.
  TorchFrDumps(const SynthConfig& config, int entries);
  ~TorchFrDumps();
  TorchFrDumps(const TorchFrDumps&) = delete;
  TorchFrDumps& operator=(const TorchFrDumps&) = delete;

  int ranks() const;
  int buckets() const;  // allreduces per step
  // Whether `rank` leaves a dump (not the rank that crashed).
  bool HasDump(int rank) const;
  // The pickle of rank's dump, appended to `out`.
  void AppendDump(int rank, std::string* out) const;
  std::string Dump(int rank) const;

  struct State;  // the run's facts, defined in the .cc

 private:
  std::unique_ptr<State> state_;
};

// `nccl_trace_rank_<R>` (torch's default prefix, the rank unpadded).
// The prefix torch uses by default, and synth always.
inline constexpr char kTorchFrPrefix[] = "nccl_trace_rank_";
std::string TorchFrDumpFileName(int rank);

// Writes every rank's dump into options.out_dir as WriteRun does its traces: a non-empty
// directory is refused (SynthSpecError) unless options.force, which first removes the rank
// traces, flight dumps and `nccl_trace_rank_<R>` files in it. Throws SynthIoError.
WriteResult WriteTorchFrDumps(const TorchFrDumps& dumps, const WriteOptions& options);

}  // namespace dsdiag::synth
