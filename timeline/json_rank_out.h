// JsonRankOut: one rank's timeline events as Chrome Trace JSON, through the rank's spool
// (event_spool.h), which writes them once the origin and the collectives' waits are known.
// The same calls as PerfettoRankOut (perfetto_rank_out.h), so that rank_events.cc maps
// records to events once for both formats; here a rank is process `pid` = its rank, its
// threads and collective lanes are tids, and a step is one "X" event written at its step
// record.
#pragma once

#include <cstdint>
#include <string_view>

#include "timeline/event_spool.h"

namespace dsdiag::timeline {

class JsonRankOut {
 public:
  using Head = RankSpool::Head;
  using Event = RankSpool::Event;
  // A collective's complete event ("X") goes out whole, in record order.
  static constexpr bool kCollectiveEndsLate = false;

  JsonRankOut(RankSpool* spool, int pid) : spool_(spool), pid_(pid) {}

  // process_name, process_sort_index (the rank) and process_labels.
  void Process(std::string_view name, std::string_view labels) {
    Metadata("process_name", 0).Args().Field("name", name);
    Metadata("process_sort_index", 0).Args().Field("sort_index", pid_);
    Metadata("process_labels", 0).Args().Field("labels", labels);
  }
  // thread_name and thread_sort_index (the tid).
  void NameThread(int64_t tid, std::string_view name) {
    Metadata("thread_name", tid).Args().Field("name", name);
    Metadata("thread_sort_index", tid).Args().Field("sort_index", tid);
  }

  Head SpanHead(std::string_view name, std::string_view category, int64_t tid) {
    return spool_->CompleteHead(name, category, pid_, tid);
  }
  Event Span(Head head, int64_t ts_ns, int64_t dur_ns) {
    return spool_->Complete(head, ts_ns, dur_ns);
  }
  Event Span(std::string_view name, std::string_view category, int64_t tid, int64_t ts_ns,
             int64_t dur_ns) {
    return spool_->Complete(name, category, pid_, tid, ts_ns, dur_ns);
  }
  void StepBegin(std::string_view, int64_t, int64_t, int64_t) {}  // the step's "X" says it all
  Event Step(std::string_view name, int64_t /*step*/, int64_t tid, int64_t ts_ns, int64_t dur_ns) {
    return spool_->Complete(name, "step", pid_, tid, ts_ns, dur_ns);
  }
  // Process-scoped ("s":"p").
  Event Instant(std::string_view name, std::string_view category, int64_t tid, int64_t ts_ns) {
    return spool_->Instant(name, category, 'p', pid_, tid, ts_ns);
  }

  Head CounterHead(std::string_view name) { return spool_->CounterHead(name, pid_); }
  void Counter(Head head, int64_t ts_ns, double value) { spool_->Counter(head, ts_ns, value); }
  void CounterMillis(Head head, int64_t ts_ns, int64_t value_ns) {
    spool_->CounterMillis(head, ts_ns, value_ns);
  }

 private:
  // A metadata event whose args the caller fills in; closed at the end of the statement.
  struct MetadataEvent {
    Event event;
    EventArgs& Args() { return event.Args(); }
    ~MetadataEvent() { event.EndArgs(); }
  };
  MetadataEvent Metadata(std::string_view name, int64_t tid) {
    return MetadataEvent{spool_->Metadata(name, pid_, tid)};
  }

  RankSpool* spool_;
  const int pid_;
};

}  // namespace dsdiag::timeline
