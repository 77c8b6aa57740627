// DeviceTimer: how long work queued on a CUDA stream took on the device, for the phases and
// collectives of a LibTorch loop on CUDA (the Python package's twin is
// python/dsdiag/torch/_device_time.py). On CUDA the host only queues: a phase's host time
// ends when its kernels are queued, not when they ran, so a `step` record's host times put
// backward, the allreduce and its wait wherever the host next syncs. Events recorded on the
// stream around the same span measure what the device did.
//
// Events are created once and pooled (cudaEventCreate costs a driver call; a loop records
// a few per phase and collective every step). A span is read a step late: Resolve() takes
// the spans whose end event completed (cudaEventQuery: never a wait) and leaves the others
// for the next call, so recording adds no sync to the loop.
//
//   DeviceTimer timer;
//   std::string why;
//   if (!timer.Init(&why)) ...;              // no device: every call below is a no-op
//   int64_t span = timer.Begin(stream);      // at the phase's start, on its stream
//   ...queue the phase's kernels...
//   timer.End(span, stream);
//   for (const DeviceSpan& s : timer.Resolve()) ...  // next step: s.id, s.device_ns
//
// Torch-free: the CUDA runtime only (built when CMake finds the CUDA toolkit, DSDIAG_CUDA).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsdiag::probes::cuda {

// A cudaStream_t (a pointer), without the CUDA headers in every includer: 0 is the default
// stream.
using Stream = void*;

struct DeviceSpan {
  int64_t id = 0;         // what Begin returned
  int64_t device_ns = 0;  // end event's time less the start event's, on the device
};

class DeviceTimer {
 public:
  DeviceTimer() = default;
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  // False, with the CUDA runtime's reason in *why, where there is no usable device: the
  // timer then stays off and costs a branch per call.
  bool Init(std::string* why) noexcept;
  bool on() const noexcept { return on_; }

  // A span's id (>= 0), or -1 when off or an event could not be had.
  int64_t Begin(Stream stream) noexcept;
  void End(int64_t span, Stream stream) noexcept;

  // The spans whose end completed since the last call, in the order they began; their
  // events go back to the pool. A span still running stays for the next call.
  std::vector<DeviceSpan> Resolve() noexcept;

  // Events created so far (the pool's size: the most spans ever in flight, times two).
  size_t events_created() const noexcept { return created_; }

 private:
  struct Open {
    int64_t id;
    void* start;
    void* end;  // null until End
  };
  void* TakeEvent() noexcept;

  bool on_ = false;
  int64_t next_id_ = 0;
  size_t created_ = 0;
  std::vector<void*> free_;  // cudaEvent_t, ready for reuse
  std::vector<Open> open_;   // begun, not resolved yet, in order
};

}  // namespace dsdiag::probes::cuda
