// How much the probes record: `off` (nothing: every probe is one branch), `light` (the
// default: per-step summaries, bucket fingerprints), `full` (every collective, per-parameter
// fingerprints every step, index lists). docs/contract.md: `--probes off|light|full`.
#pragma once

#include <optional>
#include <string_view>

namespace dsdiag::probes {

enum class Mode { kOff, kLight, kFull };

std::optional<Mode> ParseMode(std::string_view text);
std::string_view ModeName(Mode mode);

}  // namespace dsdiag::probes
