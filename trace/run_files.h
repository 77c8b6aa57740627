// Names of the files in a run directory: `rank-<R>.jsonl` (R zero-padded to at least
// 5 digits), or `rank-<R>.jsonl.zst` when compressed, and `flight-rank-<R>.json`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/compression.h"

namespace dsdiag::trace {

// "rank-00003.jsonl", or "rank-00003.jsonl.zst" compressed.
std::string RankTraceFileName(int rank, TraceCompression compression = TraceCompression::kNone);
std::string FlightDumpFileName(int rank);  // "flight-rank-00003.json"

// The rank a file name claims (plain or compressed), or nullopt when the name is not a
// rank trace.
std::optional<int> ParseRankTraceFileName(std::string_view name);
std::optional<int> ParseFlightDumpFileName(std::string_view name);

// The error for two files of one run directory that claim the same rank (`a` and `b`:
// paths or names). A plain and a compressed copy of one trace get a hint to keep one.
std::string DuplicateRankTraceError(int rank, std::string_view a, std::string_view b);

}  // namespace dsdiag::trace
