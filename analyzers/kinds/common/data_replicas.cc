#include "analyzers/kinds/common/data_replicas.h"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>

#include "trace/record_types.h"
#include "trace/records/params_record.h"

namespace dsdiag::analyzers {
namespace {

namespace records = trace::records;

bool IsTensorParallelDim(std::string_view name) {
  return name == "tp" || name == "tensor" || name == "tensor_parallel";
}

// A pipeline's group by its description: its stages hold different layers and may load
// different parts of a batch (inputs on the first, targets on the last).
bool IsPipelineGroup(std::string_view desc) {
  std::string lower(desc);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  return lower.find("pp") != std::string::npos || lower.find("pipe") != std::string::npos;
}

int PositionIn(const std::vector<int>& set, int rank) {
  auto it = std::find(set.begin(), set.end(), rank);
  return it == set.end() ? -1 : static_cast<int>(it - set.begin());
}

}  // namespace

void DataReplicas::Note(int rank, const trace::Record& r) {
  if (r.type_id() == trace::rec_id::kParams) {
    if (replicas_.count(rank)) return;
    if (auto table = records::ParamTable::Read(r); table && !table->replicas.empty()) {
      replicas_[rank] = table->replicas;
      stale_ = true;
    }
  } else if (r.type_id() == trace::rec_id::kGroup) {
    if (auto g = records::GroupIdentity::Read(r); g && g->pg != 0) {
      groups_[rank].emplace(g->pg, std::move(*g));
      stale_ = true;
    }
  } else if (r.type_id() == trace::rec_id::kMesh) {
    if (meshes_.count(rank)) return;
    if (auto m = records::MeshLayout::Read(r)) {
      meshes_.emplace(rank, std::move(*m));
      stale_ = true;
    }
  }
}

const std::vector<std::vector<int>>& DataReplicas::Sets() {
  if (stale_) Recompute();
  return sets_;
}

int DataReplicas::ReplicaOf(int rank) {
  if (stale_) Recompute();
  auto it = replica_of_.find(rank);
  return it == replica_of_.end() ? rank : it->second;
}

void DataReplicas::Recompute() {
  stale_ = false;
  std::set<std::vector<int>> found;
  const auto group_of = [&](int rank, int64_t pg) -> const records::GroupIdentity* {
    auto by_rank = groups_.find(rank);
    if (by_rank == groups_.end()) return nullptr;
    auto it = by_rank->second.find(pg);
    return it == by_rank->second.end() ? nullptr : &it->second;
  };
  const auto add = [&](std::vector<int> ranks) {
    std::sort(ranks.begin(), ranks.end());
    if (ranks.size() >= 2) found.insert(std::move(ranks));
  };
  for (const auto& [rank, mesh] : meshes_)
    for (size_t d = 0; d < mesh.dims.size() && d < mesh.pgs.size(); ++d)
      if (IsTensorParallelDim(mesh.dims[d]))
        if (const auto* g = group_of(rank, mesh.pgs[d])) add(g->ranks);
  for (const auto& [rank, set] : replicas_) {
    // C++17 lambdas cannot capture a structured binding (clang rejects it): name them.
    const size_t set_size = set.size();
    const int position = PositionIn(set, rank);
    for (const auto& [pg, group] : groups_[rank]) {
      if (IsPipelineGroup(group.desc) || group.ranks.size() < 2) continue;
      const bool one_position = std::all_of(group.ranks.begin(), group.ranks.end(), [&](int m) {
        auto theirs = replicas_.find(m);
        return theirs != replicas_.end() && theirs->second.size() == set_size &&
               PositionIn(theirs->second, m) == position;
      });
      if (one_position) add(group.ranks);
    }
  }
  sets_.assign(found.begin(), found.end());
  replica_of_.clear();
  for (const auto& s : sets_)
    for (int r : s) {
      auto [it, fresh] = replica_of_.emplace(r, s.front());
      if (!fresh) it->second = std::min(it->second, s.front());
    }
}

}  // namespace dsdiag::analyzers
