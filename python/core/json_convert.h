// Python values (dict, list, str, int, float, bool, None) as the trace's JsonValue, for the
// header's config and sections. Anything else is written as its str().
#pragma once

#include <pybind11/pybind11.h>

#include "trace/json_value.h"

namespace dsdiag::python {

trace::JsonValue ToJson(const pybind11::handle& value);

}  // namespace dsdiag::python
