// The `loader` record (docs/trace-format.md, "Other records"): one training batch — how long
// the loop waited for it, how long it took to make when that is visible, how many samples.
// Written by the trainer's data stream and the Python package's DataLoader probe; read by
// loader-starvation and the timeline, and (`batch`) by shard-overlap: ranks whose training
// batches are the same bytes step after step train on one unsplit dataset.
//
//   {"type":"loader","step":3,"wait":1200000,"produce":1100000,"samples":32,"batch":"9f3c.."}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct LoaderKeys {
  static constexpr FieldKey wait{"wait"};        // ns the loop blocked on the batch
  static constexpr FieldKey produce{"produce"};  // ns spent making it, when visible
  static constexpr FieldKey samples{"samples"};
  static constexpr FieldKey batch{"batch"};  // sample fingerprint of the batch's tensors
};

struct LoaderRecord {
  static constexpr std::string_view kType = rec::kLoader;
  int64_t wait = 0;
  int64_t produce = -1;  // negative: not visible (made on another thread), left out
  int64_t samples = 0;
  uint64_t batch = 0;  // 0: not taken (no CPU tensor in the batch), left out
};
void AppendFields(const LoaderRecord& r, JsonLine* line);

class LoaderView {
 public:
  explicit LoaderView(const Record& r) : r_(r) {}
  std::optional<int64_t> wait() const { return r_.Int(LoaderKeys::wait); }
  std::optional<int64_t> produce() const { return r_.Int(LoaderKeys::produce); }
  std::optional<int64_t> samples() const { return r_.Int(LoaderKeys::samples); }
  std::optional<uint64_t> batch() const { return r_.Hex(LoaderKeys::batch); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
