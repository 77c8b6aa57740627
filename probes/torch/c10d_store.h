// C10dStore: c10d's rendezvous store (a TCPStore, a FileStore, a PrefixStore) as the probes'
// KeyValueStore, for the clock offset and the run id (probes/rank_probes.h).
//
//   auto store = c10::make_intrusive<c10d::TCPStore>(master_addr, options);
//   dsdiag::probes::C10dStore probe_store(*store);
//
// The store must outlive the adapter. Torch stays out of this header.
#pragma once

#include <string>
#include <string_view>

#include "probes/key_value_store.h"

namespace c10d {
class Store;
}

namespace dsdiag::probes {

class C10dStore : public KeyValueStore {
 public:
  explicit C10dStore(c10d::Store& store) : store_(store) {}
  void Set(std::string_view key, std::string_view value) override;
  // c10d's get: waits for the key up to the store's timeout, then throws.
  std::string Get(std::string_view key) override;

 private:
  c10d::Store& store_;
};

}  // namespace dsdiag::probes
