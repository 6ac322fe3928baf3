// FakeDevice: host-memory implementation of DeviceApi used by the allocator tests.
#include "backend/gpu/fake_device.h"

#include <sys/mman.h>

#include <cstdlib>

#include "kiln/error.h"

namespace kiln::gpu {

namespace {
size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
}  // namespace

FakeDevice::FakeDevice(Options options) : options_(options) {
  KILN_CHECK(options_.alignment > 0 && (options_.alignment & (options_.alignment - 1)) == 0,
             "[fake_device] alignment must be a power of two, got ", options_.alignment);
}

FakeDevice::~FakeDevice() {
  for (auto& [ptr, size] : allocations_) std::free(ptr);
  // Unmapping a reservation also drops the chunks mapped inside it.
  for (auto& [base, size] : reservations_) munmap(reinterpret_cast<void*>(base), size);
}

void* FakeDevice::malloc(size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  ++counters_.malloc;
  size_t n = round_up(bytes == 0 ? 1 : bytes, options_.alignment);
  if (used_ + n > options_.capacity) {
    ++counters_.malloc_failed;
    return nullptr;
  }
  void* p = std::aligned_alloc(options_.alignment, n);
  KILN_CHECK(p != nullptr, "[fake_device] host allocation of ", n, " bytes failed");
  allocations_.emplace(p, n);
  used_ += n;
  return p;
}

void FakeDevice::free(void* ptr) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = allocations_.find(ptr);
  KILN_CHECK(it != allocations_.end(), "[fake_device] free of unknown pointer ", ptr);
  ++counters_.free;
  used_ -= it->second;
  std::free(ptr);
  allocations_.erase(it);
}

MemInfo FakeDevice::mem_get_info() {
  std::lock_guard<std::mutex> g(mu_);
  return MemInfo{options_.capacity > used_ ? options_.capacity - used_ : 0, options_.capacity};
}

EventHandle FakeDevice::event_create() {
  std::lock_guard<std::mutex> g(mu_);
  ++counters_.event_create;
  EventHandle e = next_event_++;
  events_.emplace(e, EventState{});
  return e;
}

void FakeDevice::event_record(EventHandle event, StreamHandle stream) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = events_.find(event);
  KILN_CHECK(it != events_.end(), "[fake_device] event_record on unknown event ", event);
  ++counters_.event_record;
  it->second = EventState{true, stream};
}

bool FakeDevice::event_query(EventHandle event) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = events_.find(event);
  KILN_CHECK(it != events_.end(), "[fake_device] event_query on unknown event ", event);
  return !it->second.pending;
}

void FakeDevice::event_synchronize(EventHandle event) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = events_.find(event);
  KILN_CHECK(it != events_.end(), "[fake_device] event_synchronize on unknown event ", event);
  ++counters_.event_synchronize;
  // Waiting for an event means the stream's work up to it is done.
  it->second.pending = false;
}

void FakeDevice::event_destroy(EventHandle event) {
  std::lock_guard<std::mutex> g(mu_);
  KILN_CHECK(events_.erase(event) == 1, "[fake_device] event_destroy on unknown event ", event);
  ++counters_.event_destroy;
}

void FakeDevice::stream_synchronize(StreamHandle stream) {
  std::lock_guard<std::mutex> g(mu_);
  ++counters_.stream_synchronize;
  complete_stream_locked(stream);
}

void FakeDevice::device_synchronize() {
  std::lock_guard<std::mutex> g(mu_);
  ++counters_.device_synchronize;
  for (auto& [e, s] : events_) s.pending = false;
}

void* FakeDevice::vm_reserve(size_t size, size_t alignment) {
  std::lock_guard<std::mutex> g(mu_);
  KILN_CHECK(options_.vm_granularity > 0, "[fake_device] virtual memory is disabled");
  ++counters_.vm_reserve;
  if (alignment == 0) alignment = 1;
  size_t span = size + alignment;
  void* raw = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  uintptr_t base = round_up(begin, alignment);
  // Trim the unaligned head and the tail so that exactly [base, base + size) stays reserved.
  if (base > begin) munmap(raw, base - begin);
  uintptr_t end = begin + span;
  if (end > base + size) munmap(reinterpret_cast<void*>(base + size), end - (base + size));
  reservations_.emplace(base, size);
  return reinterpret_cast<void*>(base);
}

void FakeDevice::vm_free(void* base, size_t size) {
  std::lock_guard<std::mutex> g(mu_);
  uintptr_t b = reinterpret_cast<uintptr_t>(base);
  auto it = reservations_.find(b);
  KILN_CHECK(it != reservations_.end() && it->second == size,
             "[fake_device] vm_free of a range that was not reserved: ", base, " size ", size);
  auto m = mappings_.lower_bound(b);
  KILN_CHECK(m == mappings_.end() || m->first >= b + size,
             "[fake_device] vm_free of a range that still has mapped chunks");
  ++counters_.vm_free;
  munmap(base, size);
  reservations_.erase(it);
}

