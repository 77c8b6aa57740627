#include "timeline/chrome_trace_writer.h"

#include <algorithm>

namespace dsdiag::timeline {

ChromeTraceWriter::Event::~Event() {
  if (!writer_) return;
  writer_->buffer_.Append(kEnd);
  writer_->Committed();
}

ChromeTraceWriter::ChromeTraceWriter(std::ostream* out) : out_(out) {
  buffer_.Reserve(kBufferBytes);
  buffer_.Append("{\"traceEvents\":[\n");
}

void ChromeTraceWriter::AppendMicros(std::string* out, int64_t ns) {
  char buf[kMaxMicrosChars];
  out->append(buf, PutMicros(buf, ns));
}

int64_t ChromeTraceWriter::ToGrid(int64_t ns) {
  // Floor division that also holds for negative times.
  const int64_t shifted = ns + kGridNs / 2;
  int64_t q = shifted / kGridNs;
  if (shifted % kGridNs != 0 && shifted < 0) --q;
  return q * kGridNs;
}

void ChromeTraceWriter::AppendHead(EventBuffer* out, char phase, std::string_view name, int pid,
                                   int64_t tid) {
  static constexpr std::string_view kPhase = "{\"ph\":\"";
  static constexpr std::string_view kName = "\",\"name\":";
  static constexpr std::string_view kPid = ",\"pid\":";
  static constexpr std::string_view kTid = ",\"tid\":";
  char* p = out->Room(kPhase.size() + 1 + kName.size() + QuotedRoom(name.size()) + kPid.size() +
                      kMaxIntChars + kTid.size() + kMaxIntChars);
  p = std::copy(kPhase.begin(), kPhase.end(), p);
  *p++ = phase;
  p = std::copy(kName.begin(), kName.end(), p);
  p = PutQuoted(p, name);
  p = std::copy(kPid.begin(), kPid.end(), p);
  p = PutInt(p, pid);
  p = std::copy(kTid.begin(), kTid.end(), p);
  out->Commit(PutInt(p, tid));
}

ChromeTraceWriter::Event ChromeTraceWriter::Start(char phase, std::string_view name, int pid,
                                                  int64_t tid) {
  // Events are separated by a comma at the start of the next one, so the array closes
  // cleanly after whichever event came last.
  AppendHead(BeginEvent(), phase, name, pid, tid);
  return Event(this);
}

void ChromeTraceWriter::AppendCompleteHead(EventBuffer* out, std::string_view name,
                                           std::string_view category, int pid, int64_t tid) {
  AppendHead(out, 'X', name, pid, tid);
  out->Append(kCategory);
  out->Quoted(category);
  out->Append(kTs);
}

void ChromeTraceWriter::AppendCounterHead(EventBuffer* out, std::string_view name, int pid) {
  AppendHead(out, 'C', name, pid, 0);
  out->Append(kTs);
}

ChromeTraceWriter::Event ChromeTraceWriter::Complete(std::string_view name,
                                                     std::string_view category, int pid,
                                                     int64_t tid, int64_t ts_ns, int64_t dur_ns) {
  AppendCompleteHead(BeginEvent(), name, category, pid, tid);
  const int64_t start = ToGrid(ts_ns);
  buffer_.Micros(start);
  buffer_.Append(kDur);
  buffer_.Micros(ToGrid(ts_ns + dur_ns) - start);
  return Event(this);
}

ChromeTraceWriter::Event ChromeTraceWriter::Instant(std::string_view name,
                                                    std::string_view category, char scope, int pid,
                                                    int64_t tid, int64_t ts_ns) {
  Event e = Start('i', name, pid, tid);
  buffer_.Append(kCategory);
  buffer_.Quoted(category);
  buffer_.Append(kScope);
  buffer_.Quoted(std::string_view(&scope, 1));
  buffer_.Append(kTs);
  buffer_.Micros(ToGrid(ts_ns));
  return e;
}

void ChromeTraceWriter::Counter(std::string_view name, int pid, int64_t ts_ns, double value) {
  AppendCounterHead(BeginEvent(), name, pid);
  buffer_.Micros(ToGrid(ts_ns));
  buffer_.Append(kCounterValue);
  buffer_.Double(value);
  buffer_.Append(kCounterEnd);
  Committed();
}

ChromeTraceWriter::Event ChromeTraceWriter::Metadata(std::string_view name, int pid, int64_t tid) {
  // A ts of 0 on metadata: the format does not need one, some importers expect every
  // event to carry it.
  Event e = Start('M', name, pid, tid);
  buffer_.Append(kTs);
  buffer_.Append('0');
  return e;
}

EventBuffer* ChromeTraceWriter::BeginEvent() {
  if (events_ > 0) buffer_.Append(',');
  ++events_;
  return &buffer_;
}

void ChromeTraceWriter::Committed() {
  if (buffer_.size() < kFlushBytes) return;
  writes_.Hand(&buffer_);  // written on the writes' thread while the next one fills
}

void ChromeTraceWriter::Finish(const trace::JsonValue& other_data) {
  // No "displayTimeUnit": older Perfetto versions took it as the unit of ts.
  std::string tail = "],\n\"otherData\":";
  other_data.AppendJson(&tail);
  tail.append("}\n");
  buffer_.Append(tail);
  writes_.Hand(&buffer_);
  writes_.Wait();
  out_->flush();
}

}  // namespace dsdiag::timeline
