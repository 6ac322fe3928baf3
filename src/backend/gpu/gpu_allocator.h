// The GPU side of memory: one CachingAllocator per device (created on first use, over
// CudaDeviceApi) and the kiln::Allocator for DeviceType::CUDA that tensors allocate through.
#pragma once

#include <functional>
#include <memory>

#include "backend/gpu/caching_allocator.h"
#include "kiln/storage.h"

namespace kiln::gpu {

// The caching allocator of `device` (a valid index).
CachingAllocator& device_allocator(int device);
// Calls f(allocator) for each device whose allocator exists.
void for_each_allocator(const std::function<void(CachingAllocator&)>& f);
// The kiln::Allocator registered for kCUDA: allocates on the current device and stream.
Allocator* cuda_allocator();
// A new DeviceApi over the real `device` (for allocators made outside this table, e.g. tests of
// the environment settings); throws in builds without GPU support.
std::unique_ptr<DeviceApi> make_cuda_device_api(int device);
// True when `ctx` of a DataPtr comes from cuda_allocator(); its CachingAllocator then.
CachingAllocator* allocator_of(const DataPtr& p);

}  // namespace kiln::gpu
