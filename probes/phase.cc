#include "probes/phase.h"

#include "trace/records/phase_record.h"

namespace dsdiag::probes {

const char* PhaseName(Phase phase) noexcept {
  switch (phase) {
    case Phase::kNone:
      return trace::phase::kNone.data();
    case Phase::kData:
      return trace::phase::kData.data();
    case Phase::kForward:
      return trace::phase::kForward.data();
    case Phase::kBackward:
      return trace::phase::kBackward.data();
    case Phase::kSync:
      return trace::phase::kSync.data();
    case Phase::kOptimizer:
      return trace::phase::kOptimizer.data();
    case Phase::kCheckpoint:
      return trace::phase::kCheckpoint.data();
  }
  return trace::phase::kNone.data();
}

}  // namespace dsdiag::probes
