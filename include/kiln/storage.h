// Storage (the memory a tensor's elements live in) and the Allocator interface per device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kiln/detail/ref.h"
#include "kiln/device.h"

namespace kiln {

// Memory handed out by an allocator: the pointer plus what is needed to give it back.
struct DataPtr {
  void* data = nullptr;
  void* ctx = nullptr;                               // allocator-specific (block, user deleter)
  void (*free_fn)(void* data, void* ctx) = nullptr;  // null: not owned
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// The allocator for a device type; cuda's is registered by the GPU backend.
Allocator* get_allocator(DeviceType t);
void set_allocator(DeviceType t, Allocator* a);

// Note [Version counter]: the in-place version counter lives in the storage, so every view of
// a tensor (and its detach()) shares it, as in PyTorch. In-place ops bump it; autograd checks it.
struct StorageImpl : detail::RefCounted {
  StorageImpl(DataPtr p, size_t n, Device d) : ptr(p), nbytes(n), device(d) {}
  ~StorageImpl() {
    if (ptr.free_fn) ptr.free_fn(ptr.data, ptr.ctx);
  }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  DataPtr ptr;
  size_t nbytes;
  Device device;
  std::atomic<uint32_t> version{0};
};

using Storage = detail::Ref<StorageImpl>;

// Allocates nbytes on the device (the device's allocator) and wraps them in a storage.
Storage make_storage(size_t nbytes, Device device);
// Wraps external memory; deleter (may be empty) runs when the last tensor using it dies.
Storage make_storage_from_blob(void* data, size_t nbytes, Device device,
                               std::function<void(void*)> deleter);

}  // namespace kiln
