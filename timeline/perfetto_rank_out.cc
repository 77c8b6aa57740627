#include "timeline/perfetto_rank_out.h"

#include <algorithm>
#include <string>

#include "timeline/perfetto_fields.h"

namespace dsdiag::timeline {

namespace pf = perfetto_fields;
namespace {

// Track uuids: a rank's own track is (rank + 1) << kChildBits; its children follow it.
constexpr int kChildBits = 20;
// Sibling order under a rank: its events first, then threads by tid (collective lanes are
// tids from kLaneTidBase), then counters.
constexpr int64_t kEventsOrder = -1;
constexpr int64_t kCountersOrder = int64_t{1} << 30;  // sibling_order_rank is an int32

}  // namespace

// ---- Args ----

size_t PerfettoRankOut::Annotations::Begin(std::string_view key) {
  const uint32_t iid = out_->InternAnnotation(key);
  const size_t annotation = pb_.Begin(pf::kEventDebugAnnotations);
  pb_.Varint(pf::kAnnotationNameIid, iid);
  return annotation;
}

PerfettoRankOut::Annotations& PerfettoRankOut::Annotations::Field(std::string_view key, int64_t v) {
  const size_t a = Begin(key);
  pb_.Int(pf::kAnnotationInt, v);
  pb_.End(a);
  return *this;
}

PerfettoRankOut::Annotations& PerfettoRankOut::Annotations::Field(std::string_view key,
                                                                  uint64_t v) {
  const size_t a = Begin(key);
  pb_.Varint(pf::kAnnotationUint, v);
  pb_.End(a);
  return *this;
}

PerfettoRankOut::Annotations& PerfettoRankOut::Annotations::Field(std::string_view key, double v) {
  const size_t a = Begin(key);
  pb_.Double(pf::kAnnotationDouble, v);
  pb_.End(a);
  return *this;
}

PerfettoRankOut::Annotations& PerfettoRankOut::Annotations::Field(std::string_view key, bool v) {
  const size_t a = Begin(key);
  pb_.Varint(pf::kAnnotationBool, v ? 1 : 0);
  pb_.End(a);
  return *this;
}

PerfettoRankOut::Annotations& PerfettoRankOut::Annotations::Field(std::string_view key,
                                                                  std::string_view v) {
  const size_t a = Begin(key);
  pb_.String(pf::kAnnotationString, v);
  pb_.End(a);
  return *this;
}

// ---- Event ----

PerfettoRankOut::Event::~Event() {
  if (out_) out_->Finish(this);
}

void PerfettoRankOut::Event::WaitOf(int64_t pg, int64_t seq) {
  wait_.emplace(pg, seq);
  // Defined now, so that their definitions go out before the deferred END does.
  out_->InternAnnotation(PerfettoTraceWriter::kWaitAnnotation);
  out_->InternAnnotation(PerfettoTraceWriter::kLastAnnotation);
  out_->InternAnnotation(PerfettoTraceWriter::kRanksAnnotation);
}

void PerfettoRankOut::Finish(Event* event) {
  CloseEvent(event->args_.pb_);
  if (!event->end_) return;
  const Event::End& end = *event->end_;
  if (event->wait_) {
    PerfettoTraceWriter::DeferredEnd deferred;
    deferred.sequence = sequence_;
    deferred.track = end.track;
    deferred.ts_ns = end.ts_ns;
    deferred.dur_ns = end.dur_ns;
    std::tie(deferred.pg, deferred.seq) = *event->wait_;
    trace_->DeferEnd(deferred);
    return;
  }
  CloseEvent(BeginEvent(end.ts_ns + end.dur_ns, pf::kTypeSliceEnd, end.track));
}

// ---- PerfettoRankOut ----

uint64_t PerfettoRankOut::RootTrack(int rank) {
  return static_cast<uint64_t>(rank + 1) << kChildBits;
}
// The last child uuid: the rank's own children count up from the first.
uint64_t PerfettoRankOut::FindingsTrack(int rank) {
  return RootTrack(rank) + (uint64_t{1} << kChildBits) - 1;
}

PerfettoRankOut::PerfettoRankOut(PerfettoTraceWriter* trace, int rank)
    : trace_(trace), sequence_(PerfettoTraceWriter::RankSequence(rank)), root_(RootTrack(rank)) {}

void PerfettoRankOut::Process(std::string_view name, std::string_view description) {
  // The sequence's first packet: it starts the interning state afresh.
  const int64_t order = static_cast<int64_t>(root_ >> kChildBits) - 1;
  trace_->Track(root_, 0, name, order, description, false, sequence_,
                pf::kSeqIncrementalStateCleared);
}

uint64_t PerfettoRankOut::NewTrack(std::string_view name, int64_t order, bool counter) {
  const uint64_t uuid = root_ + next_child_++;
  trace_->Track(uuid, root_, name, order, {}, counter);
  return uuid;
}

void PerfettoRankOut::NameThread(int64_t tid, std::string_view name) {
  for (const auto& [known, track] : threads_)
    if (known == tid) return;  // named, or made unnamed by a span first: kept as it is
  threads_.emplace_back(tid, NewTrack(name, tid));
}

uint64_t PerfettoRankOut::ThreadTrack(int64_t tid) {
  for (const auto& [known, track] : threads_)
    if (known == tid) return track;
  NameThread(tid, "thread " + std::to_string(tid));
  return threads_.back().second;
}

uint64_t PerfettoRankOut::ChildTrack(std::string_view name, int64_t order) {
  for (const auto& [known, track] : children_)
    if (known == name) return track;
  children_.emplace_back(std::string(name), NewTrack(name, order));
  return children_.back().second;
}

void PerfettoRankOut::AddInterned(uint32_t field, uint32_t iid, std::string_view name) {
  ProtoEncoder pb(&interned_);
  const size_t entry = pb.Begin(field);
  pb.Varint(pf::kInternedIid, iid);
  pb.String(pf::kInternedName, name);
  pb.End(entry);
}

uint32_t PerfettoRankOut::InternAnnotation(std::string_view key) {
  // Keys are literals and FieldKey names: the same key comes at the same address, which
  // picks where its slot is looked for (open addressing); the text decides.
  constexpr size_t kSlots = std::size(decltype(known_keys_){});
  const uint64_t address = reinterpret_cast<uintptr_t>(key.data());
  size_t slot = (address * 0x9e3779b97f4a7c15u) >> (64 - kKnownKeyBits);
  for (; known_keys_[slot].iid != 0; slot = (slot + 1) % kSlots)
    if (known_keys_[slot].name == key) return known_keys_[slot].iid;
  const uint32_t iid = trace_->AnnotationIid(key);
  if (annotation_defined_.size() <= iid) annotation_defined_.resize(iid + 1);
  if (!annotation_defined_[iid]) {
    annotation_defined_[iid] = true;
    AddInterned(pf::kInternedAnnotationNames, iid, key);
  }
  if (known_count_ < kSlots / 2) {  // half full at most, so that misses end soon
    known_keys_[slot] = KnownKey{trace_->AnnotationName(iid), iid};
    ++known_count_;
  }
  return iid;
}

uint32_t PerfettoRankOut::InternCategory(std::string_view category) {
  const auto it = std::find(categories_.begin(), categories_.end(), category);
  if (it != categories_.end()) return static_cast<uint32_t>(it - categories_.begin()) + 1;
  categories_.emplace_back(category);
  const auto iid = static_cast<uint32_t>(categories_.size());
  AddInterned(pf::kInternedCategories, iid, category);
  return iid;
}

PerfettoRankOut::Head PerfettoRankOut::SpanHead(std::string_view name, std::string_view category,
                                                int64_t tid) {
  SpanHeadIds ids;
  ids.track = ThreadTrack(tid);
  ids.category_iid = InternCategory(category);
  ids.name_iid = static_cast<uint32_t>(heads_.size()) + 1;
  AddInterned(pf::kInternedEventNames, ids.name_iid, name);
  heads_.push_back(ids);
  return static_cast<Head>(heads_.size() - 1);
}

void PerfettoRankOut::CloseEvent(ProtoEncoder pb) {
  pb.End(track_event_);
  trace_->EndPacket(interned_.view());  // names first used by this event, defined with it
  interned_.clear();
}

ProtoEncoder PerfettoRankOut::BeginEvent(int64_t ts_ns, uint64_t type, uint64_t track) {
  auto [pb, track_event] =
      trace_->BeginTrackEvent(sequence_, ts_ns, pf::kSeqNeedsIncrementalState, type, track);
  track_event_ = track_event;
  return pb;
}

PerfettoRankOut::Event PerfettoRankOut::Span(Head head, int64_t ts_ns, int64_t dur_ns) {
  const SpanHeadIds& ids = heads_[head];
  ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeSliceBegin, ids.track);
  pb.Varint(pf::kEventNameIid, ids.name_iid);
  pb.Varint(pf::kEventCategoryIids, ids.category_iid);
  return Event(this, pb, Event::End{ids.track, ts_ns, dur_ns});
}

