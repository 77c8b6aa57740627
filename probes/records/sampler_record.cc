#include "probes/records/sampler_record.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/record_types.h"
#include "trace/sample_bitmap.h"

namespace dsdiag::probes::records {

void WriteSampler(probes::Session* session, const SamplerRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kSampler);
  trace::JsonLine& line = record.line();
  line.Field("epoch", r.epoch)
      .Field("sampler_epoch", r.sampler_epoch)
      .Field("seed", r.seed)
      .Field("n", r.n)
      .Hex("order", r.order)
      .Hex("set", r.set);
  if (r.skip > 0) line.Field("skip", r.skip);
  if (r.indices != nullptr) {
    line.BeginArray("idx");
    for (uint64_t i : *r.indices) line.Add(static_cast<int64_t>(i));
    line.EndArray();
  }
  if (r.members != nullptr && r.dataset_size > 0 && r.dataset_size <= kMaxBitmapSize)
    line.Field("size", r.dataset_size)
        .Field("bits", trace::EncodeSampleBitmap(*r.members, r.dataset_size));
}

}  // namespace dsdiag::probes::records
