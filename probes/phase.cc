#include "probes/phase.h"

namespace dsdiag::probes {

const char* PhaseName(Phase phase) noexcept {
  switch (phase) {
    case Phase::kNone:
      return "none";
    case Phase::kData:
      return "data";
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kSync:
      return "sync";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kCheckpoint:
      return "checkpoint";
  }
  return "none";
}

}  // namespace dsdiag::probes
