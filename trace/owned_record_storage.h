// What an OwnedRecord (record.h) holds on to: its parsed document, root object, index of
// members and line. Kept from one TraceReader::NextOwned to the next for its buffers.
// Internal to the reader: record.cc owns it, trace_reader.cc parses into it.
#pragma once

#include <simdjson.h>

#include <string>

#include "trace/field_index.h"
#include "trace/record.h"

namespace dsdiag::trace {

struct OwnedRecord::Storage {
  simdjson::dom::document document;
  simdjson::dom::object object;
  FieldIndex fields;
  std::string raw;
};

}  // namespace dsdiag::trace
