// The kiln::Allocator for DeviceType::CUDA over one CachingAllocator per device (see
// Note [Leaked at exit] in stream.cu for why they are never destroyed).
#include <atomic>
#include <cstdio>
#include <mutex>

#include "backend/gpu/cuda_device_api.h"
#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/small_ops.h"
#include "backend/gpu/stream.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

namespace {

constexpr int kMaxDevices = 64;
std::atomic<CachingAllocator*> g_allocators[kMaxDevices] = {};
std::mutex g_create_mu;

void free_device_memory(void* data, void* ctx) {
  try {
    static_cast<CachingAllocator*>(ctx)->free(data);
  } catch (const std::exception& e) {
    // A free runs in a destructor: report and go on rather than terminate.
    std::fprintf(stderr, "kiln: warning: freeing GPU memory failed: %s\n", e.what());
  }
}

// nbytes on `dev` for its current stream (the allocator's device API selects the device itself).
DataPtr allocate_on(int dev, size_t nbytes) {
  if (nbytes == 0) return {};
  CachingAllocator& a = device_allocator(dev);
  void* p = a.malloc(nbytes, current_stream_noflush(dev));  // allocating enqueues nothing
  return {p, &a, &free_device_memory};
}

class CudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override { return allocate_on(current_device(), nbytes); }
};

}  // namespace

CachingAllocator& device_allocator(int device) {
  KILN_ASSERT(device >= 0 && device < kMaxDevices, "device ", device);
  CachingAllocator* a = g_allocators[device].load(std::memory_order_acquire);
  if (KILN_LIKELY(a != nullptr)) return *a;
  std::lock_guard<std::mutex> lock(g_create_mu);
  a = g_allocators[device].load(std::memory_order_relaxed);
  if (a == nullptr) {
    auto* api = new CudaDeviceApi(device);
    a = new CachingAllocator(*api);
    g_allocators[device].store(a, std::memory_order_release);
  }
  return *a;
}

void for_each_allocator(const std::function<void(CachingAllocator&)>& f) {
  for (int d = 0; d < kMaxDevices; ++d)
    if (CachingAllocator* a = g_allocators[d].load(std::memory_order_acquire)) f(*a);
}

std::unique_ptr<DeviceApi> make_cuda_device_api(int device) {
  return std::make_unique<CudaDeviceApi>(resolve_device(device, "cuda.caching_allocator"));
}

Allocator* cuda_allocator() {
  static CudaAllocator a;
  return &a;
}

CachingAllocator* allocator_of(const DataPtr& p) {
  return p.free_fn == &free_device_memory ? static_cast<CachingAllocator*>(p.ctx) : nullptr;
}

}  // namespace kiln::gpu

namespace kiln::detail {

Storage make_cuda_storage(size_t nbytes, int device) {
  int d = gpu::resolve_device(device, "empty");
  return Storage::make(gpu::allocate_on(d, nbytes), nbytes, Device(kCUDA, d));
}

}  // namespace kiln::detail
