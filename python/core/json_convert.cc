#include "python/core/json_convert.h"

#include <string>

namespace dsdiag::python {

namespace py = pybind11;

trace::JsonValue ToJson(const py::handle& value) {
  if (value.is_none()) return trace::JsonValue();
  // bool before int: True is an int in Python.
  if (py::isinstance<py::bool_>(value)) return trace::JsonValue(value.cast<bool>());
  if (py::isinstance<py::int_>(value)) return trace::JsonValue(value.cast<int64_t>());
  if (py::isinstance<py::float_>(value)) return trace::JsonValue(value.cast<double>());
  if (py::isinstance<py::str>(value)) return trace::JsonValue(value.cast<std::string>());
  if (py::isinstance<py::dict>(value)) {
    trace::JsonValue object = trace::JsonValue::Object();
    for (const auto& [k, v] : value.cast<py::dict>()) {
      object.Set(py::str(k).cast<std::string>(), ToJson(v));
    }
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    trace::JsonValue array = trace::JsonValue::Array();
    for (const auto& v : value) array.Push(ToJson(v));
    return array;
  }
  return trace::JsonValue(py::str(value).cast<std::string>());
}

}  // namespace dsdiag::python
