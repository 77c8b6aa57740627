// The NCCL a build compiled against and the one it runs with, for the trace header's
// `versions` (a rank that loads another libnccl than its peers is a config mismatch waiting
// to happen). Torch-free: NCCL's headers and library only (DSDIAG_CUDA, where CMake finds
// them: CUDA's own, or the nvidia-nccl wheel's).
#pragma once

#include <string>

namespace dsdiag::probes::cuda {

// "2.27.7": NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH of the headers.
std::string NcclHeaderVersion();
// The same of the library loaded (ncclGetVersion), or "" when it says nothing.
std::string NcclLibraryVersion() noexcept;

}  // namespace dsdiag::probes::cuda
