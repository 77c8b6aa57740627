// Names of the files in a run directory: `rank-<R>.jsonl` (R zero-padded to at least
// 5 digits) and `flight-rank-<R>.json`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dsdiag::trace {

std::string RankTraceFileName(int rank);   // "rank-00003.jsonl"
std::string FlightDumpFileName(int rank);  // "flight-rank-00003.json"

// The rank a file name claims, or nullopt when the name is not a rank trace.
std::optional<int> ParseRankTraceFileName(std::string_view name);
std::optional<int> ParseFlightDumpFileName(std::string_view name);

}  // namespace dsdiag::trace
