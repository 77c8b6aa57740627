// CollectiveWindow: gathers what each rank recorded for one collective — keyed by its process
// group and sequence number, which name the same op on every rank — and hands the collective
// over once every rank has had the chance to record it.
//
// The step driver delivers every rank's records of step s before OnStepDone(s); a helper
// thread's record may lag its rank by one step. So at OnStepDone(s) the collectives first
// seen in a step before s are complete: Flush(s) hands them over (in step, then pg, then seq
// order) and forgets them. Memory is about two steps of collectives. In the driver's
// per-rank fallback every record comes before the first OnStepDone, so the window holds the
// whole run until then (step_driver.h); the result is the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace dsdiag::analyzers {

struct CollectiveKey {
  int pg = 0;
  int64_t seq = 0;
  friend bool operator<(const CollectiveKey& a, const CollectiveKey& b) {
    return std::tie(a.pg, a.seq) < std::tie(b.pg, b.seq);
  }
  friend bool operator==(const CollectiveKey& a, const CollectiveKey& b) {
    return a.pg == b.pg && a.seq == b.seq;
  }
};

template <typename Entry>
struct CollectiveSlot {
  int64_t step = 0;            // the step of its first record
  std::vector<Entry> entries;  // one per record, in delivery order
};

template <typename Entry>
class CollectiveWindow {
 public:
  void Add(CollectiveKey key, int64_t step, Entry entry) {
    const auto it = Slot(key, step);
    it->second.entries.push_back(std::move(entry));
    last_ = it;
    has_last_ = true;
  }

  // Hands over, then forgets, every collective first seen in a step before `step`.
  // `done(const CollectiveKey&, const CollectiveSlot<Entry>&)`.
  template <typename Done>
  void Flush(int64_t step, Done&& done) {
    has_last_ = false;  // its slot may go
    while (!by_step_.empty() && by_step_.begin()->first < step) {
      std::vector<CollectiveKey> keys = std::move(by_step_.begin()->second);
      by_step_.erase(by_step_.begin());
      std::sort(keys.begin(), keys.end());
      for (const CollectiveKey& key : keys) {
        auto it = slots_.find(key);
        if (it == slots_.end()) continue;
        done(key, it->second);
        expected_entries_ = it->second.entries.size();
        slots_.erase(it);
      }
    }
  }

  template <typename Done>
  void FlushAll(Done&& done) {
    if (!by_step_.empty()) Flush(by_step_.rbegin()->first + 1, done);
  }

  size_t size() const { return slots_.size(); }

 private:
  using Slots = std::map<CollectiveKey, CollectiveSlot<Entry>>;

  // `key`'s slot, made if new. A rank records its collectives in order, so its next record
  // is most often the slot after its last one: found there, without walking a tree that
  // holds a whole window's collectives (a cache miss per level when the driver delivers
  // one rank's K steps, then the next rank's).
  typename Slots::iterator Slot(CollectiveKey key, int64_t step) {
    if (has_last_) {
      if (last_->first == key) return last_;
      const auto next = std::next(last_);
      if (next != slots_.end() && next->first == key) return next;
    }
    auto [it, fresh] = slots_.try_emplace(key);
    if (fresh) {
      it->second.step = step;
      // As many records as the last collective had: thousands of ranks would otherwise
      // regrow (and copy) the vector a dozen times per collective.
      it->second.entries.reserve(expected_entries_);
      by_step_[step].push_back(key);
    }
    return it;
  }

  Slots slots_;
  std::map<int64_t, std::vector<CollectiveKey>> by_step_;
  size_t expected_entries_ = 0;    // records of the last collective handed over
  typename Slots::iterator last_;  // the slot of the last Add, while has_last_
  bool has_last_ = false;
};

}  // namespace dsdiag::analyzers
