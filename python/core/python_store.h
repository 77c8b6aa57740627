// PythonStore: a Python object with set(key, value) and get(key) — torch.distributed's
// store (TCPStore, FileStore, PrefixStore) as Python sees it — as the probes'
// KeyValueStore. The probes call it from the thread that starts them, holding the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "probes/key_value_store.h"

namespace dsdiag::python {

class PythonStore : public probes::KeyValueStore {
 public:
  explicit PythonStore(pybind11::object store) : store_(std::move(store)) {}
  ~PythonStore() override;
  void Set(std::string_view key, std::string_view value) override;
  std::string Get(std::string_view key) override;

 private:
  pybind11::object store_;
};

}  // namespace dsdiag::python
