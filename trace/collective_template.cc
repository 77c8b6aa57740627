#include "trace/collective_template.h"

#include <utility>

namespace dsdiag::trace {

void CollectiveTemplate::Enter(Group* g, int64_t step) {
  if (g->step == step) return;
  if (!g->current.empty()) {
    const size_t n = g->current.size();
    g->before[n] = std::move(g->current);
    g->current.clear();
  }
  g->step = step;
}

void CollectiveTemplate::Add(int pg, int64_t step, Collective op) {
  Group& g = groups_[pg];
  Enter(&g, step);
  g.current.push_back(std::move(op));
}

const std::vector<Collective>* CollectiveTemplate::PreviousStep(int pg, int64_t step,
                                                                size_t ops) const {
  const auto it = groups_.find(pg);
  if (it == groups_.end() || ops == 0) return nullptr;
  const Group& g = it->second;
  // A step that has begun on the group cannot be repeated; `current` is otherwise the
  // group's last step with ops (Enter keeps it until a new step adds one).
  if (g.step == step && !g.current.empty()) return nullptr;
  if (g.step != step && g.current.size() == ops) return &g.current;
  const auto last = g.before.find(ops);
  return last == g.before.end() ? nullptr : &last->second;
}

void CollectiveTemplate::Repeat(int pg, int64_t step, size_t ops) {
  Group& g = groups_[pg];
  Ops repeated;
  if (const Ops* previous = PreviousStep(pg, step, ops)) repeated = *previous;
  Enter(&g, step);
  g.current = std::move(repeated);
}

}  // namespace dsdiag::trace
