#include "timeline/collective_index.h"

namespace dsdiag::timeline {

void CollectiveIndex::Grow(Group* g, uint64_t size) {
  const uint64_t old = g->dense.size();
  g->dense.resize(size);
  // Entries parked in the map while the vector was shorter move in, so that one seq never
  // has two slots.
  for (auto it = g->sparse.begin(); it != g->sparse.end();) {
    const uint64_t i = static_cast<uint64_t>(it->first) - static_cast<uint64_t>(g->base);
    if (i >= old && i < size) {
      g->dense[i] = it->second;
      it = g->sparse.erase(it);
    } else {
      ++it;
    }
  }
}

CollectiveIndex::Entry* CollectiveIndex::Slot(int64_t pg, int64_t seq) {
  auto [it, fresh] = groups_.try_emplace(pg);
  Group& g = it->second;
  if (fresh) g.base = seq;
  // Unsigned difference: a seq below base wraps to a huge value and stays sparse.
  const uint64_t i = static_cast<uint64_t>(seq) - static_cast<uint64_t>(g.base);
  if (i < g.dense.size()) return &g.dense[i];
  if (i < g.dense.size() + kGrowChunk) {
    Grow(&g, (i / kGrowChunk + 1) * kGrowChunk);
    return &g.dense[i];
  }
  return &g.sparse[seq];
}

void CollectiveIndex::Add(int64_t pg, int64_t seq, int64_t enter_rank0_ns, int rank) {
  Entry* e = Slot(pg, seq);
  if (e->ranks == 0) ++size_;
  ++e->ranks;
  if (enter_rank0_ns > e->last_enter) {
    e->last_enter = enter_rank0_ns;
    e->last_rank = rank;
  }
}

const CollectiveIndex::Entry* CollectiveIndex::Find(int64_t pg, int64_t seq) const {
  auto it = groups_.find(pg);
  if (it == groups_.end()) return nullptr;
  const Group& g = it->second;
  const uint64_t i = static_cast<uint64_t>(seq) - static_cast<uint64_t>(g.base);
  const Entry* e = nullptr;
  if (i < g.dense.size()) {
    e = &g.dense[i];
  } else {
    auto s = g.sparse.find(seq);
    if (s != g.sparse.end()) e = &s->second;
  }
  return e && e->ranks > 0 ? e : nullptr;
}

}  // namespace dsdiag::timeline
