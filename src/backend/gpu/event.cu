// GPU events: creation, record/query/synchronize, elapsed time and IPC handles.
#include <cstring>

#include "backend/gpu/event.h"
#include "backend/gpu/kernel_error.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/small_ops.h"
#include "backend/gpu/vendor.h"

namespace kiln::gpu {

namespace {
gpuEvent_t as_event(EventHandle e) { return reinterpret_cast<gpuEvent_t>(e); }
}  // namespace

EventHandle event_create(int device, bool enable_timing, bool blocking, bool interprocess) {
  unsigned flags = enable_timing ? gpuEventDefault : gpuEventDisableTiming;
  if (blocking) flags |= gpuEventBlockingSync;
  if (interprocess) flags |= gpuEventInterprocess | gpuEventDisableTiming;
  KILN_CHECK(!(interprocess && enable_timing),
             "[cuda.Event] an interprocess event cannot have enable_timing=true");
  DeviceGuard g(device);
  gpuEvent_t e = nullptr;
  KILN_GPU_CHECK("cuda.Event", gpuEventCreateWithFlags(&e, flags));
  return reinterpret_cast<EventHandle>(e);
}

void event_destroy(EventHandle event) noexcept {
  if (event != 0) (void)gpuEventDestroy(as_event(event));
}

void event_record(EventHandle event, StreamHandle stream, const char* op) {
  flush_small_ops_if_pending();  // Note [Deferred small launches]
  KILN_GPU_CHECK(op, gpuEventRecord(as_event(event), reinterpret_cast<gpuStream_t>(stream)));
}

bool event_query(EventHandle event, const char* op) {
  gpuError_t e = gpuEventQuery(as_event(event));
  if (e == gpuErrorNotReady) {
    (void)gpuGetLastError();
    return false;
  }
  KILN_GPU_CHECK(op, e);
  return true;
}

void event_synchronize(EventHandle event, const char* op) {
  KILN_GPU_CHECK(op, gpuEventSynchronize(as_event(event)));
  // Note [Kernel error channel]; not inside the caching allocator, whose state must not unwind.
  if (std::strncmp(op, "cuda.caching_allocator", 22) != 0) check_kernel_errors();
}

float event_elapsed_ms(EventHandle start, EventHandle end, const char* op) {
  float ms = 0;
  KILN_GPU_CHECK(op, gpuEventElapsedTime(&ms, as_event(start), as_event(end)));
  return ms;
}

std::string event_ipc_handle(EventHandle event, const char* op) {
  gpuIpcEventHandle_t h{};
  KILN_GPU_CHECK(op, gpuIpcGetEventHandle(&h, as_event(event)));
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
}

EventHandle event_from_ipc_handle(int device, const std::string& handle, const char* op) {
  gpuIpcEventHandle_t h{};
  KILN_CHECK(handle.size() == sizeof(h), "[", op, "] an event IPC handle has ", sizeof(h),
             " bytes, got ", handle.size());
  std::memcpy(&h, handle.data(), sizeof(h));
  DeviceGuard g(device);
  gpuEvent_t e = nullptr;
  KILN_GPU_CHECK(op, gpuIpcOpenEventHandle(&e, h));
  return reinterpret_cast<EventHandle>(e);
}

}  // namespace kiln::gpu
