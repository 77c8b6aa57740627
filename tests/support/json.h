// ParseJson: a JSON text as a JsonValue tree, for tests that read what a command wrote
// (timelines, findings). A text that does not parse fails the test and gives null.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "trace/json_from_dom.h"
#include "trace/json_value.h"

namespace dsdiag::test_support {

inline trace::JsonValue ParseJson(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto error = parser.parse(simdjson::padded_string(text)).get(doc)) {
    ADD_FAILURE() << "not valid JSON: " << simdjson::error_message(error);
    return trace::JsonValue();
  }
  return trace::ToJsonValue(doc);
}

}  // namespace dsdiag::test_support
