// What `dsdiag synth` does with a run directory whatever it writes into it (rank traces, or
// Flight Recorder dumps): prepare it (refuse a non-empty one unless forced, and then remove
// every file an earlier synth run left — rank traces, flight dumps, `nccl_trace_rank_<R>` —
// so that none joins this run as an extra or foreign rank), write files whole, and write the
// ranks' files on a pool of threads, counting files and bytes and rethrowing the first error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "synth/synth_run.h"

namespace dsdiag::synth {

void PrepareRunDir(const std::string& dir, bool force);

// Writes all of `data` to `fd` (write(2) may write less than asked); false on an error.
bool WriteAll(int fd, const char* data, size_t size);

// Writes `bytes` to `path` (created or truncated); SynthIoError naming the path on failure.
void WriteFileBytes(const std::string& path, const std::string& bytes);

// The files and bytes one rank's writer wrote.
struct RankFiles {
  int files = 0;
  int64_t bytes = 0;
};

// Calls write_rank(rank, &buffer) for every rank on options.threads threads (a buffer each,
// reused), options.progress after each; the first exception stops the rest and is rethrown.
WriteResult WritePerRank(int ranks, const WriteOptions& options,
                         const std::function<RankFiles(int rank, std::string* buffer)>& write_rank);

}  // namespace dsdiag::synth
