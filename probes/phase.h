// The phases a training step is split into; their names are trace/records/phase_record.h's.
#pragma once

#include <string_view>

namespace dsdiag::probes {

enum class Phase { kNone, kData, kForward, kBackward, kSync, kOptimizer, kCheckpoint };
inline constexpr int kPhaseCount = 7;

// "data", "forward", ...; "none" for kNone (outside any phase).
const char* PhaseName(Phase phase) noexcept;

}  // namespace dsdiag::probes
