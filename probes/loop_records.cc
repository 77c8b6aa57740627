#include "probes/loop_records.h"

#include "probes/probe_timer.h"
#include "probes/session.h"
#include "trace/clock.h"
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

void WriteLoader(probes::Session* session, int64_t wait, int64_t produce,
                 int64_t samples) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kLoader);
  trace::JsonLine& line = record.line();
  line.Field("wait", wait);
  if (produce >= 0) line.Field("produce", produce);
  line.Field("samples", samples);
}

void WriteScaler(probes::Session* session, const ScalerRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kScaler);
  trace::JsonLine& line = record.line();
  line.Field("scale", r.scale)
      .Field("inf_local", r.inf_local)
      .Field("inf_global", r.inf_global)
      .Field("skipped", r.skipped);
  if (r.event != nullptr) line.Field("event", r.event);
  line.Field("norm_scaled", r.norm_scaled).Field("norm", r.norm);
}

void WriteClip(probes::Session* session, bool unscaled, double norm, double max) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kClip);
  record.line().Field("unscaled", unscaled).Field("norm", norm).Field("max", max);
}

void WriteCheckpoint(probes::Session* session, const CheckpointRecord& r) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  {
    // A span record: `ts` is the start, so that checkpoint-race can see overlapping writes.
    auto record = session->writer()->BeginAt(trace::rec::kCheckpoint, trace::MonotonicNs() - r.dur);
    trace::JsonLine& line = record.line();
    line.Field("op", r.op)
        .Field("path", r.path)
        .Field("bytes", r.bytes)
        .Hex("h", r.hash)
        .Field("ckpt_step", r.ckpt_step)
        .Field("epoch", r.epoch)
        .Field("dur", r.dur);
    if (r.op == "load") {
      line.Field("map_location", r.map_location).Field("prefix_stripped", r.prefix_stripped);
      line.BeginArray("missing");
      for (const std::string& name : r.missing) line.Add(name);
      line.EndArray().BeginArray("unexpected");
      for (const std::string& name : r.unexpected) line.Add(name);
      line.EndArray();
    }
  }
  // A checkpoint is an event people look for after a crash: make it durable now.
  session->writer()->Flush();
}

void WriteRng(probes::Session* session, std::string_view stream, std::string_view why, int64_t seed,
              uint64_t state_hash) noexcept {
  if (!session->on()) return;
  ProbeTimer timer(session);
  auto record = session->writer()->Begin(trace::rec::kRng);
  record.line().Field("stream", stream).Field("why", why).Field("seed", seed).Hex("h", state_hash);
}

}  // namespace dsdiag::probes::records
