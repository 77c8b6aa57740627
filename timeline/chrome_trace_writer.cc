#include "timeline/chrome_trace_writer.h"

#include <charconv>

namespace dsdiag::timeline {

ChromeTraceWriter::Event::~Event() {
  if (!writer_) return;
  line_.Finish();
  writer_->Committed();
}

ChromeTraceWriter::ChromeTraceWriter(std::ostream* out) : out_(out) {
  buffer_.reserve(kFlushBytes + 4096);
  buffer_ = "{\"traceEvents\":[\n";
}

void ChromeTraceWriter::AppendMicros(std::string* out, int64_t ns) {
  // |INT64_MIN| has no int64 spelling: go through uint64.
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out->push_back('-');
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, magnitude / 1000);
  out->append(buf, r.ptr);
  const auto fraction = static_cast<unsigned>(magnitude % 1000);
  if (fraction == 0) return;
  const char digits[4] = {'.', static_cast<char>('0' + fraction / 100),
                          static_cast<char>('0' + fraction / 10 % 10),
                          static_cast<char>('0' + fraction % 10)};
  size_t n = 4;
  while (digits[n - 1] == '0') --n;  // "1.5", not "1.500"
  out->append(digits, n);
}

int64_t ChromeTraceWriter::ToGrid(int64_t ns) {
  // Floor division that also holds for negative times.
  const int64_t shifted = ns + kGridNs / 2;
  int64_t q = shifted / kGridNs;
  if (shifted % kGridNs != 0 && shifted < 0) --q;
  return q * kGridNs;
}

trace::JsonLine ChromeTraceWriter::Start(char phase, std::string_view name, int pid, int64_t tid) {
  // Events are separated by a comma at the start of the next one, so the array closes
  // cleanly after whichever event came last.
  if (events_ > 0) buffer_.push_back(',');
  ++events_;
  trace::JsonLine line(&buffer_);
  line.Field("ph", std::string_view(&phase, 1))
      .Field("name", name)
      .Field("pid", pid)
      .Field("tid", tid);
  return line;
}

void ChromeTraceWriter::MicrosField(trace::JsonLine* line, std::string_view key, int64_t ns) {
  number_.clear();
  AppendMicros(&number_, ns);
  line->Raw(key, number_);
}

ChromeTraceWriter::Event ChromeTraceWriter::Complete(std::string_view name,
                                                     std::string_view category, int pid,
                                                     int64_t tid, int64_t ts_ns, int64_t dur_ns) {
  Event e(this, Start('X', name, pid, tid));
  e.line_.Field("cat", category);
  const int64_t start = ToGrid(ts_ns);
  MicrosField(&e.line_, "ts", start);
  MicrosField(&e.line_, "dur", ToGrid(ts_ns + dur_ns) - start);
  return e;
}

ChromeTraceWriter::Event ChromeTraceWriter::Instant(std::string_view name,
                                                    std::string_view category, char scope, int pid,
                                                    int64_t tid, int64_t ts_ns) {
  Event e(this, Start('i', name, pid, tid));
  e.line_.Field("cat", category).Field("s", std::string_view(&scope, 1));
  MicrosField(&e.line_, "ts", ToGrid(ts_ns));
  return e;
}

void ChromeTraceWriter::Counter(std::string_view name, int pid, int64_t ts_ns, double value) {
  Event e(this, Start('C', name, pid, 0));
  MicrosField(&e.line_, "ts", ToGrid(ts_ns));
  e.Args().Field("value", value);
  e.EndArgs();
}

ChromeTraceWriter::Event ChromeTraceWriter::Metadata(std::string_view name, int pid, int64_t tid) {
  // A ts of 0 on metadata: the format does not need one, some importers expect every
  // event to carry it.
  Event e(this, Start('M', name, pid, tid));
  e.line_.Field("ts", 0);
  return e;
}

void ChromeTraceWriter::AppendEvent(std::string_view event) {
  BeginEvent()->append(event);
  EndEvent();
}

std::string* ChromeTraceWriter::BeginEvent() {
  if (events_ > 0) buffer_.push_back(',');
  ++events_;
  return &buffer_;
}

void ChromeTraceWriter::Committed() {
  if (buffer_.size() < kFlushBytes) return;
  out_->write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void ChromeTraceWriter::Finish(const trace::JsonValue& other_data) {
  // No "displayTimeUnit": older Perfetto versions took it as the unit of ts.
  buffer_.append("],\n\"otherData\":");
  other_data.AppendJson(&buffer_);
  buffer_.append("}\n");
  out_->write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
  out_->flush();
}

}  // namespace dsdiag::timeline
