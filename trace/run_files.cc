#include "trace/run_files.h"

#include <charconv>
#include <cstdio>

namespace dsdiag::trace {
namespace {

std::string Padded(int rank) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%05d", rank);
  return buf;
}

// Parses "<prefix><digits><suffix>" into the number.
std::optional<int> ParseNumbered(std::string_view name, std::string_view prefix,
                                 std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size()) return std::nullopt;
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  if (name.substr(name.size() - suffix.size()) != suffix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 5) return std::nullopt;
  int rank = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || rank < 0)
    return std::nullopt;
  return rank;
}

constexpr std::string_view kPlainSuffix = ".jsonl";
constexpr std::string_view kZstdSuffix = ".jsonl.zst";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string RankTraceFileName(int rank, TraceCompression compression) {
  return "rank-" + Padded(rank) +
         std::string(compression == TraceCompression::kZstd ? kZstdSuffix : kPlainSuffix);
}
std::string FlightDumpFileName(int rank) { return "flight-rank-" + Padded(rank) + ".json"; }

std::optional<int> ParseRankTraceFileName(std::string_view name) {
  if (auto rank = ParseNumbered(name, "rank-", kPlainSuffix)) return rank;
  return ParseNumbered(name, "rank-", kZstdSuffix);
}
std::optional<int> ParseFlightDumpFileName(std::string_view name) {
  return ParseNumbered(name, "flight-rank-", ".json");
}

std::string DuplicateRankTraceError(int rank, std::string_view a, std::string_view b) {
  std::string message = "two traces claim rank " + std::to_string(rank) + ": '" + std::string(a) +
                        "' and '" + std::string(b) + "'";
  if (EndsWith(a, kZstdSuffix) != EndsWith(b, kZstdSuffix))
    message += " (one plain, one compressed: keep one of them)";
  return message;
}

}  // namespace dsdiag::trace
