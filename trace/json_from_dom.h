// ToJsonValue: a simdjson DOM element (a parsed record's field, a header's `config`, a whole
// parsed file) as a JsonValue tree. Used by Record::Value, header parsing and the readers of
// the other JSON files; the simdjson types are only declared here.
#pragma once

#include "trace/json_value.h"

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace dsdiag::trace {

// Of an object's duplicate member names the first wins; an integer past int64 becomes a
// double.
JsonValue ToJsonValue(const simdjson::dom::element& element);

}  // namespace dsdiag::trace
