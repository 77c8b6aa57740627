// The `thread` record (docs/trace-format.md, "`thread`"): names thread `tid` (a common field)
// for timelines, once per thread, when it first names itself. Written by
// TraceWriter::NameThisThread; read by the timeline.
//
//   {"type":"thread","ts":..,"step":0,"tid":2,"name":"watchdog"}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct ThreadKeys {
  static constexpr FieldKey name{"name"};
};

struct ThreadRecord {
  static constexpr std::string_view kType = rec::kThread;
  std::string_view name;
};
void AppendFields(const ThreadRecord& r, JsonLine* line);

class ThreadView {
 public:
  explicit ThreadView(const Record& r) : r_(r) {}
  std::optional<std::string_view> name() const { return r_.Str(ThreadKeys::name); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