PhysHandle FakeDevice::vm_create(size_t size) {
  std::lock_guard<std::mutex> g(mu_);
  KILN_CHECK(options_.vm_granularity > 0 && size > 0 && size % options_.vm_granularity == 0,
             "[fake_device] vm_create size ", size, " is not a multiple of the granularity ",
             options_.vm_granularity);
  ++counters_.vm_create;
  if (used_ + size > options_.capacity) {
    ++counters_.vm_create_failed;
    return 0;
  }
  PhysHandle h = next_phys_++;
  phys_.emplace(h, size);
  used_ += size;
  return h;
}

void FakeDevice::vm_release(PhysHandle handle) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = phys_.find(handle);
  KILN_CHECK(it != phys_.end(), "[fake_device] vm_release of unknown handle ", handle);
  for (auto& [addr, m] : mappings_) {
    KILN_CHECK(m.handle != handle, "[fake_device] vm_release of a handle that is still mapped");
  }
  ++counters_.vm_release;
  used_ -= it->second;
  phys_.erase(it);
}

const std::pair<const uintptr_t, size_t>* FakeDevice::find_reservation(uintptr_t addr,
                                                                       size_t size) const {
  auto it = reservations_.upper_bound(addr);
  if (it == reservations_.begin()) return nullptr;
  --it;
  if (addr + size > it->first + it->second) return nullptr;
  return &*it;
}

void FakeDevice::vm_map(void* addr, size_t size, PhysHandle handle) {
  std::lock_guard<std::mutex> g(mu_);
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  auto ph = phys_.find(handle);
  KILN_CHECK(ph != phys_.end() && ph->second == size, "[fake_device] vm_map: handle ", handle,
             " unknown or not of size ", size);
  KILN_CHECK(a % options_.vm_granularity == 0, "[fake_device] vm_map: unaligned address ", addr);
  KILN_CHECK(find_reservation(a, size) != nullptr,
             "[fake_device] vm_map outside any reserved range: ", addr);
  auto next = mappings_.lower_bound(a);
  KILN_CHECK(next == mappings_.end() || next->first >= a + size,
             "[fake_device] vm_map over an existing mapping at ", addr);
  if (next != mappings_.begin()) {
    auto prev = std::prev(next);
    KILN_CHECK(prev->first + prev->second.size <= a,
               "[fake_device] vm_map over an existing mapping at ", addr);
  }
  for (auto& [addr2, m] : mappings_) {
    KILN_CHECK(m.handle != handle, "[fake_device] vm_map: handle ", handle, " is already mapped");
  }
  void* r =
      mmap(addr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  KILN_CHECK(r == addr, "[fake_device] mmap failed while mapping ", size, " bytes");
  ++counters_.vm_map;
  mappings_.emplace(a, Mapping{size, handle});
}

void FakeDevice::vm_unmap(void* addr, size_t size) {
  std::lock_guard<std::mutex> g(mu_);
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  // The range must consist of whole mapped chunks, as cuMemUnmap requires.
  uintptr_t cur = a;
  while (cur < a + size) {
    auto it = mappings_.find(cur);
    KILN_CHECK(it != mappings_.end(), "[fake_device] vm_unmap of an unmapped address ",
               reinterpret_cast<void*>(cur));
    cur += it->second.size;
  }
  KILN_CHECK(cur == a + size, "[fake_device] vm_unmap splits a mapped chunk");
  for (cur = a; cur < a + size;) {
    auto it = mappings_.find(cur);
    cur += it->second.size;
    mappings_.erase(it);
  }
  // Give the pages back to the host but keep the address range reserved.
  mmap(addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  ++counters_.vm_unmap;
}

void FakeDevice::set_capacity(size_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  options_.capacity = bytes;
}

size_t FakeDevice::capacity() const {
  std::lock_guard<std::mutex> g(mu_);
  return options_.capacity;
}

size_t FakeDevice::used() const {
  std::lock_guard<std::mutex> g(mu_);
  return used_;
}

size_t FakeDevice::live_allocations() const {
  std::lock_guard<std::mutex> g(mu_);
  return allocations_.size();
}

size_t FakeDevice::live_phys_handles() const {
  std::lock_guard<std::mutex> g(mu_);
  return phys_.size();
}

size_t FakeDevice::live_reservations() const {
  std::lock_guard<std::mutex> g(mu_);
  return reservations_.size();
}

FakeDevice::Counters FakeDevice::counters() const {
  std::lock_guard<std::mutex> g(mu_);
  return counters_;
}

void FakeDevice::complete_stream_locked(StreamHandle stream) {
  for (auto& [e, s] : events_) {
    if (s.stream == stream) s.pending = false;
  }
}

void FakeDevice::complete_stream(StreamHandle stream) {
  std::lock_guard<std::mutex> g(mu_);
  complete_stream_locked(stream);
}

void FakeDevice::complete_all() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [e, s] : events_) s.pending = false;
}

size_t FakeDevice::pending_events() const {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (auto& [e, s] : events_) n += s.pending ? 1 : 0;
  return n;
}

bool FakeDevice::vm_is_mapped(const void* addr, size_t size) const {
  std::lock_guard<std::mutex> g(mu_);
  uintptr_t cur = reinterpret_cast<uintptr_t>(addr);
  uintptr_t end = cur + size;
  while (cur < end) {
    auto it = mappings_.upper_bound(cur);
    if (it == mappings_.begin()) return false;
    --it;
    if (cur >= it->first + it->second.size) return false;
    cur = it->first + it->second.size;
  }
  return true;
}

}  // namespace kiln::gpu
