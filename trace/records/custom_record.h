// The `custom` record (docs/trace-format.md, "Other records"): user code's own payload,
// written through the session's writer; nothing in dsdiag writes one. Read by the timeline
// (an instant with its data).
//
//   {"type":"custom","ts":..,"step":3,"name":"eval","data":{"acc":0.91}}
#pragma once

#include <optional>
#include <string_view>

#include "trace/record.h"

namespace dsdiag::trace {
class JsonLine;
}  // namespace dsdiag::trace

namespace dsdiag::trace::records {

struct CustomKeys {
  static constexpr FieldKey name{"name"};
  static constexpr FieldKey data{"data"};  // any JSON
};

struct CustomRecord {
  static constexpr std::string_view kType = rec::kCustom;
  std::string_view name;
  std::string_view data_json;  // valid JSON, written as it is; empty: left out
};
void AppendFields(const CustomRecord& r, JsonLine* line);

class CustomView {
 public:
  explicit CustomView(const Record& r) : r_(r) {}
  std::optional<std::string_view> name() const { return r_.Str(CustomKeys::name); }
  std::optional<JsonValue> data() const { return r_.Value(CustomKeys::data); }

 private:
  const Record& r_;
};

}  // namespace dsdiag::trace::records
