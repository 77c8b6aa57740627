// What each started process gets: its argv and environment as execve wants them, built
// before fork so that the child only makes async-signal-safe calls.
//
// The environment is the launcher's own, with torchrun's variables for the rank on top
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT),
// DSDIAG_RUN_ID, OMP_NUM_THREADS=1 unless it is set, then LaunchSpec::env over all of them.
// A spec that does not assign ranks (LaunchSpec::assign_ranks false: one process that starts
// its ranks itself) gets no rank variables.
#pragma once

#include <string>
#include <vector>

#include "launch/launcher.h"

namespace dsdiag::launch {

// NAME=VALUE (or argv) strings with the null-terminated pointer array execve takes.
class ExecStrings {
 public:
  explicit ExecStrings(std::vector<std::string> strings) : strings_(std::move(strings)) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char** get() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

std::vector<std::string> RankEnv(const LaunchSpec& spec, int rank, int port,
                                 const std::string& run_id);

}  // namespace dsdiag::launch
