#include "analyzers/kinds/common/stream_parting.h"

#include <algorithm>

namespace dsdiag::analyzers {

void StreamParting::Note(int pg, int64_t seq, const std::vector<Seen>& seen) {
  if (seen.size() < 2) return;
  for (const Seen& s : seen)
    if (s.site == 0) return;  // a rank without sites: nothing to compare
  Group& g = groups_[pg];
  std::vector<Side> sides;
  for (const Seen& s : seen) {
    auto it =
        std::find_if(sides.begin(), sides.end(), [&](const Side& d) { return d.site == s.site; });
    if (it == sides.end()) {
      sides.push_back({s.site, s.step, s.signature, {s.rank}});
    } else {
      it->ranks.push_back(s.rank);
      it->step = std::min(it->step, s.step);
    }
  }
  if (g.parting) {
    if (sides.size() > 1) {
      ++g.parting->later;
      return;
    }
    // Realigned at once, in one step: one collective issued from two lines, no parting.
    if (g.parting->later > 0 || g.steps_differ) return;
    g.parting.reset();
  }
  if (sides.size() == 1) {
    if (g.last_agreed != 0) g.follows.emplace(g.last_agreed, sides.front().site);
    g.last_agreed = sides.front().site;
    g.known.insert(g.last_agreed);
    return;
  }
  std::stable_sort(sides.begin(), sides.end(),
                   [](const Side& a, const Side& b) { return a.ranks.size() > b.ranks.size(); });
  Parting p;
  p.pg = pg;
  p.seq = seq;
  p.sides = std::move(sides);
  for (const Side& s : p.sides) g.steps_differ |= s.step != p.sides.front().step;
  Judge(&g, &p);
  g.parting = std::move(p);
}

void StreamParting::Judge(Group* g, Parting* p) const {
  std::vector<Side>& sides = p->sides;
  std::vector<size_t> odd;
  if (sides[0].ranks.size() > sides[1].ranks.size()) {
    for (size_t i = 1; i < sides.size(); ++i) odd.push_back(i);
  } else {
    p->majority = false;
    // Off the pattern: a site that never followed the last agreed one.
    std::vector<size_t> off;
    for (size_t i = 0; i < sides.size(); ++i)
      if (!g->follows.count({g->last_agreed, sides[i].site})) off.push_back(i);
    if (!off.empty() && off.size() < sides.size()) {
      odd = off;
    } else {
      int64_t first = sides.front().step;
      for (const Side& s : sides) first = std::min(first, s.step);
      std::vector<size_t> later;
      for (size_t i = 0; i < sides.size(); ++i)
        if (sides[i].step > first) later.push_back(i);
      if (!later.empty() && later.size() < sides.size()) odd = later;
    }
  }
  if (odd.empty()) {  // undecided: every rank of the split
    for (const Side& s : sides) p->named.insert(p->named.end(), s.ranks.begin(), s.ranks.end());
    std::sort(p->named.begin(), p->named.end());
    return;
  }
  // The reference first: the first side not named.
  std::vector<Side> ordered;
  for (size_t i = 0; i < sides.size(); ++i)
    if (std::find(odd.begin(), odd.end(), i) == odd.end()) ordered.push_back(sides[i]);
  for (size_t i : odd) {
    ordered.push_back(sides[i]);
    p->named.insert(p->named.end(), sides[i].ranks.begin(), sides[i].ranks.end());
  }
  std::sort(p->named.begin(), p->named.end());
  // A site the group had issued before, now out of turn: the rank skipped what the others
  // issued; one it never issued: the rank added a collective.
  p->how = g->known.count(sides[odd.front()].site) ? How::kSkipped : How::kAdded;
  sides = std::move(ordered);
}

std::optional<StreamParting::Parting> StreamParting::Of(int pg) const {
  const auto it = groups_.find(pg);
  if (it == groups_.end() || !it->second.parting) return std::nullopt;
  const Group& g = it->second;
  if (!g.steps_differ && g.parting->later == 0) return std::nullopt;
  return g.parting;
}

std::vector<int> StreamParting::groups() const {
  std::vector<int> pgs;
  for (const auto& [pg, g] : groups_)
    if (g.parting) pgs.push_back(pg);
  return pgs;
}

}  // namespace dsdiag::analyzers
