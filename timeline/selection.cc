#include "timeline/selection.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace dsdiag::timeline {
namespace {

// A whole non-negative decimal integer, nothing else.
template <typename T>
std::optional<T> ParseCount(std::string_view text) {
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  T value = 0;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(text.data(), end, value);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return value;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<StepRange> ParseStepRange(std::string_view text, std::string* error) {
  const std::string quoted = "'" + std::string(text) + "'";
  StepRange range;
  const size_t colon = text.find(':');
  const std::string_view a = Trim(text.substr(0, colon));
  const std::string_view b = colon == std::string_view::npos ? a : Trim(text.substr(colon + 1));
  if (colon == std::string_view::npos && a.empty()) {
    *error = "--steps must be A:B, A:, :B or N (steps, 0-based), not ''";
    return std::nullopt;
  }
  if (!a.empty()) {
    range.first = ParseCount<int64_t>(a);
    if (!range.first) {
      *error = "--steps must be A:B, A:, :B or N (non-negative step numbers), not " + quoted;
      return std::nullopt;
    }
  }
  if (!b.empty()) {
    range.last = ParseCount<int64_t>(b);
    if (!range.last) {
      *error = "--steps must be A:B, A:, :B or N (non-negative step numbers), not " + quoted;
      return std::nullopt;
    }
  }
  if (range.first && range.last && *range.first > *range.last) {
    *error = "--steps " + std::string(text) + " is empty: the first step is after the last";
    return std::nullopt;
  }
  return range;
}

RankSet RankSet::All() {
  RankSet s;
  s.all_ = true;
  return s;
}

bool RankSet::Contains(int rank) const {
  if (all_) return true;
  // Ranges are sorted and disjoint: the first range ending at or after `rank` decides.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), rank,
                             [](const std::pair<int, int>& r, int v) { return r.second < v; });
  return it != ranges_.end() && it->first <= rank;
}

std::string RankSet::ToString() const {
  if (all_) return "all";
  std::string out;
  for (const auto& [lo, hi] : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(lo);
    if (hi != lo) out += "-" + std::to_string(hi);
  }
  return out;
}

std::optional<RankSet> RankSet::Parse(std::string_view text, std::string* error) {
  const std::string quoted = "'" + std::string(text) + "'";
  RankSet set;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = Trim(text.substr(pos, comma - pos));
    const size_t dash = item.find('-');
    const auto lo = ParseCount<int>(Trim(item.substr(0, dash)));
    const auto hi =
        dash == std::string_view::npos ? lo : ParseCount<int>(Trim(item.substr(dash + 1)));
    if (!lo || !hi) {
      *error = "--ranks must be a list of ranks and ranges like 0-3,7, not " + quoted;
      return std::nullopt;
    }
    if (*lo > *hi) {
      *error = "--ranks range " + std::string(item) + " runs backwards";
      return std::nullopt;
    }
    set.ranges_.emplace_back(*lo, *hi);
    pos = comma + 1;
  }
  std::sort(set.ranges_.begin(), set.ranges_.end());
  std::vector<std::pair<int, int>> merged;
  for (const auto& r : set.ranges_) {
    // Adjacent ranges merge too ("0-3,4" is "0-4"); the comparison avoids int overflow.
    if (!merged.empty() && r.first - 1 <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  set.ranges_ = std::move(merged);
  return set;
}

}  // namespace dsdiag::timeline
