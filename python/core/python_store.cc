#include "python/core/python_store.h"

#include <stdexcept>

namespace dsdiag::python {

namespace py = pybind11;

PythonStore::~PythonStore() {
  // The probes may be torn down from a thread without the GIL (at exit): drop the
  // reference under it.
  py::gil_scoped_acquire gil;
  store_ = py::object();
}

void PythonStore::Set(std::string_view key, std::string_view value) {
  py::gil_scoped_acquire gil;
  try {
    store_.attr("set")(std::string(key), py::bytes(value.data(), value.size()));
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());
  }
}

std::string PythonStore::Get(std::string_view key) {
  py::gil_scoped_acquire gil;
  try {
    py::object value = store_.attr("get")(std::string(key));
    return std::string(py::bytes(value));
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace dsdiag::python
