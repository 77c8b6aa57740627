// ChromeTraceWriter: streams a Chrome Trace Event JSON file (the "JSON Object Format" that
// Perfetto UI, chrome://tracing and speedscope load) one event at a time.
//
//   {"traceEvents":[
//   {"ph":"X","name":"step 3","cat":"step","pid":1,"tid":0,"ts":5000.125,"dur":41000,"args":{..}}
//   ,{"ph":"C","name":"loss","pid":1,"tid":0,"ts":5000.125,"args":{"value":2.31}}
//   ],"otherData":{..}}
//
// Events go to a buffer that is written out every megabyte, so memory stays flat however
// many events a run makes.
//
// Times are given in ns and written in microseconds, the unit of the format, rounded to a
// grid of 1/8 us (125 ns) — span ends are rounded, then dur = end - start. Why: viewers
// compute a span's end as ts + dur in binary floating point. With ns decimals
// ("41981.2" + "1281.877" = 43263.077000000005) a phase would end after the next one starts
// and speedscope / catapult would see it overlap instead of follow; multiples of 1/8 are
// exact in binary and in 3 decimals, so every viewer's ts + dur is exactly our end and spans
// that touch or nest in the trace touch or nest on screen (Perfetto's ts * 1000 is an exact
// integer too). 125 ns is far below what a step / phase / collective timeline resolves, and
// below the uncertainty of the clock offsets between ranks. Args keep exact ns values.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "timeline/background_write.h"
#include "timeline/event_buffer.h"
#include "trace/json_value.h"

namespace dsdiag::timeline {

class ChromeTraceWriter {
 public:
  // One event being built; its fields are complete when it goes out of scope.
  class Event {
   public:
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&& other) noexcept : writer_(other.writer_), args_(other.args_) {
      other.writer_ = nullptr;
    }
    ~Event();
    // Opens the "args" object; EndArgs() closes it.
    EventArgs& Args() {
      writer_->buffer_.Append(kArgsOpen);
      return args_;
    }
    void EndArgs() { writer_->buffer_.Append('}'); }

   private:
    friend class ChromeTraceWriter;
    explicit Event(ChromeTraceWriter* writer) : writer_(writer), args_(&writer->buffer_) {}
    ChromeTraceWriter* writer_;  // null once moved from
    EventArgs args_;
  };

  explicit ChromeTraceWriter(std::ostream* out);
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  // "ph":"X": a span [ts, ts + dur].
  Event Complete(std::string_view name, std::string_view category, int pid, int64_t tid,
                 int64_t ts_ns, int64_t dur_ns);
  // "ph":"i": scope 't' (thread), 'p' (process) or 'g' (global).
  Event Instant(std::string_view name, std::string_view category, char scope, int pid, int64_t tid,
                int64_t ts_ns);
  // "ph":"C": one sample of counter `name` of process `pid`, args {"value": value}.
  void Counter(std::string_view name, int pid, int64_t ts_ns, double value);
  // "ph":"M": process_name, process_sort_index, process_labels, thread_name,
  // thread_sort_index (the caller adds the args).
  Event Metadata(std::string_view name, int pid, int64_t tid);

  // One event formatted elsewhere (event_spool.h): a JSON object and its '\n', appended by
  // the caller to the returned buffer between the two calls.
  EventBuffer* BeginEvent();
  void EndEvent() { Committed(); }

  // Closes the event array and the top-level object, writing `other_data` as "otherData",
  // and flushes. Must be called once; nothing may be written after.
  void Finish(const trace::JsonValue& other_data);

  int64_t events() const { return events_; }
  // Whether every write so far succeeded.
  bool ok() const { return static_cast<bool>(*out_); }

  // The fixed parts of an event, shared with the spool (event_spool.h) so that both spell
  // an event alike. Head: `{"ph":"X","name":"..","pid":P,"tid":T`; then, per phase, the
  // members below in this order; then the args, if any, and kEnd.
  static void AppendHead(EventBuffer* out, char phase, std::string_view name, int pid, int64_t tid);
  // A span's text up to its ts: the head, its category and `,"ts":`.
  static void AppendCompleteHead(EventBuffer* out, std::string_view name, std::string_view category,
                                 int pid, int64_t tid);
  // A counter sample's text up to its ts.
  static void AppendCounterHead(EventBuffer* out, std::string_view name, int pid);
  static constexpr std::string_view kCategory = ",\"cat\":";
  static constexpr std::string_view kScope = ",\"s\":";
  static constexpr std::string_view kTs = ",\"ts\":";
  static constexpr std::string_view kDur = ",\"dur\":";
  static constexpr std::string_view kArgsOpen = ",\"args\":{";
  static constexpr std::string_view kCounterValue = ",\"args\":{\"value\":";
  static constexpr std::string_view kEnd = "}\n";
  static constexpr std::string_view kCounterEnd = "}}\n";  // the args' and the event's

  // Appends ns as exact microseconds: 1234567 -> "1234.567", -5 -> "-0.005", 2000 -> "2".
  static void AppendMicros(std::string* out, int64_t ns);
  // The nearest multiple of kGridNs.
  static int64_t ToGrid(int64_t ns);
  static constexpr int64_t kGridNs = 125;

 private:
  Event Start(char phase, std::string_view name, int pid, int64_t tid);
  void Committed();

  static constexpr size_t kFlushBytes = size_t{1} << 20;
  static constexpr size_t kBufferBytes = kFlushBytes + 4096;
  std::ostream* out_;
  EventBuffer buffer_;
  int64_t events_ = 0;
  BackgroundWrite writes_{out_, kBufferBytes};  // last: gone (its write done) before buffer_
};

}  // namespace dsdiag::timeline
