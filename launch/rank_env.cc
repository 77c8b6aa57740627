#include "launch/rank_env.h"

#include <cstdlib>
#include <utility>

extern char** environ;

namespace dsdiag::launch {

std::vector<std::string> RankEnv(const LaunchSpec& spec, int rank, int port,
                                 const std::string& run_id) {
  std::vector<std::pair<std::string, std::string>> ours;
  if (spec.assign_ranks) {
    ours = {
        {"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(spec.nproc)},
        {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(spec.nproc)},
        {"MASTER_ADDR", "127.0.0.1"},         {"MASTER_PORT", std::to_string(port)},
    };
  }
  ours.emplace_back("DSDIAG_RUN_ID", run_id);
  // One BLAS/OpenMP thread per rank unless the user chose: N ranks each spawning one thread
  // per core oversubscribe the machine and make every step a straggler.
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || *omp == '\0') ours.emplace_back("OMP_NUM_THREADS", "1");
  for (const auto& kv : spec.env) {
    bool replaced = false;
    for (auto& mine : ours) {
      if (mine.first == kv.first) {
        mine.second = kv.second;
        replaced = true;
      }
    }
    if (!replaced) ours.push_back(kv);
  }

  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& kv : ours) overridden = overridden || kv.first == name;
    if (!overridden) env.push_back(entry);
  }
  for (const auto& kv : ours) env.push_back(kv.first + "=" + kv.second);
  return env;
}

}  // namespace dsdiag::launch
