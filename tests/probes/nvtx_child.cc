// The program the NVTX test runs under the recording tool (nvtx_recorder_injection.cc):
// a fixed sequence of ranges and marks through probes/nvtx.h, on two threads. The test
// holds the sequence the recorder must see; change both together.
#include <cstdint>
#include <thread>

#include "probes/nvtx.h"

namespace nvtx = dsdiag::probes::nvtx;

namespace {

void Step() {
  nvtx::ScopedRange step("step");
  {
    nvtx::ScopedRange forward("forward");
    nvtx::Mark("inside-forward");
  }
  // Twice through one call site: the name is registered once, pushed twice.
  for (int i = 0; i < 2; ++i) {
    DSDIAG_NVTX_RANGE("backward");
  }
  nvtx::PushRange("optimizer");
  nvtx::PopRange();
}

}  // namespace

int main() {
  nvtx::Mark("child-start");
  Step();
  // An asynchronous op: issued here, completed on another thread (a backend's).
  const uint64_t op = nvtx::StartRange("allreduce seq 3 bucket-0");
  std::thread worker([op] {
    nvtx::EndRange(op);
    nvtx::ScopedRange range("worker");
    nvtx::Mark("worker-mark");
  });
  worker.join();
  nvtx::Mark("child-end");
  return 0;
}
