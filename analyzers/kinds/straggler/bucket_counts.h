// BucketCounts: a histogram over the straggler analysis's lateness buckets (kBuckets of them)
// that holds only the buckets it has counted, in bucket order.
//
// Each rank keeps two (lateness per collective, excess per step). Dense, they were 2 x 728
// bytes per rank whatever the run's length: 190 MB at 131,072 ranks, though a rank of a
// 20-step run fills a few dozen buckets at most. A rank's lateness stays in a narrow band, so
// the list stays short; past kDenseAt buckets it turns into the dense array (the bound of
// the search per count, and of the memory: never more than the dense form plus its header).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dsdiag::analyzers::straggler {

class BucketCounts {
 public:
  explicit BucketCounts(int buckets) : buckets_(buckets) {}

  void Add(int bucket) {
    if (!dense_.empty()) {
      ++dense_[static_cast<size_t>(bucket)];
      return;
    }
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), bucket,
                               [](const Count& c, int b) { return c.bucket < b; });
    if (it != sparse_.end() && it->bucket == bucket) {
      ++it->n;
      return;
    }
    if (sparse_.size() < kDenseAt) {
      sparse_.insert(it, Count{bucket, 1});
      return;
    }
    dense_.assign(static_cast<size_t>(buckets_), 0);
    for (const Count& c : sparse_) dense_[static_cast<size_t>(c.bucket)] = c.n;
    ++dense_[static_cast<size_t>(bucket)];
    sparse_ = {};
  }

  bool empty() const { return sparse_.empty() && dense_.empty(); }

  // f(bucket, count) for every bucket counted, in bucket order; stops when f returns true.
  template <typename F>
  void ForEach(F f) const {
    if (dense_.empty()) {
      for (const Count& c : sparse_)
        if (f(c.bucket, c.n)) return;
      return;
    }
    for (int i = 0; i < buckets_; ++i)
      if (dense_[static_cast<size_t>(i)] != 0 && f(i, dense_[static_cast<size_t>(i)])) return;
  }

 private:
  struct Count {
    int bucket;
    uint32_t n;
  };
  // 8 bytes a bucket listed against 4 dense: past a quarter of the buckets the list costs
  // more than the array, and each count searches further.
  static constexpr size_t kDenseAt = 48;

  int buckets_;
  std::vector<Count> sparse_;  // by bucket
  std::vector<uint32_t> dense_;
};

}  // namespace dsdiag::analyzers::straggler
