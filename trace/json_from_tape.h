// ToJsonValue off a parsed record's tape (record_tape.h): the value at a tape index as a
// JsonValue tree, as ToJsonValue (json_from_dom.h) builds it from a simdjson element — the
// first of duplicate member names wins, an integer past int64 becomes a double. Record::Value
// uses it, so that a record copied out of its document (record_batch.h) reads the same.
#pragma once

#include <cstdint>

#include "trace/json_value.h"

namespace dsdiag::trace::tape {

JsonValue ToJsonValue(const uint64_t* words, const uint8_t* strings, uint32_t at);

}  // namespace dsdiag::trace::tape
