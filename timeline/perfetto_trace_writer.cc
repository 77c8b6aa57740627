#include "timeline/perfetto_trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "timeline/perfetto_fields.h"

namespace dsdiag::timeline {

namespace pf = perfetto_fields;
namespace {

// Whole packets go to the file (on the background writer's thread) in blocks this large.
constexpr size_t kOutputBlock = size_t{1} << 20;

// A deferred END's fields, as varints after a byte that says how many bytes they take.
constexpr size_t kDeferredFields = 6;
constexpr size_t kMaxDeferredEntry = 1 + kDeferredFields * ProtoEncoder::kMaxVarint;

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

PerfettoTraceWriter::PerfettoTraceWriter(std::ostream* out, std::string scratch_dir,
                                         size_t deferred_budget)
    : out_(out), scratch_dir_(std::move(scratch_dir)), deferred_budget_(deferred_budget) {
  output_.Reserve(kOutputBlock + (size_t{64} << 10));
  writes_ = std::make_unique<BackgroundWrite>(out_, kOutputBlock + (size_t{64} << 10));
}

PerfettoTraceWriter::~PerfettoTraceWriter() {
  writes_.reset();  // waits for the write in flight
  if (deferred_fd_ >= 0) close(deferred_fd_);
}

ProtoEncoder PerfettoTraceWriter::BeginPacket(uint32_t sequence, int64_t ts_ns,
                                              uint64_t sequence_flags) {
  if (packet_open_) throw std::logic_error("a Perfetto packet begun inside another");
  packet_open_ = true;
  // The head through one Room: it is written for every event.
  char* p = ProtoEncoder::StartMessage(output_.Room(kMaxPacketHead), pf::kTracePacket);
  packet_mark_ = static_cast<size_t>(p - output_.data());
  if (ts_ns >= 0) p = ProtoEncoder::PutVarintField(p, pf::kTimestamp, static_cast<uint64_t>(ts_ns));
  if (sequence != 0) p = ProtoEncoder::PutVarintField(p, pf::kTrustedPacketSequenceId, sequence);
  if (sequence_flags != 0) p = ProtoEncoder::PutVarintField(p, pf::kSequenceFlags, sequence_flags);
  output_.Commit(p);
  return ProtoEncoder(&output_);
}

PerfettoTraceWriter::OpenEvent PerfettoTraceWriter::BeginTrackEvent(uint32_t sequence,
                                                                    int64_t ts_ns,
                                                                    uint64_t sequence_flags,
                                                                    uint64_t type, uint64_t track) {
  ProtoEncoder pb = BeginPacket(sequence, ts_ns, sequence_flags);
  char* p = ProtoEncoder::StartMessage(output_.Room(kMaxEventHead), pf::kTrackEvent);
  const auto mark = static_cast<size_t>(p - output_.data());
  p = ProtoEncoder::PutVarintField(p, pf::kEventType, type);
  p = ProtoEncoder::PutVarintField(p, pf::kEventTrackUuid, track);
  output_.Commit(p);
  return OpenEvent{pb, mark};
}

void PerfettoTraceWriter::EndPacket(std::string_view interned_data) {
  ProtoEncoder pb(&output_);
  if (!interned_data.empty()) {
    const size_t data = pb.Begin(pf::kInternedData);
    pb.Raw(interned_data);
    pb.End(data);
  }
  pb.End(packet_mark_);
  packet_open_ = false;
  ++packets_;
  if (output_.size() >= kOutputBlock) writes_->Hand(&output_);
}

void PerfettoTraceWriter::DeferEnd(const DeferredEnd& end) {
  char* start = deferred_.Room(kMaxDeferredEntry);
  char* p = start + 1;
  for (const uint64_t v : {uint64_t{end.sequence}, end.track, ZigZag(end.ts_ns), ZigZag(end.dur_ns),
                           ZigZag(end.pg), ZigZag(end.seq)}) {
    p = ProtoEncoder::PutVarint(p, v);
  }
  *start = static_cast<char>(p - start - 1);
  deferred_.Commit(p);
  if (deferred_.size() >= deferred_budget_) FlushDeferred();
}

void PerfettoTraceWriter::FlushDeferred() {
  if (deferred_fd_ < 0) {
    std::string pattern = (scratch_dir_.empty() ? std::string(".") : scratch_dir_) +
                          "/.dsdiag-timeline-collectives-XXXXXX";
    deferred_fd_ = mkstemp(pattern.data());
    if (deferred_fd_ < 0) {
      throw std::runtime_error("cannot make a temporary file in '" + scratch_dir_ +
                               "': " + std::strerror(errno));
    }
    unlink(pattern.c_str());  // gone with the descriptor, whatever happens
  }
  size_t done = 0;
  while (done < deferred_.size()) {
    const ssize_t n = pwrite(deferred_fd_, deferred_.data() + done, deferred_.size() - done,
                             static_cast<off_t>(deferred_file_size_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::runtime_error(std::string("cannot write the timeline's temporary file: ") +
                               std::strerror(n < 0 ? errno : ENOSPC));
    }
    done += static_cast<size_t>(n);
  }
  deferred_file_size_ += deferred_.size();
  deferred_.clear();
}

void PerfettoTraceWriter::WriteDeferred(const CollectiveIndex& collectives) {
  if (deferred_fd_ >= 0) {
    // The file holds a budget's worth of entries at a time: read it back in pieces, carrying
    // a piece's unfinished last entry over to the next. What is still in memory came last.
    EventBuffer chunk;
    const size_t piece = std::max(deferred_budget_, kMaxDeferredEntry);
    for (uint64_t offset = 0; offset < deferred_file_size_;) {
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(piece, deferred_file_size_ - offset));
      char* p = chunk.Room(want);
      size_t done = 0;
      while (done < want) {
        const ssize_t n =
            pread(deferred_fd_, p + done, want - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("cannot read the timeline's temporary file back");
        done += static_cast<size_t>(n);
      }
      chunk.Commit(p + want);
      offset += want;
      const size_t used = ReplayDeferred(chunk.view(), collectives);
      const size_t carried = chunk.size() - used;
      std::memmove(chunk.data(), chunk.data() + used, carried);
      chunk.clear();
      chunk.Commit(chunk.data() + carried);
    }
    if (chunk.size() != 0) throw std::runtime_error("the timeline's temporary file ends mid-entry");
  }
  ReplayDeferred(deferred_.view(), collectives);
  deferred_.Release();
}

size_t PerfettoTraceWriter::ReplayDeferred(std::string_view entries,
                                           const CollectiveIndex& collectives) {
  const uint32_t names[] = {AnnotationIid(kWaitAnnotation), AnnotationIid(kLastAnnotation),
                            AnnotationIid(kRanksAnnotation)};
  const char* p = entries.data();
  const char* const end = p + entries.size();
  while (p < end && p + 1 + static_cast<unsigned char>(*p) <= end) {
    const char* const next = p + 1 + static_cast<unsigned char>(*p);
    uint64_t f[kDeferredFields];
    const char* q = p + 1;
    for (uint64_t& v : f) {
      q = q ? ProtoEncoder::GetVarint(q, next, &v) : nullptr;
    }
    if (q != next) throw std::runtime_error("the timeline's temporary file holds a bad entry");
    p = next;
    const int64_t ts = UnZigZag(f[2]), dur = UnZigZag(f[3]);
    auto [pb, event] = BeginTrackEvent(static_cast<uint32_t>(f[0]), ts + dur,
                                       pf::kSeqNeedsIncrementalState, pf::kTypeSliceEnd, f[1]);
    if (const CollectiveIndex::Entry* c = collectives.Find(UnZigZag(f[4]), UnZigZag(f[5]))) {
      // As the JSON's: the last enter minus this rank's, clamped to [0, dur].
      const int64_t values[] = {std::clamp(c->last_enter - ts, int64_t{0}, dur), c->last_rank,
                                c->ranks};
      for (size_t i = 0; i < std::size(values); ++i) {
        const size_t a = pb.Begin(pf::kEventDebugAnnotations);
        pb.Varint(pf::kAnnotationNameIid, names[i]);
        pb.Int(pf::kAnnotationInt, values[i]);
        pb.End(a);
      }
    }
    pb.End(event);
    EndPacket();
  }
  return static_cast<size_t>(p - entries.data());
}

void PerfettoTraceWriter::Track(uint64_t uuid, uint64_t parent, std::string_view name,
                                int64_t order, std::string_view description, bool counter,
                                uint32_t sequence, uint64_t sequence_flags) {
  ProtoEncoder pb = BeginPacket(sequence, -1, sequence_flags);
  const size_t track = pb.Begin(pf::kTrackDescriptor);
  pb.Varint(pf::kTrackUuid, uuid);
  if (parent != 0) pb.Varint(pf::kTrackParentUuid, parent);
  pb.String(pf::kTrackName, name);
  if (!description.empty()) pb.String(pf::kTrackDescription, description);
  if (counter) pb.End(pb.Begin(pf::kTrackCounter));
  pb.Varint(pf::kTrackChildOrdering, pf::kChildOrderingExplicit);
  pb.Int(pf::kTrackSiblingOrderRank, order);
  pb.End(track);
  EndPacket();
}

uint32_t PerfettoTraceWriter::AnnotationIid(std::string_view key) {
  // The slot is picked by the key's address and trusted only when its text matches.
  const auto address = reinterpret_cast<uintptr_t>(key.data());
  uint32_t& cached = key_cache_[(address ^ (address >> 7)) % std::size(key_cache_)];
  if (cached != 0 && annotation_names_[cached - 1] == key) return cached;
  auto it = annotation_iids_.find(key);
  if (it == annotation_iids_.end()) {
    annotation_names_.emplace_back(key);
    it = annotation_iids_
             .emplace(annotation_names_.back(), static_cast<uint32_t>(annotation_names_.size()))
             .first;
  }
  cached = it->second;
  return cached;
}

void PerfettoTraceWriter::Finish() {
  if (output_.size() != 0) writes_->Hand(&output_);
  writes_->Wait();
  out_->flush();
}

}  // namespace dsdiag::timeline
