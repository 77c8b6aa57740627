#include "analyzers/kinds/common/fingerprints.h"

#include <algorithm>

#include "trace/records/fp_record.h"

namespace dsdiag::analyzers {

namespace records = trace::records;

namespace {

// Same granularity, hash function and length: hashes that can be compared index by index.
bool Comparable(const FingerprintRecord& a, const FingerprintRecord& b) {
  return a.per_param == b.per_param && a.device_sum == b.device_sum &&
         a.hashes.size() == b.hashes.size();
}

}  // namespace

std::optional<FingerprintRecord> ReadFingerprint(const trace::Record& record) {
  FingerprintRecord fp;
  const records::FpView view(record);
  auto what = view.what();
  auto why = view.why();
  auto gran = view.gran();
  if (!what || !why || !gran) return std::nullopt;
  fp.what = std::string(*what);
  fp.why = std::string(*why);
  fp.per_param = *gran == records::kGranParam;
  fp.device_sum = view.fn() == records::kFnDeviceSum;
  // Read into a buffer that keeps its capacity, then held inline when short (hash_list.h).
  thread_local std::vector<uint64_t> hashes;
  if (!view.hashes(&hashes)) return std::nullopt;
  fp.hashes.Assign(hashes.data(), hashes.data() + hashes.size());
  return fp;
}

std::vector<IndexDivergence> DiffByIndex(const RankFingerprints& by_rank) {
  std::vector<IndexDivergence> out;
  if (by_rank.size() < 2) return out;
  const FingerprintRecord& first = by_rank.begin()->second;
  for (size_t i = 0; i < first.hashes.size(); ++i) {
    // Agreement is the usual case: seen without building the groups (a vector of every rank
    // per index and step adds up at thousands of ranks).
    const bool all_agree = std::all_of(by_rank.begin(), by_rank.end(), [&](const auto& entry) {
      const FingerprintRecord& fp = entry.second;
      return !Comparable(fp, first) || fp.hashes[i] == first.hashes[i];
    });
    if (all_agree) continue;
    std::vector<std::pair<int, uint64_t>> values;
    for (const auto& [rank, fp] : by_rank)
      if (Comparable(fp, first)) values.emplace_back(rank, fp.hashes[i]);
    auto groups = GroupRanks(values);
    if (groups.size() > 1) out.push_back({static_cast<int>(i), std::move(groups)});
  }
  return out;
}

std::vector<int> ChangedRanks(const RankFingerprints& before, const RankFingerprints& after,
                              int index) {
  std::vector<int> changed;
  for (const auto& [rank, b] : before) {
    auto a = after.find(rank);
    if (a == after.end() || !Comparable(b, a->second) || index < 0 ||
        static_cast<size_t>(index) >= b.hashes.size())
      continue;
    if (b.hashes[index] != a->second.hashes[index]) changed.push_back(rank);
  }
  return changed;
}

std::vector<int> ChangedRanks(const RankFingerprints& before, const RankFingerprints& after) {
  std::vector<int> changed;
  for (const auto& [rank, b] : before) {
    auto a = after.find(rank);
    if (a != after.end() && Comparable(b, a->second) && b.hashes != a->second.hashes)
      changed.push_back(rank);
  }
  return changed;
}

std::vector<RankGroup<uint64_t>> GroupByVector(const RankFingerprints& by_rank) {
  std::vector<std::pair<int, uint64_t>> values;
  for (const auto& [rank, fp] : by_rank) {
    // FNV-style fold of the vector: equal vectors give equal keys.
    uint64_t key = 1469598103934665603ull ^ fp.hashes.size();
    for (uint64_t h : fp.hashes) key = (key ^ h) * 1099511628211ull;
    values.emplace_back(rank, key);
  }
  return GroupRanks(values);
}

trace::JsonValue GroupsJson(const std::vector<RankGroup<uint64_t>>& groups) {
  trace::JsonValue out = trace::JsonValue::Array();
  for (const auto& g : groups) {
    trace::JsonValue ranks = trace::JsonValue::Array();
    for (int r : g.ranks) ranks.Push(r);
    trace::JsonValue group = trace::JsonValue::Object();
    group.Set("ranks", std::move(ranks));
    out.Push(std::move(group));
  }
  return out;
}

}  // namespace dsdiag::analyzers
