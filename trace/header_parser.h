// Header parsing for TraceReader: turns the parsed first record of a rank file into a
// TraceHeader, or names the first field that is missing, mistyped or out of range.
//
// Required: "schema" (major version kOldestSchemaMajor to kSchemaMajor), "run_id", "rank",
// "world_size", since nothing can be matched across ranks without them. The other documented fields
// take their defaults when absent but must have the documented type when present. Top-level keys
// the format does not define are kept as `sections`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "trace/trace_header.h"

namespace simdjson::dom {
class object;
}  // namespace simdjson::dom

namespace dsdiag::trace {

struct FieldProblem {
  size_t offset = 0;     // 0-based byte offset in the line (0 when the field is missing)
  std::string expected;  // e.g. "integer field \"rank\""
  std::string found;
};

// `line` is the raw text of the record, used only to locate a bad field for the message.
std::optional<FieldProblem> ParseHeaderObject(const simdjson::dom::object& object,
                                              std::string_view line, TraceHeader* header);

}  // namespace dsdiag::trace
