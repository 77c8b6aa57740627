// The `mark` record (docs/trace-format.md, "Other records"): an online detection or a probe
// that could not be installed, by name, with a message (also an NVTX mark). Written by the
// session (Session::Mark) and the Python package; read by the run's dispatch and the
// timeline.
//
//   {"type":"mark","step":0,"name":"stop-signals","message":"another handler owns SIGTERM"}
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct MarkKeys {
  static constexpr FieldKey name{"name"};
  static constexpr FieldKey message{"message"};
};

struct MarkRecord {
  static constexpr std::string_view kType = rec::kMark;
  std::string_view name;
  std::string_view message;
};
void AppendFields(const MarkRecord& r, JsonLine* line);

class MarkView {
 public:
  explicit MarkView(const Record& r) : r_(r) {}
  std::optional<std::string_view> name() const { return r_.Str(MarkKeys::name); }
  std::optional<std::string_view> message() const { return r_.Str(MarkKeys::message); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
