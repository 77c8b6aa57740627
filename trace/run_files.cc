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

}  // namespace

std::string RankTraceFileName(int rank) { return "rank-" + Padded(rank) + ".jsonl"; }
std::string FlightDumpFileName(int rank) { return "flight-rank-" + Padded(rank) + ".json"; }

std::optional<int> ParseRankTraceFileName(std::string_view name) {
  return ParseNumbered(name, "rank-", ".jsonl");
}
std::optional<int> ParseFlightDumpFileName(std::string_view name) {
  return ParseNumbered(name, "flight-rank-", ".json");
}

}  // namespace dsdiag::trace
