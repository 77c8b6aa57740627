// RankSlots<T>: what each rank said at one point of a step (its fingerprint, its set of
// missing gradients), held flat: one vector of (rank, value) in ascending rank order.
//
// It replaces a std::map<int, T> per step. The driver delivers a window's ranks one after
// another in ascending order, so a step's slots arrive in rank order and each Set appends;
// at thousands of ranks a tree per step cost a cache miss per level on every record
// (grad-desync and missing-grad took a third of compare's D1 misses in their maps). A
// rank set again (a record repeated, a late helper-thread record) replaces its value, as
// the map's operator[] did; one out of order is inserted in place.
//
// The interface is the map's, as far as the analyzers use it: iteration as (rank, value)
// pairs in rank order, begin()->second for the lowest rank, find/count/at by rank.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace dsdiag::analyzers {

template <typename T>
class RankSlots {
 public:
  using value_type = std::pair<int, T>;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  // Sets `rank`'s value, replacing an earlier one.
  void Set(int rank, T value) {
    if (slots_.empty() || slots_.back().first < rank) {
      slots_.emplace_back(rank, std::move(value));
      return;
    }
    auto it = std::lower_bound(slots_.begin(), slots_.end(), rank, RankBelow);
    if (it != slots_.end() && it->first == rank) {
      it->second = std::move(value);
    } else {
      slots_.emplace(it, rank, std::move(value));
    }
  }

  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  const_iterator begin() const { return slots_.begin(); }
  const_iterator end() const { return slots_.end(); }

  const_iterator find(int rank) const {
    auto it = std::lower_bound(begin(), end(), rank, RankBelow);
    return it != end() && it->first == rank ? it : end();
  }
  size_t count(int rank) const { return find(rank) == end() ? 0 : 1; }
  const T& at(int rank) const {
    auto it = find(rank);
    if (it == end()) throw std::out_of_range("RankSlots::at: no slot for the rank");
    return it->second;
  }

 private:
  static bool RankBelow(const value_type& slot, int rank) { return slot.first < rank; }

  std::vector<value_type> slots_;
};

}  // namespace dsdiag::analyzers
