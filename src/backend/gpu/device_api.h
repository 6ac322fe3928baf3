// DeviceApi: the few device-runtime calls the caching allocator needs (memory, events, streams,
// virtual memory). Plain C++: the CUDA/HIP runtime implements it later behind vendor/*.h, and
// tests implement it with host memory (fake_device.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::gpu {

// Opaque handles: a stream is the runtime's stream pointer (0 = the default stream), an event
// and a physical-memory handle are whatever the backend wants, 0 meaning "none".
using StreamHandle = uintptr_t;
using EventHandle = uintptr_t;
using PhysHandle = uintptr_t;

struct MemInfo {
  size_t free = 0;
  size_t total = 0;
};

// One DeviceApi object serves one device: every call acts on that device (an implementation
// over the CUDA runtime sets the current device itself). Calls are made with the allocator's
// mutex held, so an implementation needs no locking of its own for one allocator.
//
// Errors: out of memory is reported by return value (nullptr / 0), never thrown, because the
// allocator reacts to it (frees its cache and retries). Any other failure throws kiln::Error.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  virtual int device_index() const = 0;

  // Device memory (cudaMalloc / cudaFree). malloc returns nullptr when out of memory.
  virtual void* malloc(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  virtual MemInfo mem_get_info() = 0;  // cudaMemGetInfo

  // Events (cudaEventCreateWithFlags(DisableTiming) / Record / Query / Synchronize / Destroy).
  virtual EventHandle event_create() = 0;
  virtual void event_record(EventHandle event, StreamHandle stream) = 0;
  virtual bool event_query(EventHandle event) = 0;  // true once the recorded work is done
  virtual void event_synchronize(EventHandle event) = 0;
  virtual void event_destroy(EventHandle event) = 0;

  virtual void stream_synchronize(StreamHandle stream) = 0;
  virtual void device_synchronize() = 0;

  // Virtual memory for expandable segments (cuMemAddressReserve / cuMemCreate / cuMemMap +
  // cuMemSetAccess / cuMemUnmap / cuMemRelease / cuMemAddressFree).
  // vm_granularity() is the physical chunk granularity in bytes, 0 when the device has no
  // virtual memory management (the allocator then ignores expandable_segments).
  virtual size_t vm_granularity() = 0;
  // Reserves `size` bytes of address space aligned to `alignment`; nullptr on failure.
  virtual void* vm_reserve(size_t size, size_t alignment) = 0;
  virtual void vm_free(void* base, size_t size) = 0;
  // Creates a physical allocation of `size` bytes (a multiple of the granularity); 0 when out
  // of memory.
  virtual PhysHandle vm_create(size_t size) = 0;
  virtual void vm_release(PhysHandle handle) = 0;
  // Maps the whole of `handle` at `addr` and makes it readable/writable by this device.
  virtual void vm_map(void* addr, size_t size, PhysHandle handle) = 0;
  virtual void vm_unmap(void* addr, size_t size) = 0;
};

}  // namespace kiln::gpu
