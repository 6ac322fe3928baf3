// GPU streams: thread-local current stream per device and the pool of non-blocking streams.
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/gpu/event.h"
#include "backend/gpu/kernel_error.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/small_ops.h"
#include "backend/gpu/stream.h"
#include "backend/gpu/vendor.h"

namespace kiln::gpu {

namespace {

constexpr int kPoolSize = 32;

struct DevicePool {
  std::once_flag once;
  int least = 0, greatest = 0;
  std::array<StreamHandle, kPoolSize> low{}, high{};
  std::atomic<uint32_t> next_low{0}, next_high{0};
};

// Note [Leaked at exit]: pools, allocators and caches of the GPU backend are created with new
// and never destroyed, because the vendor runtime may already be torn down when static
// destructors run (as PyTorch does).
std::vector<DevicePool*>& pools() {
  static auto* p = [] {
    auto* v = new std::vector<DevicePool*>();
    for (int i = 0; i < device_count(); ++i) v->push_back(new DevicePool());
    return v;
  }();
  return *p;
}

DevicePool& init_pool(int device) {
  DevicePool& p = *pools()[static_cast<size_t>(device)];
  std::call_once(p.once, [&] {
    DeviceGuard g(device);
    KILN_GPU_CHECK("cuda.Stream", gpuDeviceGetStreamPriorityRange(&p.least, &p.greatest));
    for (int i = 0; i < kPoolSize; ++i) {
      gpuStream_t lo = nullptr, hi = nullptr;
      KILN_GPU_CHECK("cuda.Stream",
                     gpuStreamCreateWithPriority(&lo, gpuStreamNonBlocking, p.least));
      KILN_GPU_CHECK("cuda.Stream",
                     gpuStreamCreateWithPriority(&hi, gpuStreamNonBlocking, p.greatest));
      p.low[i] = reinterpret_cast<StreamHandle>(lo);
      p.high[i] = reinterpret_cast<StreamHandle>(hi);
    }
  });
  return p;
}

std::vector<StreamHandle>& thread_streams() {
  thread_local std::vector<StreamHandle> current(static_cast<size_t>(device_count()), 0);
  return current;
}

gpuStream_t as_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

}  // namespace

// Everything that enqueues GPU work asks for its stream here: the pending batch of small ops
// goes first (Note [Deferred small launches]).
uintptr_t current_stream_noflush(int device) {
  return thread_streams()[static_cast<size_t>(device)];
}

StreamHandle current_stream(int device) {
  flush_small_ops_if_pending();
  return current_stream_noflush(device);
}

void set_current_stream(int device, StreamHandle stream) {
  thread_streams()[static_cast<size_t>(device)] = stream;
}

StreamHandle pool_stream(int device, bool high_priority) {
  DevicePool& p = init_pool(device);
  if (high_priority) return p.high[p.next_high.fetch_add(1) % kPoolSize];
  return p.low[p.next_low.fetch_add(1) % kPoolSize];
}

void stream_priority_range(int device, int* least, int* greatest) {
  DevicePool& p = init_pool(device);
  *least = p.least;
  *greatest = p.greatest;
}

int stream_priority(StreamHandle stream) {
  int prio = 0;
  KILN_GPU_CHECK("cuda.Stream.priority", gpuStreamGetPriority(as_stream(stream), &prio));
  return prio;
}

bool stream_query(StreamHandle stream, const char* op) {
  flush_small_ops_if_pending();
  gpuError_t e = gpuStreamQuery(as_stream(stream));
  if (e == gpuErrorNotReady) {
    (void)gpuGetLastError();
    return false;
  }
  KILN_GPU_CHECK(op, e);
  return true;
}

void stream_synchronize(StreamHandle stream, const char* op) {
  flush_small_ops_if_pending();
  KILN_GPU_CHECK(op, gpuStreamSynchronize(as_stream(stream)));
  check_kernel_errors();  // Note [Kernel error channel]
}

void stream_wait_event(StreamHandle stream, EventHandle event, const char* op) {
  flush_small_ops_if_pending();
  KILN_GPU_CHECK(op, gpuStreamWaitEvent(as_stream(stream), reinterpret_cast<gpuEvent_t>(event), 0));
}

void stream_wait_stream(int device, StreamHandle waiter, StreamHandle waited, const char* op) {
  if (waiter == waited) return;
  EventHandle e = event_create(device, false, false, false);
  try {
    event_record(e, waited, op);
    stream_wait_event(waiter, e, op);
  } catch (...) {
    event_destroy(e);
    throw;
  }
  event_destroy(e);  // safe: the wait was already enqueued
}

}  // namespace kiln::gpu
