// The `sampler` record (docs/trace-format.md, "Other records"): the samples a rank draws in
// an epoch — an order-sensitive hash, an order-insensitive digest, optionally the indices
// (full mode) and the shard's exact membership bitmap. Written by the trainer's data stream
// and the Python package's DistributedSampler probe, once per epoch; read by shard-overlap
// and epoch-order-repeat.
//
//   {"type":"sampler","step":0,"epoch":0,"sampler_epoch":0,"seed":42,"n":500,
//    "order":"9f3c...","set":"04ab...","size":1000,"bits":"base64..."}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/record.h"
#include "trace/sample_bitmap.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct SamplerKeys {
  static constexpr FieldKey epoch{"epoch"};                  // the training epoch this order serves
  static constexpr FieldKey sampler_epoch{"sampler_epoch"};  // what the sampler was set to
  static constexpr FieldKey seed{"seed"};
  static constexpr FieldKey n{"n"};          // samples this rank draws
  static constexpr FieldKey order{"order"};  // hash of the index sequence
  static constexpr FieldKey set{"set"};      // hash of the sorted indices
  static constexpr FieldKey skip{"skip"};    // samples skipped resuming mid-epoch
  static constexpr FieldKey idx{"idx"};      // the indices (full mode)
  static constexpr FieldKey size{"size"};    // the dataset size, with `bits`
  static constexpr FieldKey bits{"bits"};    // base64 membership bitmap (trace/sample_bitmap.h)
};

// ceil(size / 8) bytes, base64: 1 << 20 samples cost 175 KB per rank per epoch.
inline constexpr int64_t kMaxBitmapSize = kMaxSampleBitmapSize;

struct SamplerRecord {
  static constexpr std::string_view kType = rec::kSampler;
  int64_t epoch = 0;
  int64_t sampler_epoch = 0;  // differs from epoch when the job never calls set_epoch
  int64_t seed = 0;
  uint64_t order = 0;
  uint64_t set = 0;
  int64_t skip = 0;                                // written when > 0
  const std::vector<uint64_t>* indices = nullptr;  // written as `idx` when set
  int64_t n = 0;
  // The rank's epoch indices (any order) and the dataset size: written as `bits` (+ `size`)
  // when 0 < dataset_size <= kMaxBitmapSize, so that the analyzers can prove shard overlap
  // and jointly missed samples.
  const std::vector<uint64_t>* members = nullptr;
  int64_t dataset_size = 0;
};
void AppendFields(const SamplerRecord& r, JsonLine* line);

class SamplerView {
 public:
  explicit SamplerView(const Record& r) : r_(r) {}
  std::optional<int64_t> epoch() const { return r_.Int(SamplerKeys::epoch); }
  std::optional<int64_t> sampler_epoch() const { return r_.Int(SamplerKeys::sampler_epoch); }
  std::optional<int64_t> seed() const { return r_.Int(SamplerKeys::seed); }
  std::optional<int64_t> n() const { return r_.Int(SamplerKeys::n); }
  std::optional<uint64_t> order() const { return r_.Hex(SamplerKeys::order); }
  std::optional<uint64_t> set() const { return r_.Hex(SamplerKeys::set); }
  std::optional<int64_t> skip() const { return r_.Int(SamplerKeys::skip); }
  bool indices(std::vector<int64_t>* out) const { return r_.IntArray(SamplerKeys::idx, out); }
  bool has_indices() const { return r_.Has(SamplerKeys::idx); }
  std::optional<int64_t> size() const { return r_.Int(SamplerKeys::size); }
  std::optional<std::string_view> bits() const { return r_.Str(SamplerKeys::bits); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
