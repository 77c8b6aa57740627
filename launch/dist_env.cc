// Reads who this process is from the launcher's environment. Launchers are tried in a fixed
// order, first match wins: torchrun (and `dsdiag train --nproc`, which sets the same
// variables), then Slurm's srun, then Open MPI's mpirun. torchrun goes first because people
// run torchrun inside Slurm allocations, where the SLURM_* variables describe the allocation
// rather than this process.
//
// Defaults, where a launcher does not say:
//   torchrun  LOCAL_RANK = RANK, MASTER_ADDR = 127.0.0.1, MASTER_PORT = 29500
//   Slurm     SLURM_LOCALID = SLURM_PROCID; MASTER_ADDR is required (srun does not set it and
//             127.0.0.1 would split a multi-node job into one rendezvous per node)
//   Open MPI  OMPI_COMM_WORLD_LOCAL_RANK = rank; MASTER_ADDR = 127.0.0.1 only when every rank
//             is on this node (OMPI_COMM_WORLD_LOCAL_SIZE = OMPI_COMM_WORLD_SIZE), else required
// An empty variable counts as unset.
#include "launch/dist_env.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace dsdiag::launch {
namespace {

constexpr int kDefaultMasterPort = 29500;

std::optional<std::string> Get(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// A decimal integer in [min, max] with nothing around it; the message names the variable.
int ParseInt(const char* name, const std::string& value, int min, int max) {
  int result = 0;
  const char* begin = value.data();
  const char* end = begin + value.size();
  const auto [ptr, ec] = std::from_chars(begin, end, result);
  if (ec != std::errc() || ptr != end) {
    throw std::invalid_argument(std::string(name) + "='" + value + "' is not an integer");
  }
  if (result < min || result > max) {
    throw std::invalid_argument(std::string(name) + "=" + value + " is out of range (" +
                                std::to_string(min) + ".." + std::to_string(max) + ")");
  }
  return result;
}

int RequireInt(const char* name, int min, int max) {
  const std::optional<std::string> value = Get(name);
  if (!value) throw std::invalid_argument(std::string(name) + " is not set");
  return ParseInt(name, *value, min, max);
}

int IntOr(const char* name, int fallback, int min, int max) {
  const std::optional<std::string> value = Get(name);
  return value ? ParseInt(name, *value, min, max) : fallback;
}

// Reads rank, world size and local rank from one launcher's variables and checks them
// against each other.
DistEnv ReadRanks(const char* rank_var, const char* size_var, const char* local_var,
                  std::string source, const char* launcher) {
  const bool has_rank = Get(rank_var).has_value();
  const bool has_size = Get(size_var).has_value();
  if (has_rank != has_size) {
    const char* missing = has_rank ? size_var : rank_var;
    const char* present = has_rank ? rank_var : size_var;
    throw std::invalid_argument(std::string(present) + " is set but " + missing + " is not; " +
                                launcher + " sets both");
  }
  DistEnv env;
  env.source = std::move(source);
  env.world_size = RequireInt(size_var, 1, 1 << 20);
  env.rank = RequireInt(rank_var, 0, 1 << 20);
  if (env.rank >= env.world_size) {
    throw std::invalid_argument(std::string(rank_var) + "=" + std::to_string(env.rank) +
                                " is out of range for " + size_var + "=" +
                                std::to_string(env.world_size) + " (0.." +
                                std::to_string(env.world_size - 1) + ")");
  }
  env.local_rank = IntOr(local_var, env.rank, 0, env.world_size - 1);
  return env;
}

void ReadMaster(DistEnv* env, bool addr_required, const std::string& why_required) {
  if (std::optional<std::string> addr = Get("MASTER_ADDR")) {
    env->master_addr = *addr;
  } else if (addr_required) {
    throw std::invalid_argument("MASTER_ADDR is not set; " + why_required);
  }
  env->master_port = IntOr("MASTER_PORT", kDefaultMasterPort, 1, 65535);
}

}  // namespace

std::optional<DistEnv> ReadDistEnv() {
  std::optional<DistEnv> env;
  if (Get("RANK") || Get("WORLD_SIZE")) {
    env = ReadRanks("RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun", "torchrun");
    ReadMaster(&*env, false, "");
  } else if (Get("SLURM_PROCID") && Get("SLURM_NTASKS")) {
    // Both are needed: an sbatch batch script sees SLURM_PROCID=0 without being a task.
    env = ReadRanks("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "slurm", "srun");
    ReadMaster(
        &*env, true,
        "under Slurm export it before srun, e.g. "
        "`export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)`");
  } else if (Get("OMPI_COMM_WORLD_RANK") || Get("OMPI_COMM_WORLD_SIZE")) {
    env = ReadRanks("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                    "openmpi", "mpirun");
    const int local_size = IntOr("OMPI_COMM_WORLD_LOCAL_SIZE", env->world_size, 1, 1 << 20);
    ReadMaster(&*env, local_size < env->world_size,
               "the Open MPI job spans several nodes: export it to rank 0's host name "
               "(mpirun -x MASTER_ADDR=...)");
  } else {
    return std::nullopt;
  }
  if (std::optional<std::string> run_id = Get("DSDIAG_RUN_ID")) env->run_id = *run_id;
  return env;
}

}  // namespace dsdiag::launch
