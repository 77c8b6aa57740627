// PerfettoRankOut: one rank's timeline events as Perfetto packets, on the rank's own packet
// sequence of the PerfettoTraceWriter (which says how the timeline maps onto tracks). The
// same calls as JsonRankOut (json_rank_out.h), so that rank_events.cc maps records to events
// once for both formats.
//
// Names are interned per sequence: a track's event name and category once per span head,
// an annotation name the first time the rank uses it; the definitions go out in the packet
// of the event that first needs them, as the Perfetto SDK writes them.
//
// A step is a SLICE_BEGIN at its step_begin record and a SLICE_END at its step record,
// which carries the step's args (trace_processor adds an END's annotations to its slice):
// so the step's BEGIN precedes the BEGINs of its phases, which start at the same time.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "timeline/event_buffer.h"
#include "timeline/perfetto_trace_writer.h"
#include "timeline/proto_encoder.h"

namespace dsdiag::timeline {

class PerfettoRankOut {
 public:
  using Head = uint32_t;
  // A collective's SLICE_END goes out at the end of the pass (perfetto_trace_writer.h).
  static constexpr bool kCollectiveEndsLate = true;

  // The annotations of the event being built (its TrackEvent's debug_annotations).
  class Annotations {
   public:
    Annotations& Field(std::string_view key, int64_t v);
    Annotations& Field(std::string_view key, int v) { return Field(key, int64_t{v}); }
    Annotations& Field(std::string_view key, uint64_t v);
    Annotations& Field(std::string_view key, double v);
    Annotations& Field(std::string_view key, bool v);
    Annotations& Field(std::string_view key, std::string_view v);
    Annotations& Field(std::string_view key, const char* v) {
      return Field(key, std::string_view(v));
    }
    Annotations& Field(std::string_view key, const std::string& v) {
      return Field(key, std::string_view(v));
    }
    Annotations& Null(std::string_view) { return *this; }  // an absent value: no annotation

   private:
    friend class PerfettoRankOut;
    Annotations(PerfettoRankOut* out, ProtoEncoder pb) : out_(out), pb_(pb) {}
    size_t Begin(std::string_view key);
    PerfettoRankOut* out_;
    ProtoEncoder pb_;
  };

  // One event being built; it goes out when it goes out of scope (with its SLICE_END, for a
  // span), like ChromeTraceWriter's.
  class Event {
   public:
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept
        : out_(other.out_), args_(other.args_), end_(other.end_), wait_(other.wait_) {
      other.out_ = nullptr;
    }
    ~Event();
    Annotations& Args() { return args_; }
    void EndArgs() {}
    // A collective's: its wait, last and ranks are added when the pass is over.
    void WaitOf(int64_t pg, int64_t seq);

   private:
    friend class PerfettoRankOut;
    struct End {
      uint64_t track = 0;
      int64_t ts_ns = 0, dur_ns = 0;
    };
    Event(PerfettoRankOut* out, ProtoEncoder pb, std::optional<End> end)
        : out_(out), args_(out, pb), end_(end) {}
    PerfettoRankOut* out_;  // null once moved from
    Annotations args_;
    std::optional<End> end_;                           // a span's: its SLICE_END follows
    std::optional<std::pair<int64_t, int64_t>> wait_;  // (pg, seq) when deferred
  };

  PerfettoRankOut(PerfettoTraceWriter* trace, int rank);

  // The rank's track ("rank R (host)") and its description; first, once.
  void Process(std::string_view name, std::string_view description);
  void NameThread(int64_t tid, std::string_view name);

  Head SpanHead(std::string_view name, std::string_view category, int64_t tid);
  Event Span(Head head, int64_t ts_ns, int64_t dur_ns);
  Event Span(std::string_view name, std::string_view category, int64_t tid, int64_t ts_ns,
             int64_t dur_ns);
  // A step opens at its step_begin and closes at Step, whose args it gets.
  void StepBegin(std::string_view name, int64_t step, int64_t tid, int64_t ts_ns);
  Event Step(std::string_view name, int64_t step, int64_t tid, int64_t ts_ns, int64_t dur_ns);
  // On the rank's "events" track.
  Event Instant(std::string_view name, std::string_view category, int64_t tid, int64_t ts_ns);

  Head CounterHead(std::string_view name);
  void Counter(Head head, int64_t ts_ns, double value);
  void CounterMillis(Head head, int64_t ts_ns, int64_t value_ns);

  // The uuid of rank R's own track, and of its "findings" track (perfetto_findings.h).
  static uint64_t RootTrack(int rank);
  static uint64_t FindingsTrack(int rank);

 private:
  struct SpanHeadIds {
    uint64_t track = 0;
    uint32_t name_iid = 0, category_iid = 0;
  };
  uint64_t ThreadTrack(int64_t tid);
  uint64_t NewTrack(std::string_view name, int64_t order, bool counter = false);
  uint64_t ChildTrack(std::string_view name, int64_t order);  // made on first use
  uint32_t InternAnnotation(std::string_view key);
  uint32_t InternCategory(std::string_view category);
  void AddInterned(uint32_t field, uint32_t iid, std::string_view name);
  // An event's packet: begun with its type and track, closed once its fields are in (with
  // any names it interned).
  ProtoEncoder BeginEvent(int64_t ts_ns, uint64_t type, uint64_t track);
  void CloseEvent(ProtoEncoder pb);
  void Finish(Event* event);

  PerfettoTraceWriter* trace_;
  const uint32_t sequence_;
  const uint64_t root_;
  uint32_t next_child_ = 1;
  size_t track_event_ = 0;  // where the event being built has its TrackEvent
  std::vector<std::pair<int64_t, uint64_t>> threads_;       // tid -> track
  std::vector<std::pair<std::string, uint64_t>> children_;  // named child tracks
  std::vector<SpanHeadIds> heads_;
  std::vector<uint64_t> counters_;        // Head -> counter track
  std::vector<std::string> categories_;   // iid - 1 -> category
  std::vector<bool> annotation_defined_;  // by the writer's iid
  struct KnownKey {
    std::string_view name;  // the writer's copy
    uint32_t iid = 0;
  };
  static constexpr int kKnownKeyBits = 6;
  std::array<KnownKey, 1 << kKnownKeyBits> known_keys_;  // names defined, by key address
  size_t known_count_ = 0;
  EventBuffer interned_;  // definitions for the packet being built
  struct OpenStep {
    int64_t step = 0;
    uint64_t track = 0;
  };
  std::optional<OpenStep> open_step_;
};

}  // namespace dsdiag::timeline
