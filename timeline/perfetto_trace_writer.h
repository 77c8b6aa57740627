// PerfettoTraceWriter: `dsdiag timeline --format perfetto`'s output file, a Perfetto
// protobuf trace (protos/perfetto/trace/trace.proto) that ui.perfetto.dev and
// trace_processor open natively. Smaller than the JSON and cheaper to write: numbers go out
// as varints and doubles as their 8 bytes, names once per rank (interned), and no event
// waits for the end of the pass except the collectives.
//
// How the timeline maps onto it (perfetto_rank_out.h writes a rank's part):
//   - each rank is a top-level track "rank R (host)" (its description: the clock offset),
//     with a child track per thread ("main", named threads), per collectives lane, per
//     counter, and "events" for the rank's instants;
//   - each rank writes on a packet sequence of its own (trusted_packet_sequence_id R + 2),
//     which scopes the names it interns; findings use sequence 1 and no interning;
//   - times are rank 0's wall clock in ns, absolute (Perfetto shows them from the trace's
//     start): no origin to wait for, unlike the JSON;
//   - spans are SLICE_BEGIN/SLICE_END pairs on their track, their args debug annotations.
//
// Packets are written in the order records arrive, rank after rank within each window of
// steps; trace_processor sorts a trace file by time before importing it, and keeps packets of
// equal time in file order, so each span's BEGIN goes out before those of the spans nested
// in it (a step's BEGIN at its step_begin record) and its END after theirs. A collective's
// `wait` (rank_events.h) is known only once every rank is read, so its SLICE_END (~20
// bytes kept) waits aside — in memory up to a budget, then in an unlinked temporary file —
// and goes out at the end with the wait as its annotations. Its lane (rank_events.cc) is
// then one no other collective starts on at the time it ends: sorted by time, an END
// written late would otherwise close the next slice instead of its own.
//
// Memory: the output buffer, the deferred ENDs' buffer, and per rank its interning
// state and track table (a few dozen entries).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "timeline/background_write.h"
#include "timeline/collective_index.h"
#include "timeline/event_buffer.h"
#include "timeline/proto_encoder.h"

namespace dsdiag::timeline {

class PerfettoTraceWriter {
 public:
  // The deferred collectives' temporary file goes in `scratch_dir` when they outgrow
  // `deferred_budget` bytes. Throws std::runtime_error when that file cannot be made.
  PerfettoTraceWriter(std::ostream* out, std::string scratch_dir,
                      size_t deferred_budget = kDefaultDeferredBudget);
  ~PerfettoTraceWriter();
  PerfettoTraceWriter(const PerfettoTraceWriter&) = delete;
  PerfettoTraceWriter& operator=(const PerfettoTraceWriter&) = delete;

  static constexpr size_t kDefaultDeferredBudget = size_t{4} << 20;

  // ---- Packets: each is built in place in the output buffer, one at a time ----
  // Starts a packet on `sequence` (0: none) at `ts_ns` (< 0: no timestamp); returns the
  // encoder writing into it. The caller closes nested messages it opens, and makes no other
  // packet (a track) before EndPacket.
  ProtoEncoder BeginPacket(uint32_t sequence, int64_t ts_ns, uint64_t sequence_flags = 0);
  // A packet with a TrackEvent of `type` on `track` begun in it: the caller adds the
  // event's fields, then ends the TrackEvent (pb.End(track_event)) and the packet.
  struct OpenEvent {
    ProtoEncoder pb;
    size_t track_event;  // the TrackEvent's mark
  };
  OpenEvent BeginTrackEvent(uint32_t sequence, int64_t ts_ns, uint64_t sequence_flags,
                            uint64_t type, uint64_t track);
  // Closes the packet begun last, with `interned_data` (InternedData's fields: the names
  // its sequence defines in it) as its interned_data, which readers take before its event.
  void EndPacket(std::string_view interned_data = {});
  // A collective's SLICE_END, kept for the end of the pass: its wait (rank_events.h), the
  // time from its start to the last rank's enter, is known only once every rank is read.
  // WriteDeferred writes it with wait/last/ranks as its annotations, which trace_processor
  // adds to the slice the END closes.
  struct DeferredEnd {
    uint32_t sequence = 0;
    uint64_t track = 0;
    int64_t ts_ns = 0, dur_ns = 0;  // the collective's start and duration
    int64_t pg = 0, seq = 0;
  };
  void DeferEnd(const DeferredEnd& end);

  // Writes every deferred END, in the order they came. Throws std::runtime_error when the
  // temporary file cannot be read back.
  void WriteDeferred(const CollectiveIndex& collectives);

  // A track descriptor packet: `parent` 0 for a top-level track. `order`: its rank among
  // its siblings; `counter`: a counter track.
  void Track(uint64_t uuid, uint64_t parent, std::string_view name, int64_t order,
             std::string_view description = {}, bool counter = false, uint32_t sequence = 0,
             uint64_t sequence_flags = 0);

  // Annotation names are interned per sequence but numbered once for the whole file: the
  // iid of `key` (>= 1), which a sequence defines the first time it uses it.
  uint32_t AnnotationIid(std::string_view key);
  std::string_view AnnotationName(uint32_t iid) const { return annotation_names_[iid - 1]; }

  // Flushes what is buffered and waits for the file; then check the stream.
  void Finish();
  int64_t packets() const { return packets_; }

  // The annotations a deferred END gets; a rank defines them on its sequence (interns
  // them) before it defers its first END.
  static constexpr std::string_view kWaitAnnotation = "wait", kLastAnnotation = "last",
                                    kRanksAnnotation = "ranks";

  // Sequence 1 carries the events whose names are inline (findings, a Flight Recorder
  // run's timeline); rank R uses R + 2.
  static constexpr uint32_t kInlineNamesSequence = 1;
  static uint32_t RankSequence(int rank) { return static_cast<uint32_t>(rank) + 2; }

 private:
  void Emit(std::string_view bytes);
  void FlushDeferred();
  // Replays the whole entries at the front of `entries`; returns how many bytes they took.
  size_t ReplayDeferred(std::string_view entries, const CollectiveIndex& collectives);

  std::ostream* out_;
  const std::string scratch_dir_;
  const size_t deferred_budget_;
  static constexpr size_t kMaxPacketHead =
      ProtoEncoder::kMaxVarint + 1 + 3 * ProtoEncoder::kMaxVarintField;
  static constexpr size_t kMaxEventHead =
      ProtoEncoder::kMaxVarint + 1 + 2 * ProtoEncoder::kMaxVarintField;
  EventBuffer output_;  // whole packets for the file, and the one being built
  size_t packet_mark_ = 0;
  bool packet_open_ = false;
  std::unique_ptr<BackgroundWrite> writes_;
  EventBuffer deferred_;  // deferred ENDs, each a length byte and its fields as varints
  int deferred_fd_ = -1;
  uint64_t deferred_file_size_ = 0;
  int64_t packets_ = 0;

  // Annotation names: the iid is the index + 1. A small cache picked by the key's address
  // (keys are literals and FieldKey names) spares hashing the string per annotation.
  std::deque<std::string> annotation_names_;  // stable: annotation_iids_ views them
  std::unordered_map<std::string_view, uint32_t> annotation_iids_;
  uint32_t key_cache_[256] = {};
};

}  // namespace dsdiag::timeline
