// CudaDeviceApi: device memory, events and virtual memory of one GPU for the caching allocator.
// Out of memory is a return value (the allocator retries); other failures throw kiln::Error.
#include "backend/gpu/cuda_device_api.h"
#include "backend/gpu/small_ops.h"

#include <bit>
#include <type_traits>

#include "backend/gpu/event.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/vendor.h"

namespace kiln::gpu {

namespace {
[[noreturn]] void throw_vm_error(gpuVmError_t e, const char* call) {
  KILN_ERROR("[cuda.caching_allocator] ", vendor_name(), " driver error: ", gpuVmErrorString(e),
             " from ", call);
}
// The physical handle is an integer on CUDA and a pointer on HIP.
template <class H>
PhysHandle to_phys(H h) {
  if constexpr (std::is_pointer_v<H>)
    return reinterpret_cast<PhysHandle>(h);
  else
    return static_cast<PhysHandle>(h);
}
template <class H = gpuVmHandle_t>
H from_phys(PhysHandle h) {
  if constexpr (std::is_pointer_v<H>)
    return reinterpret_cast<H>(h);
  else
    return static_cast<H>(h);
}
// Note [Allocating during graph capture]
// A capture in the default (global) mode makes cudaMalloc and the virtual-memory calls fail on
// every thread ("operation not permitted when stream is capturing"). They are safe here (they
// do not touch the captured stream), so the thread's mode is relaxed around them, as PyTorch's
// allocator does.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() { (void)gpuThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureMode() { (void)gpuThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  gpuStreamCaptureMode mode_ = gpuStreamCaptureModeRelaxed;
};

#define KILN_VM_CHECK(call)                                                \
  do {                                                                     \
    gpuVmError_t kiln_vm_err_ = (call);                                    \
    if (kiln_vm_err_ != gpuVmSuccess) throw_vm_error(kiln_vm_err_, #call); \
  } while (0)
}  // namespace

void* CudaDeviceApi::malloc(size_t bytes) {
  DeviceGuard g(device_);
  RelaxedCaptureMode relaxed;
  void* p = nullptr;
  gpuError_t e = gpuMalloc(&p, bytes);
  if (e == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();  // out of memory is not sticky: clear it and let the allocator retry
    return nullptr;
  }
  KILN_GPU_CHECK("cuda.caching_allocator", e);
  return p;
}

void CudaDeviceApi::free(void* ptr) {
  flush_small_ops_if_pending();  // deferred ops may still use this memory
  DeviceGuard g(device_);
  KILN_GPU_CHECK("cuda.caching_allocator", gpuFree(ptr));
}

MemInfo CudaDeviceApi::mem_get_info() {
  DeviceGuard g(device_);
  MemInfo m;
  KILN_GPU_CHECK("cuda.mem_get_info", gpuMemGetInfo(&m.free, &m.total));
  return m;
}

EventHandle CudaDeviceApi::event_create() {
  return gpu::event_create(device_, false, false, false);
}
void CudaDeviceApi::event_record(EventHandle event, StreamHandle stream) {
  DeviceGuard g(device_);
  gpu::event_record(event, stream, "cuda.caching_allocator");
}
bool CudaDeviceApi::event_query(EventHandle event) {
  return gpu::event_query(event, "cuda.caching_allocator");
}
void CudaDeviceApi::event_synchronize(EventHandle event) {
  gpu::event_synchronize(event, "cuda.caching_allocator");
}
void CudaDeviceApi::event_destroy(EventHandle event) { gpu::event_destroy(event); }

void CudaDeviceApi::stream_synchronize(StreamHandle stream) {
  flush_small_ops_if_pending();
  DeviceGuard g(device_);
  KILN_GPU_CHECK("cuda.caching_allocator",
                 gpuStreamSynchronize(reinterpret_cast<gpuStream_t>(stream)));
}

void CudaDeviceApi::device_synchronize() {
  flush_small_ops_if_pending();
  DeviceGuard g(device_);
  KILN_GPU_CHECK("cuda.caching_allocator", gpuDeviceSynchronize());
}

size_t CudaDeviceApi::vm_granularity() {
  if (!granularity_read_) {
    granularity_read_ = true;
    size_t g = 0;
    if (gpuVmSupported()) {
      DeviceGuard guard(device_);
      if (gpuVmGranularity(device_, &g) != gpuVmSuccess) g = 0;
    }
    granularity_ = g;
  }
  return granularity_;
}

void* CudaDeviceApi::vm_reserve(size_t size, size_t alignment) {
  DeviceGuard g(device_);
  RelaxedCaptureMode relaxed;
  void* p = nullptr;
  // The driver takes a power-of-two alignment (or 0: the allocation granularity); segment sizes
  // such as 20 MiB are not, and the range starts granularity-aligned anyway.
  if (!std::has_single_bit(alignment)) alignment = 0;
  if (gpuVmReserve(&p, size, alignment) != gpuVmSuccess) return nullptr;
  return p;
}

void CudaDeviceApi::vm_free(void* base, size_t size) {
  flush_small_ops_if_pending();  // deferred ops may still use this memory
  DeviceGuard g(device_);
  KILN_VM_CHECK(gpuVmFree(base, size));
}

PhysHandle CudaDeviceApi::vm_create(size_t size) {
  DeviceGuard g(device_);
  RelaxedCaptureMode relaxed;
  gpuVmHandle_t h{};
  gpuVmError_t e = gpuVmCreate(&h, size, device_);
  if (e == gpuVmErrorOutOfMemory) {
    (void)gpuGetLastError();
    return 0;
  }
  if (e != gpuVmSuccess) throw_vm_error(e, "gpuVmCreate");
  return to_phys(h);
}

void CudaDeviceApi::vm_release(PhysHandle handle) {
  DeviceGuard g(device_);
  KILN_VM_CHECK(gpuVmRelease(from_phys(handle)));
}

void CudaDeviceApi::vm_map(void* addr, size_t size, PhysHandle handle) {
  DeviceGuard g(device_);
  RelaxedCaptureMode relaxed;
  KILN_VM_CHECK(gpuVmMap(addr, size, from_phys(handle), device_));
}

void CudaDeviceApi::vm_unmap(void* addr, size_t size) {
  flush_small_ops_if_pending();  // deferred ops may still use this memory
  DeviceGuard g(device_);
  KILN_VM_CHECK(gpuVmUnmap(addr, size));
}

}  // namespace kiln::gpu
