// CudaDeviceApi: the real DeviceApi for one GPU (cudaMalloc/cudaFree, events, and the driver's
// virtual-memory calls for expandable segments), over CUDA or HIP through vendor.h.
#pragma once

#include "backend/gpu/device_api.h"

namespace kiln::gpu {

class CudaDeviceApi final : public DeviceApi {
 public:
  explicit CudaDeviceApi(int device) : device_(device) {}

  int device_index() const override { return device_; }
  void* malloc(size_t bytes) override;
  void free(void* ptr) override;
  MemInfo mem_get_info() override;
  EventHandle event_create() override;
  void event_record(EventHandle event, StreamHandle stream) override;
  bool event_query(EventHandle event) override;
  void event_synchronize(EventHandle event) override;
  void event_destroy(EventHandle event) override;
  void stream_synchronize(StreamHandle stream) override;
  void device_synchronize() override;
  size_t vm_granularity() override;
  void* vm_reserve(size_t size, size_t alignment) override;
  void vm_free(void* base, size_t size) override;
  PhysHandle vm_create(size_t size) override;
  void vm_release(PhysHandle handle) override;
  void vm_map(void* addr, size_t size, PhysHandle handle) override;
  void vm_unmap(void* addr, size_t size) override;

 private:
  int device_;
  size_t granularity_ = 0;
  bool granularity_read_ = false;
};

}  // namespace kiln::gpu
