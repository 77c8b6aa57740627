#include "analyzers/kinds/common/one_sided_load.h"

#include <algorithm>
#include <utility>

#include "trace/records/fp_record.h"

namespace dsdiag::analyzers {
namespace {

namespace fp_why = trace::records::fp_why;

bool Later(InternedName why) { return !(why == fp_why::kInit) && !(why == fp_why::kResume); }

// The hashes folded into one number (splitmix64's finalizer over each, and the count).
uint64_t Digest(const HashList& hashes) {
  uint64_t d = hashes.size();
  for (uint64_t h : hashes) {
    d ^= h + 0x9e3779b97f4a7c15ULL + (d << 6) + (d >> 2);
    d = (d ^ (d >> 30)) * 0xbf58476d1ce4e5b9ULL;
    d = (d ^ (d >> 27)) * 0x94d049bb133111ebULL;
    d ^= d >> 31;
  }
  return d;
}

}  // namespace

void OneSidedLoad::Add(int rank, int64_t step, const FingerprintRecord& fp) {
  auto& points = points_[rank];
  if (points.size() < kMaxParamFps)
    points.push_back({step, Digest(fp.hashes), whys_.Intern(fp.why)});
}

std::optional<OneSidedLoadVerdict> OneSidedLoad::Judge() const {
  OneSidedLoadVerdict v;
  std::map<int, size_t> resume_at;  // loading rank -> index of its first resume point
  for (const auto& [rank, points] : points_) {
    auto it = std::find_if(points.begin(), points.end(),
                           [](const Point& p) { return p.why == fp_why::kResume; });
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
      if (points_.at(loader)[at].digest != points[held].digest) changed = true;
  }
  if (!changed) return std::nullopt;  // the load gave the loaders what the others hold
  for (const auto& [loader, at] : resume_at) from[loader] = at;
  // The replicas must still differ at the first later point every rank fingerprinted: a
  // broadcast after the load makes them equal again, and a rank that died in its own load
  // (a bad map_location, a strict load that raised) reaches no later point.
  const auto later = FirstCommonPointAfter(from);
  if (!later) return std::nullopt;
  std::optional<uint64_t> first;
  bool differ = false;
  for (const auto& [rank, points] : points_)
    for (size_t i = from.at(rank) + 1; i < points.size(); ++i)
      if (points[i].step == later->first && points[i].why == later->second) {
        if (!first) first = points[i].digest;
        differ = differ || points[i].digest != *first;
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
      if (Later(points[i].why)) ++holders[{points[i].step, std::string(points[i].why.view())}];
  for (const auto& [point, n] : holders)
    if (n == points_.size()) return point;  // std::map: the earliest step first
  return std::nullopt;
}

}  // namespace dsdiag::analyzers
