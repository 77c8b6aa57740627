#include "analyzers/kinds/common/one_sided_load.h"

#include <algorithm>
#include <utility>

#include "trace/records/fp_record.h"

namespace dsdiag::analyzers {
namespace {

namespace fp_why = trace::records::fp_why;

bool Later(const std::string& why) { return why != fp_why::kInit && why != fp_why::kResume; }

}  // namespace

void OneSidedLoad::Add(int rank, int64_t step, const FingerprintRecord& fp) {
  auto& points = points_[rank];
  if (points.size() < kMaxParamFps) points.push_back({step, {fp.why, fp.hashes}});
}

std::optional<OneSidedLoadVerdict> OneSidedLoad::Judge() const {
  OneSidedLoadVerdict v;
  std::map<int, size_t> resume_at;  // loading rank -> index of its first resume point
  for (const auto& [rank, points] : points_) {
    auto it = std::find_if(points.begin(), points.end(),
                           [](const Point& p) { return p.fp.why == fp_why::kResume; });
    if (it == points.end()) {
      v.not_loaded.push_back(rank);
      continue;
    }
    resume_at[rank] = static_cast<size_t>(it - points.begin());
    v.step = v.loaded.empty() ? it->step : std::min(v.step, it->step);
    v.loaded.push_back(rank);
  }
  if (v.loaded.empty() || v.not_loaded.empty()) return std::nullopt;
  // What the others held at the load: their last point at or before it.
  std::map<int, size_t> from;
  bool changed = false;
  for (int rank : v.not_loaded) {
    const auto& points = points_.at(rank);
    size_t held = points.size();
    for (size_t i = 0; i < points.size() && points[i].step <= v.step; ++i) held = i;
    if (held == points.size()) return std::nullopt;  // nothing to compare with
    from[rank] = held;
    for (const auto& [loader, at] : resume_at)
      if (points_.at(loader)[at].fp.hashes != points[held].fp.hashes) changed = true;
  }
  if (!changed) return std::nullopt;  // the load gave the loaders what the others hold
  for (const auto& [loader, at] : resume_at) from[loader] = at;
  // The replicas must still differ at the first later point every rank fingerprinted: a
  // broadcast after the load makes them equal again, and a rank that died in its own load
  // (a bad map_location, a strict load that raised) reaches no later point.
  const auto later = FirstCommonPointAfter(from);
  if (!later) return std::nullopt;
  std::optional<HashList> first;
  bool differ = false;
  for (const auto& [rank, points] : points_)
    for (size_t i = from.at(rank) + 1; i < points.size(); ++i)
      if (points[i].step == later->first && points[i].fp.why == later->second) {
        if (!first) first = points[i].fp.hashes;
        differ = differ || points[i].fp.hashes != *first;
        break;
      }
  if (!differ) return std::nullopt;  // equal again: a broadcast followed the load
  v.still_differ_at = later->first;
  return v;
}

std::optional<std::pair<int64_t, std::string>> OneSidedLoad::FirstCommonPointAfter(
    const std::map<int, size_t>& from) const {
  std::map<std::pair<int64_t, std::string>, size_t> holders;
  for (const auto& [rank, points] : points_)
    for (size_t i = from.at(rank) + 1; i < points.size(); ++i)
      if (Later(points[i].fp.why)) ++holders[{points[i].step, points[i].fp.why}];
  for (const auto& [point, n] : holders)
    if (n == points_.size()) return point;  // std::map: the earliest step first
  return std::nullopt;
}

}  // namespace dsdiag::analyzers
