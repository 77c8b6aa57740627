// MemoryStore: a KeyValueStore in memory, shared by the threads of a test that play ranks.
// Get waits for the key (up to a bound, then throws, as a store's timeout does).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

#include "probes/key_value_store.h"

namespace dsdiag::test_support {

class MemoryStore : public probes::KeyValueStore {
 public:
  explicit MemoryStore(std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : timeout_(timeout) {}

  void Set(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_[std::string(key)] = std::string(value);
    cv_.notify_all();
  }

  std::string Get(std::string_view key) override {
    std::unique_lock<std::mutex> lock(mu_);
    const std::string k(key);
    if (!cv_.wait_for(lock, timeout_, [&] { return values_.count(k) > 0; })) {
      throw std::runtime_error("MemoryStore: timed out waiting for " + k);
    }
    return values_[k];
  }

  bool Has(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return values_.count(key) > 0;
  }

 private:
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

}  // namespace dsdiag::test_support
