// FakeDevice: a DeviceApi over host memory for tests of the caching allocator on machines
// without a GPU. Capacity limits trigger OOM, counters record every call, events complete only
// when the test says so, and virtual memory is emulated with mmap.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "backend/gpu/device_api.h"

namespace kiln::gpu {

class FakeDevice final : public DeviceApi {
 public:
  struct Options {
    int device_index = 0;
    size_t capacity = size_t{1} << 30;        // bytes of "device memory" (malloc + VM chunks)
    size_t vm_granularity = size_t{2} << 20;  // 0: no virtual memory support
    size_t alignment = 512;                   // alignment of malloc results
  };

  // Calls made so far, per kind.
  struct Counters {
    int64_t malloc = 0, malloc_failed = 0, free = 0;
    int64_t event_create = 0, event_destroy = 0, event_record = 0, event_synchronize = 0;
    int64_t stream_synchronize = 0, device_synchronize = 0;
    int64_t vm_reserve = 0, vm_free = 0, vm_create = 0, vm_create_failed = 0, vm_release = 0;
    int64_t vm_map = 0, vm_unmap = 0;
  };

  FakeDevice() : FakeDevice(Options{}) {}
  explicit FakeDevice(Options options);
  ~FakeDevice() override;  // releases whatever is still allocated
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // DeviceApi
  int device_index() const override { return options_.device_index; }
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
  size_t vm_granularity() override { return options_.vm_granularity; }
  void* vm_reserve(size_t size, size_t alignment) override;
  void vm_free(void* base, size_t size) override;
  PhysHandle vm_create(size_t size) override;
  void vm_release(PhysHandle handle) override;
  void vm_map(void* addr, size_t size, PhysHandle handle) override;
  void vm_unmap(void* addr, size_t size) override;

  // Test controls and observations.
  void set_capacity(size_t bytes);
  size_t capacity() const;
  size_t used() const;               // bytes held by malloc allocations and physical chunks
  size_t live_allocations() const;   // malloc allocations not yet freed
  size_t live_phys_handles() const;  // physical chunks not yet released
  size_t live_reservations() const;  // address ranges not yet freed
  Counters counters() const;
  // Completes every event recorded on `stream` so far (as if the stream's work finished).
  void complete_stream(StreamHandle stream);
  void complete_all();
  size_t pending_events() const;  // recorded and not yet complete
  // True when every byte of [addr, addr + size) lies in a mapped VM chunk.
  bool vm_is_mapped(const void* addr, size_t size) const;

 private:
  struct EventState {
    bool pending = false;
    StreamHandle stream = 0;
  };
  struct Mapping {
    size_t size;
    PhysHandle handle;
  };

  void complete_stream_locked(StreamHandle stream);
  const std::pair<const uintptr_t, size_t>* find_reservation(uintptr_t addr, size_t size) const;

  Options options_;
  mutable std::mutex mu_;
  size_t used_ = 0;
  Counters counters_;
  std::unordered_map<void*, size_t> allocations_;
  uintptr_t next_event_ = 1;
  std::unordered_map<EventHandle, EventState> events_;
  uintptr_t next_phys_ = 1;
  std::unordered_map<PhysHandle, size_t> phys_;  // handle -> size
  std::map<uintptr_t, size_t> reservations_;     // base -> size
  std::map<uintptr_t, Mapping> mappings_;        // addr -> chunk mapped there
};

}  // namespace kiln::gpu
