#include "report/collective_waits.h"

#include <algorithm>
#include <utility>

namespace dsdiag::report {

CollectiveWaits::CollectiveWaits(int ranks, size_t max_held)
    : ranks_(ranks), max_held_(max_held), collectives_(ranks), entered_last_(ranks) {}

void CollectiveWaits::Add(int rank_index, int64_t step, int64_t pg, int64_t seq, int64_t enter_ns,
                          int64_t dur_ns) {
  if (abandoned_) return;
  Pending& c = pending_[{pg, seq}];
  if (c.enters.empty()) c.step = step;
  c.enters.push_back({rank_index, enter_ns, std::max<int64_t>(dur_ns, 0)});
  ++held_;
  if (static_cast<int>(c.enters.size()) >= ranks_) {
    // Settle moves the sums into a step slot: hold the collective no longer.
    const Pending done = std::move(c);
    pending_.erase({pg, seq});
    held_ -= done.enters.size();
    Settle(done);
  }
  if (held_ > max_held_) Abandon();
}

void CollectiveWaits::Settle(const Pending& c) {
  int64_t first = c.enters.front().enter_ns;
  int64_t last = first;
  int last_rank = c.enters.front().rank_index;
  for (const Enter& e : c.enters) {
    first = std::min(first, e.enter_ns);
    if (e.enter_ns > last) {
      last = e.enter_ns;
      last_rank = e.rank_index;
    }
  }
  StepSums& sums = SumsOf(c.step);
  for (const Enter& e : c.enters) {
    const int64_t wait = std::clamp<int64_t>(last - e.enter_ns, 0, e.dur_ns);
    const int64_t delay = std::max<int64_t>(e.enter_ns - first, 0);
    int64_t& w = sums.wait[e.rank_index];
    int64_t& d = sums.delay[e.rank_index];
    w = (w < 0 ? 0 : w) + wait;
    d = (d < 0 ? 0 : d) + delay;
    if (c.enters.size() > 1) ++collectives_[e.rank_index];
  }
  if (c.enters.size() > 1) ++entered_last_[last_rank];
}

CollectiveWaits::StepSums& CollectiveWaits::SumsOf(int64_t step) {
  auto it = sums_.find(step);
  if (it != sums_.end()) return it->second;
  StepSums& sums = sums_[step];
  sums.wait.assign(ranks_, -1);
  sums.delay.assign(ranks_, -1);
  held_ += static_cast<size_t>(ranks_);
  return sums;
}

void CollectiveWaits::StepDone(int64_t step, const Sink& sink) {
  if (abandoned_) return;
  std::vector<std::pair<int64_t, int64_t>> older;
  for (const auto& [key, c] : pending_)
    if (c.step < step) older.push_back(key);
  // Settle in (pg, seq) order: the sums do not depend on it, but entered_last ties might.
  std::sort(older.begin(), older.end());
  for (const auto& key : older) {
    auto it = pending_.find(key);
    held_ -= it->second.enters.size();
    Settle(it->second);
    pending_.erase(it);
  }
  HandOut(step, sink);
}

void CollectiveWaits::Finish(const Sink& sink) {
  if (abandoned_) return;
  std::vector<std::pair<int64_t, int64_t>> keys;
  for (const auto& entry : pending_) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  for (const auto& key : keys) Settle(pending_.at(key));
  pending_.clear();
  HandOut(INT64_MAX, sink);
  held_ = 0;
}

void CollectiveWaits::HandOut(int64_t before_step, const Sink& sink) {
  while (!sums_.empty() && sums_.begin()->first < before_step) {
    const auto& [step, sums] = *sums_.begin();
    for (int r = 0; r < ranks_; ++r)
      if (sums.wait[r] >= 0) sink(r, step, sums.wait[r], sums.delay[r]);
    held_ -= static_cast<size_t>(ranks_);
    sums_.erase(sums_.begin());
  }
}

void CollectiveWaits::Abandon() {
  abandoned_ = true;
  pending_.clear();
  sums_.clear();
  held_ = 0;
}

}  // namespace dsdiag::report
