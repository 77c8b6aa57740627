#include "trace/records/sampler_record.h"

#include "trace/json_line.h"

namespace dsdiag::trace::records {

void AppendFields(const SamplerRecord& r, JsonLine* line) {
  using K = SamplerKeys;
  line->Field(K::epoch.name(), r.epoch)
      .Field(K::sampler_epoch.name(), r.sampler_epoch)
      .Field(K::seed.name(), r.seed)
      .Field(K::n.name(), r.n)
      .Hex(K::order.name(), r.order)
      .Hex(K::set.name(), r.set);
  if (r.skip > 0) line->Field(K::skip.name(), r.skip);
  if (r.indices != nullptr) {
    line->BeginArray(K::idx.name());
    for (uint64_t i : *r.indices) line->Add(static_cast<int64_t>(i));
    line->EndArray();
  }
  if (r.members != nullptr && r.dataset_size > 0 && r.dataset_size <= kMaxBitmapSize)
    line->Field(K::size.name(), r.dataset_size)
        .Field(K::bits.name(), EncodeSampleBitmap(*r.members, r.dataset_size));
}

}  // namespace dsdiag::trace::records
