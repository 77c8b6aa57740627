#include "probes/torch/c10d_store.h"

#include <cstdint>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace dsdiag::probes {

void C10dStore::Set(std::string_view key, std::string_view value) {
  store_.set(std::string(key), std::vector<uint8_t>(value.begin(), value.end()));
}

std::string C10dStore::Get(std::string_view key) {
  const std::vector<uint8_t> value = store_.get(std::string(key));
  return std::string(value.begin(), value.end());
}

}  // namespace dsdiag::probes
