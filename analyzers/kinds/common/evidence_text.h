// The small pieces of prose and evidence that several finding kinds build the same way:
// "rank 3" / "ranks 0-3,7", a capped JSON list of ranks, an optional integer as JSON, a
// message clipped for a summary, seconds for a human and for a machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::analyzers {

// "rank 3" or "ranks 0-3,7".
std::string OnRanks(const std::vector<int>& ranks);
// The first `max` ranks as a JSON array (evidence lists stay short at 10,000 ranks).
trace::JsonValue RankList(const std::vector<int>& ranks, size_t max = 32);
// The value, or JSON null.
trace::JsonValue OptInt(const std::optional<int64_t>& v);
// `s` cut to at most `n` bytes, "..." marking the cut.
std::string Clip(std::string s, size_t n);
// "61.0 s" for ns.
std::string Seconds(double ns);
// ns as seconds rounded to the millisecond, for evidence.
double SecondsValue(double ns);

}  // namespace dsdiag::analyzers
