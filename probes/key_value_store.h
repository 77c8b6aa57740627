// KeyValueStore: the little the probes need from a job's rendezvous store to agree on
// things across ranks (a run id, the clock offset to rank 0) — set a key, and read one,
// waiting until some rank has set it. c10d's TCPStore is the usual one
// (probes/torch/c10d_store.h adapts it); the Python package hands in its own. The probes
// never open a connection of their own: a job has exactly one store, the launcher's.
#pragma once

#include <string>
#include <string_view>

namespace dsdiag::probes {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void Set(std::string_view key, std::string_view value) = 0;
  // Blocks until `key` is set; throws (std::exception) when the store's timeout runs out or
  // the store is gone.
  virtual std::string Get(std::string_view key) = 0;
};

}  // namespace dsdiag::probes
