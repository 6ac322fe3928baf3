// Per-(device, stream) work counters (Note [Work counter] in work_counter.h).
#include "backend/gpu/vendor.h"

#include <map>
#include <mutex>
#include <utility>

#include "backend/gpu/runtime.h"
#include "backend/gpu/work_counter.h"

namespace kiln::gpu {

namespace {

struct Counters {
  std::mutex mu;
  std::map<std::pair<int, void*>, int*> by_stream;
};

// Note [Leaked at exit] (stream.cu): never destroyed.
Counters& counters() {
  static auto* c = new Counters();
  return *c;
}

}  // namespace

int* work_counter(int device, void* stream) {
  const auto s = static_cast<gpuStream_t>(stream);
  gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
  if (gpuStreamIsCapturing(s, &status) != gpuSuccess) {
    (void)gpuGetLastError();
    return nullptr;
  }
  if (status != gpuStreamCaptureStatusNone) return nullptr;
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto key = std::make_pair(device, stream);
  if (auto it = c.by_stream.find(key); it != c.by_stream.end()) return it->second;
  DeviceGuard g(device);
  void* p = nullptr;
  // Another thread's capture in the global mode would refuse the allocation (Note [Allocating
  // during graph capture] in cuda_device_api.cu): relaxed around it, as the allocator does.
  gpuStreamCaptureMode mode = gpuStreamCaptureModeRelaxed;
  (void)gpuThreadExchangeStreamCaptureMode(&mode);
  const gpuError_t e = gpuMalloc(&p, 2 * sizeof(int));
  (void)gpuThreadExchangeStreamCaptureMode(&mode);
  if (e != gpuSuccess) {
    (void)gpuGetLastError();  // out of memory: the caller's static schedule needs none
    return nullptr;
  }
  KILN_GPU_CHECK("work_counter", gpuMemsetAsync(p, 0, 2 * sizeof(int), s));
  return c.by_stream[key] = static_cast<int*>(p);
}

}  // namespace kiln::gpu
