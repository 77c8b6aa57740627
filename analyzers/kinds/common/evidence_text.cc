#include "analyzers/kinds/common/evidence_text.h"

#include <cmath>
#include <cstdio>

#include "analyzers/framework/finding.h"

namespace dsdiag::analyzers {

std::string OnRanks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + FormatRankRanges(ranks);
}

trace::JsonValue RankList(const std::vector<int>& ranks, size_t max) {
  trace::JsonValue list = trace::JsonValue::Array();
  for (size_t i = 0; i < ranks.size() && i < max; ++i) list.Push(ranks[i]);
  return list;
}

trace::JsonValue OptInt(const std::optional<int64_t>& v) {
  return v ? trace::JsonValue(*v) : trace::JsonValue();
}

std::string Clip(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

std::string Seconds(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", ns / 1e9);
  return buf;
}

double SecondsValue(double ns) { return std::round(ns / 1e6) / 1e3; }

}  // namespace dsdiag::analyzers
