#include "probes/cuda/nccl_version.h"

#include <nccl.h>

namespace dsdiag::probes::cuda {
namespace {

// NCCL encodes its version as MAJOR * 10000 + MINOR * 100 + PATCH since 2.9 (before:
// MAJOR * 1000 + MINOR * 100 + PATCH).
std::string Spell(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code / 100) % 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::string NcclHeaderVersion() { return Spell(NCCL_VERSION_CODE); }

std::string NcclLibraryVersion() noexcept {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess || code <= 0) return "";
  try {
    return Spell(code);
  } catch (...) {
    return "";
  }
}

}  // namespace dsdiag::probes::cuda
