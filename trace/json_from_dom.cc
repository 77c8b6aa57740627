#include "trace/json_from_dom.h"

#include <simdjson.h>

namespace dsdiag::trace {

namespace dom = simdjson::dom;

JsonValue ToJsonValue(const dom::element& element) {
  switch (element.type()) {
    case dom::element_type::ARRAY: {
      JsonValue a = JsonValue::Array();
      // The type is known from the switch: value_unsafe() skips the re-check.
      const dom::array array = element.get_array().value_unsafe();
      for (dom::element e : array) a.Push(ToJsonValue(e));
      return a;
    }
    case dom::element_type::OBJECT: {
      JsonValue o = JsonValue::Object();
      const dom::object object = element.get_object().value_unsafe();
      for (dom::key_value_pair kv : object) {
        if (o.Find(kv.key) == nullptr) o.Set(kv.key, ToJsonValue(kv.value));  // first wins
      }
      return o;
    }
    case dom::element_type::INT64: {
      return JsonValue(element.get_int64().value_unsafe());
    }
    case dom::element_type::UINT64: {
      // Past int64: JsonValue holds it as a double rather than wrapping around.
      return JsonValue(static_cast<double>(element.get_uint64().value_unsafe()));
    }
    case dom::element_type::DOUBLE: {
      return JsonValue(element.get_double().value_unsafe());
    }
    case dom::element_type::STRING: {
      return JsonValue(element.get_string().value_unsafe());
    }
    case dom::element_type::BOOL: {
      return JsonValue(element.get_bool().value_unsafe());
    }
    case dom::element_type::NULL_VALUE:
      return JsonValue();
  }
  return JsonValue();
}

}  // namespace dsdiag::trace
