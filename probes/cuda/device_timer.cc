#include "probes/cuda/device_timer.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace dsdiag::probes::cuda {
namespace {

cudaEvent_t AsEvent(void* e) { return static_cast<cudaEvent_t>(e); }
cudaStream_t AsStream(Stream s) { return static_cast<cudaStream_t>(s); }

}  // namespace

DeviceTimer::~DeviceTimer() {
  for (void* e : free_) cudaEventDestroy(AsEvent(e));
  for (const Open& o : open_) {
    cudaEventDestroy(AsEvent(o.start));
    if (o.end != nullptr) cudaEventDestroy(AsEvent(o.end));
  }
}

bool DeviceTimer::Init(std::string* why) noexcept {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    if (why != nullptr)
      *why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    cudaGetLastError();  // not sticky: leave the runtime's error state as it was
    return false;
  }
  on_ = true;
  return true;
}

void* DeviceTimer::TakeEvent() noexcept {
  if (!free_.empty()) {
    void* e = free_.back();
    free_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess) return nullptr;  // timing events: the default flags
  ++created_;
  return e;
}

int64_t DeviceTimer::Begin(Stream stream) noexcept {
  if (!on_) return -1;
  try {
    void* start = TakeEvent();
    if (start == nullptr) return -1;
    if (cudaEventRecord(AsEvent(start), AsStream(stream)) != cudaSuccess) {
      free_.push_back(start);
      return -1;
    }
    open_.push_back({next_id_, start, nullptr});
  } catch (...) {  // out of memory growing the lists: this span goes unmeasured
    return -1;
  }
  return next_id_++;
}

void DeviceTimer::End(int64_t span, Stream stream) noexcept {
  if (!on_ || span < 0) return;
  auto it =
      std::find_if(open_.rbegin(), open_.rend(), [span](const Open& o) { return o.id == span; });
  if (it == open_.rend() || it->end != nullptr) return;
  void* end = TakeEvent();
  if (end == nullptr) return;
  if (cudaEventRecord(AsEvent(end), AsStream(stream)) != cudaSuccess) {
    free_.push_back(end);
    return;
  }
  it->end = end;
}

std::vector<DeviceSpan> DeviceTimer::Resolve() noexcept {
  std::vector<DeviceSpan> done;
  if (!on_) return done;
  try {
    std::vector<Open> still;
    for (const Open& o : open_) {
      if (o.end == nullptr || cudaEventQuery(AsEvent(o.end)) != cudaSuccess) {
        still.push_back(o);
        continue;
      }
      float ms = 0;
      if (cudaEventElapsedTime(&ms, AsEvent(o.start), AsEvent(o.end)) == cudaSuccess)
        done.push_back({o.id, static_cast<int64_t>(static_cast<double>(ms) * 1e6)});
      free_.push_back(o.start);
      free_.push_back(o.end);
    }
    open_.swap(still);
  } catch (...) {  // out of memory: what was read is returned, the rest is read next time
  }
  cudaGetLastError();  // cudaErrorNotReady from the queries is no error of the job's
  return done;
}

}  // namespace dsdiag::probes::cuda