PerfettoRankOut::Event PerfettoRankOut::Span(std::string_view name, std::string_view category,
                                             int64_t tid, int64_t ts_ns, int64_t dur_ns) {
  const uint64_t track = ThreadTrack(tid);
  ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeSliceBegin, track);
  pb.String(pf::kEventName, name);
  pb.String(pf::kEventCategories, category);
  return Event(this, pb, Event::End{track, ts_ns, dur_ns});
}

void PerfettoRankOut::StepBegin(std::string_view name, int64_t step, int64_t tid, int64_t ts_ns) {
  const uint64_t track = ThreadTrack(tid);
  const uint32_t category = InternCategory("step");
  ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeSliceBegin, track);
  pb.String(pf::kEventName, name);
  pb.Varint(pf::kEventCategoryIids, category);
  CloseEvent(pb);
  open_step_ = OpenStep{step, track};
}

PerfettoRankOut::Event PerfettoRankOut::Step(std::string_view name, int64_t step, int64_t tid,
                                             int64_t ts_ns, int64_t dur_ns) {
  uint64_t track = 0;
  if (open_step_ && open_step_->step == step) {
    track = open_step_->track;
  } else {  // no step_begin seen: the BEGIN now
    track = ThreadTrack(tid);
    const uint32_t category = InternCategory("step");
    ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeSliceBegin, track);
    pb.String(pf::kEventName, name);
    pb.Varint(pf::kEventCategoryIids, category);
    CloseEvent(pb);
  }
  open_step_.reset();
  ProtoEncoder pb = BeginEvent(ts_ns + dur_ns, pf::kTypeSliceEnd, track);
  return Event(this, pb, std::nullopt);
}

PerfettoRankOut::Event PerfettoRankOut::Instant(std::string_view name, std::string_view category,
                                                int64_t /*tid*/, int64_t ts_ns) {
  const uint64_t track = ChildTrack("events", kEventsOrder);
  ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeInstant, track);
  pb.String(pf::kEventName, name);
  pb.String(pf::kEventCategories, category);
  return Event(this, pb, std::nullopt);
}

PerfettoRankOut::Head PerfettoRankOut::CounterHead(std::string_view name) {
  counters_.push_back(
      NewTrack(name, kCountersOrder + static_cast<int64_t>(counters_.size()), true));
  return static_cast<Head>(counters_.size() - 1);
}

void PerfettoRankOut::Counter(Head head, int64_t ts_ns, double value) {
  ProtoEncoder pb = BeginEvent(ts_ns, pf::kTypeCounter, counters_[head]);
  pb.Double(pf::kEventDoubleCounterValue, value);
  CloseEvent(pb);
}

void PerfettoRankOut::CounterMillis(Head head, int64_t ts_ns, int64_t value_ns) {
  Counter(head, ts_ns, static_cast<double>(value_ns) / 1e6);
}

}  // namespace dsdiag::timeline
