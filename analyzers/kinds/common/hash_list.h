// HashList: a fingerprint record's hashes (`h`), held inline when there are few.
//
// Bucket-granularity fingerprints have a handful of hashes, and every rank writes two or
// three such records a step: at 16,384 ranks a heap block per record was millions of
// malloc/free pairs per run. Up to kInline hashes live in the object; more (per-parameter
// fingerprints, --probes full) go to one heap block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace dsdiag::analyzers {

class HashList {
 public:
  static constexpr size_t kInline = 4;

  HashList() = default;
  HashList(const HashList& other) { Assign(other.begin(), other.end()); }
  HashList& operator=(const HashList& other) {
    if (this != &other) Assign(other.begin(), other.end());
    return *this;
  }
  HashList(HashList&& other) noexcept { *this = std::move(other); }
  HashList& operator=(HashList&& other) noexcept {
    if (this == &other) return *this;
    size_ = other.size_;
    heap_ = std::move(other.heap_);
    std::copy(other.inline_, other.inline_ + std::min(size_, kInline), inline_);
    other.size_ = 0;
    return *this;
  }

  void Assign(const uint64_t* first, const uint64_t* last) {
    size_ = static_cast<size_t>(last - first);
    heap_.reset(size_ > kInline ? new uint64_t[size_] : nullptr);
    std::copy(first, last, data());
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint64_t* begin() const { return data(); }
  const uint64_t* end() const { return data() + size_; }
  uint64_t operator[](size_t i) const { return data()[i]; }

  friend bool operator==(const HashList& a, const HashList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const HashList& a, const HashList& b) { return !(a == b); }

 private:
  const uint64_t* data() const { return heap_ ? heap_.get() : inline_; }
  uint64_t* data() { return heap_ ? heap_.get() : inline_; }

  size_t size_ = 0;
  uint64_t inline_[kInline] = {};
  std::unique_ptr<uint64_t[]> heap_;
};

}  // namespace dsdiag::analyzers
