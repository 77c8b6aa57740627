// DistEnv: who this process is in the job, read from the launcher's environment:
// torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID) or Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK). Rendezvous always goes through c10d's TCPStore at
// MASTER_ADDR:MASTER_PORT.
#pragma once

#include <optional>
#include <string>

namespace dsdiag::launch {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;  // "torchrun", "slurm", "openmpi"
  std::string run_id;  // DSDIAG_RUN_ID when the launcher set it
};

// Reads the environment; nullopt when no launcher variables are set. Throws
// std::invalid_argument with a message naming the variable when one is malformed
// (e.g. RANK=abc, RANK >= WORLD_SIZE).
std::optional<DistEnv> ReadDistEnv();

}  // namespace dsdiag::launch
