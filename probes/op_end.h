// OpEnd: how a collective or a point-to-point message ended — set by whichever thread sees
// it complete (the backend's, through a future's callback), read once by the thread that
// writes the rank's records. The time is stored last (release) and read first (acquire), so
// a reader that sees it also sees whether it failed.
#pragma once

#include <atomic>
#include <cstdint>

#include "trace/clock.h"

namespace dsdiag::probes {

class OpEnd {
 public:
  struct Read {
    int64_t done_ns;  // when it completed; now, for one that never did
    bool failed;      // the backend reported an error, or it never completed
  };

  void Set(bool failed) noexcept {
    failed_.store(failed, std::memory_order_relaxed);
    done_ns_.store(trace::MonotonicNs(), std::memory_order_release);
  }
  bool done() const noexcept { return done_ns_.load(std::memory_order_acquire) != 0; }
  Read Get() const noexcept {
    const int64_t done = done_ns_.load(std::memory_order_acquire);
    if (done == 0) return {trace::MonotonicNs(), true};
    return {done, failed_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<int64_t> done_ns_{0};
  std::atomic<bool> failed_{false};
};

}  // namespace dsdiag::probes
