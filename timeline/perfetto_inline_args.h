// Debug annotations with their names spelled inline (DebugAnnotation.name): for events
// written a handful of times per timeline (findings, a Flight Recorder run's collectives),
// where interning a name would cost more than it saves. The same Field calls as EventArgs
// (event_buffer.h), so that one mapping of a value to its args serves both formats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "timeline/perfetto_fields.h"
#include "timeline/proto_encoder.h"

namespace dsdiag::timeline {

class PerfettoInlineArgs {
 public:
  explicit PerfettoInlineArgs(ProtoEncoder pb) : pb_(pb) {}

  PerfettoInlineArgs& Field(std::string_view key, int64_t v) {
    return Add(key, [&] { pb_.Int(perfetto_fields::kAnnotationInt, v); });
  }
  PerfettoInlineArgs& Field(std::string_view key, int v) { return Field(key, int64_t{v}); }
  PerfettoInlineArgs& Field(std::string_view key, bool v) {
    return Add(key, [&] { pb_.Varint(perfetto_fields::kAnnotationBool, v ? 1 : 0); });
  }
  PerfettoInlineArgs& Field(std::string_view key, std::string_view v) {
    return Add(key, [&] { pb_.String(perfetto_fields::kAnnotationString, v); });
  }
  PerfettoInlineArgs& Field(std::string_view key, const char* v) {
    return Field(key, std::string_view(v));
  }
  PerfettoInlineArgs& Field(std::string_view key, const std::string& v) {
    return Field(key, std::string_view(v));
  }
  PerfettoInlineArgs& Null(std::string_view) { return *this; }  // absent: no annotation

 private:
  template <typename WriteValue>
  PerfettoInlineArgs& Add(std::string_view key, WriteValue write_value) {
    const size_t annotation = pb_.Begin(perfetto_fields::kEventDebugAnnotations);
    pb_.String(perfetto_fields::kAnnotationName, key);
    write_value();
    pb_.End(annotation);
    return *this;
  }

  ProtoEncoder pb_;
};

}  // namespace dsdiag::timeline
