#include "analyzers/kinds/hang/hang_verdict.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "trace/records/end_record.h"

namespace dsdiag::analyzers::hang {
namespace {

Stuck ChooseStuck(const std::vector<Witness>& witnesses) {
  std::map<CollectiveKey, std::pair<int, bool>> votes;  // count, all inferred
  for (const Witness& w : witnesses) {
    if (!w.key) continue;
    auto [it, fresh] = votes.try_emplace(*w.key, 0, true);
    ++it->second.first;
    it->second.second = it->second.second && w.inferred;
  }
  Stuck stuck;
  int best = 0;
  for (const auto& [key, v] : votes) {
    if (v.first > best) {  // map order: ties keep the lowest (pg, seq)
      best = v.first;
      stuck.key = key;
      stuck.known = true;
      stuck.inferred = v.second;
    }
  }
  return stuck;
}

// Fills op, tag and step from the first waiter that knows them.
void FillDetails(const HangRun& run, Stuck* stuck, const std::vector<int>& waiters) {
  for (int r : waiters) {
    const HangRankState& s = run.ranks[r];
    if (const trace::FlightDumpEntry* e = DumpEntry(s, stuck->key)) {
      if (stuck->op.empty()) stuck->op = e->what.op;
      if (stuck->tag.empty()) stuck->tag = e->what.tag;
      if (!stuck->step) stuck->step = e->step;
    }
    if (s.timeout && s.timeout->key && *s.timeout->key == stuck->key) {
      if (stuck->op.empty()) stuck->op = s.timeout->op;
      if (stuck->tag.empty()) stuck->tag = s.timeout->tag;
      if (!stuck->step) stuck->step = s.timeout->step;
    }
  }
  for (int r : waiters)
    if (!stuck->step && run.ranks[r].ended) stuck->step = run.ranks[r].end.last_step_begun;
}
// The waiters cut off from the store's host: those that recorded the store unreachable,
// when others that failed too (end reason "error") reached it and rank 0, the store's
// host, is not among them. Empty otherwise; *reached gets the ones that reached it. The
// others may have `passed` the stuck collective: a link cut mid-allreduce can leave one
// side done with it and waiting in the next one, for a peer that will never come.
std::vector<int> CutOff(const HangRun& run, const std::vector<int>& waiters,
                        const std::vector<int>& passed, std::vector<int>* reached) {
  std::vector<int> cut, ok;
  auto failed_but_reached = [&](const HangRankState& s) {
    return !s.store_unreachable && s.ended && s.end.end_seen &&
           s.end.reason == trace::records::end_reason::kError;
  };
  for (int r : waiters) {
    if (run.ranks[r].store_unreachable) {
      cut.push_back(r);
    } else if (failed_but_reached(run.ranks[r])) {
      ok.push_back(r);
    }
  }
  for (int r : passed)
    if (failed_but_reached(run.ranks[r])) ok.push_back(r);
  std::sort(ok.begin(), ok.end());
  if (cut.empty() || ok.empty() || cut.front() == 0) return {};
  *reached = std::move(ok);
  return cut;
}

}  // namespace

HangVerdict JudgeHang(const HangRun& run, const std::vector<Witness>& witnesses) {
  Stuck stuck = ChooseStuck(witnesses);
  std::vector<int> waiters, passed, culprits, no_trace;
  std::set<int> waiting;
  for (const Witness& w : witnesses)
    if (!stuck.known || (w.key && *w.key == stuck.key)) waiting.insert(w.rank);
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const int rank = static_cast<int>(r);
    const HangRankState& s = run.ranks[r];
    if (!s.traced && !s.dump) {
      if (std::find(run.missing.begin(), run.missing.end(), rank) != run.missing.end())
        no_trace.push_back(rank);
      continue;
    }
    if (!stuck.known) {
      (waiting.count(rank) ? waiters : culprits).push_back(rank);
      continue;
    }
    const trace::FlightDumpEntry* e = DumpEntry(s, stuck.key);
    const auto done = s.completed.find(stuck.key.pg);
    if (waiting.count(rank) || (e && e->pending())) {
      waiters.push_back(rank);
    } else if ((done != s.completed.end() && done->second >= stuck.key.seq) || e) {
      passed.push_back(rank);
    } else if (UsesPg(s, stuck.key.pg)) {
      culprits.push_back(rank);
    }
  }
  if (culprits.empty() && stuck.known && stuck.key.pg == 0) culprits = no_trace;
  std::vector<int> reached;
  if (culprits.empty() && stuck.known) culprits = CutOff(run, waiters, passed, &reached);
  const bool cut_off = !reached.empty();
  if (stuck.known) FillDetails(run, &stuck, waiters);
  HangVerdict v;
  v.stuck = std::move(stuck);
  v.waiters = std::move(waiters);
  v.passed = std::move(passed);
  v.culprits = std::move(culprits);
  v.no_trace = std::move(no_trace);
  v.reached = std::move(reached);
  v.cut_off = cut_off;
  return v;
}

}  // namespace dsdiag::analyzers::hang
