#include "timeline/finding_placement.h"

#include <algorithm>
#include <optional>

namespace dsdiag::timeline {
namespace {

// Index of `rank` in run.ranks (sorted by rank), or -1 when its trace is not analysed.
int RankIndex(const analyzers::RunContext& run, int rank) {
  auto it = std::lower_bound(run.ranks.begin(), run.ranks.end(), rank,
                             [](const analyzers::RankInfo& r, int v) { return r.rank < v; });
  return it != run.ranks.end() && it->rank == rank ? static_cast<int>(it - run.ranks.begin()) : -1;
}

std::optional<int> FirstSelectedRank(const analyzers::RunContext& run, const Selection& s) {
  for (const auto& r : run.ranks)
    if (s.ranks.Contains(r.rank)) return r.rank;
  return std::nullopt;
}

struct Target {
  int pid = 0;
  char scope = 'p';
  bool use_ts = false;  // ts_ns and ts_rank are set and ts_rank's trace is analysed
};

std::optional<Target> Choose(const analyzers::Finding& f, const analyzers::RunContext& run,
                             const Selection& selection) {
  if (f.step && !selection.steps.Contains(*f.step)) return std::nullopt;
  Target t;
  t.use_ts = f.ts_ns && f.ts_rank && RankIndex(run, *f.ts_rank) >= 0;
  if (f.ts_rank && selection.ranks.Contains(*f.ts_rank)) {
    t.pid = *f.ts_rank;
    return t;
  }
  for (int r : f.ranks) {
    if (selection.ranks.Contains(r)) {
      t.pid = r;
      return t;
    }
  }
  if (!f.ranks.empty()) return std::nullopt;
  t.scope = 'g';
  t.pid = FirstSelectedRank(run, selection).value_or(0);
  return t;
}

}  // namespace

std::optional<int64_t> RankPlacement::StepBegin(int64_t step) const {
  for (const auto& [s, t] : step_begins)
    if (s == step) return t;
  return std::nullopt;
}

std::vector<PlacedFinding> PlaceFindings(const std::vector<analyzers::Finding>& findings,
                                         const analyzers::RunContext& run,
                                         const Selection& selection,
                                         const std::vector<RankPlacement>& ranks) {
  std::vector<PlacedFinding> placed;
  for (const auto& f : findings) {
    const auto t = Choose(f, run, selection);
    if (!t) continue;
    PlacedFinding p;
    p.finding = &f;
    p.pid = t->pid;
    p.scope = t->scope;
    auto at = [&](int64_t ns) {
      p.ts_ns = ns;
      p.has_time = true;
    };
    const int index = RankIndex(run, t->pid);
    const std::optional<int64_t> own =
        f.step && index >= 0 ? ranks[index].StepBegin(*f.step) : std::nullopt;
    const std::optional<int64_t> lowest =
        f.step && !ranks.empty() ? ranks.front().StepBegin(*f.step) : std::nullopt;
    if (t->use_ts) {
      at(ranks[RankIndex(run, *f.ts_rank)].clock.ToRank0(*f.ts_ns));
    } else if (own) {
      at(*own);
    } else if (lowest) {
      at(*lowest);
    } else if (index >= 0 && ranks[index].first_ns) {
      at(*ranks[index].first_ns);
    }
    placed.push_back(p);
  }
  return placed;
}

}  // namespace dsdiag::timeline
