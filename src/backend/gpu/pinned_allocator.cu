// Caching allocator of page-locked host memory (gpuHostAlloc), like PyTorch's
// CachingHostAllocator: power-of-two sizes, reuse guarded by events on the streams that used a
// block; and Tensor::pin_memory() / is_pinned() on top of it.

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/vendor.h"

#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/gpu/event.h"
#include "backend/gpu/pinned_allocator.h"
#include "backend/gpu/runtime.h"
#include "kiln/cuda.h"
#include "kiln/detail/tensor_impl.h"
#include "kiln/tensor.h"

namespace kiln::gpu {

namespace {

struct HostBlock {
  void* ptr = nullptr;
  size_t size = 0;
  bool allocated = false;
  std::vector<std::pair<int, StreamHandle>> streams;  // (device, stream) that used it
  std::vector<EventHandle> events;  // recorded on them at free; all done -> reusable
};

size_t round_pow2(size_t n) {
  size_t s = 512;
  while (s < n) s <<= 1;
  return s;
}

class HostAllocator {
 public:
  void* allocate(size_t nbytes) {
    size_t size = round_pow2(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    process_pending();
    auto it = free_.find(size);
    HostBlock* b = nullptr;
    if (it != free_.end() && !it->second.empty()) {
      b = it->second.back();
      it->second.pop_back();
    } else {
      void* p = nullptr;
      gpuError_t e = gpuHostAlloc(&p, size, gpuHostAllocDefault);
      if (e == gpuErrorMemoryAllocation) {
        (void)gpuGetLastError();
        release_free_blocks();
        e = gpuHostAlloc(&p, size, gpuHostAllocDefault);
      }
      if (e == gpuErrorMemoryAllocation) {
        (void)gpuGetLastError();
        KILN_ERROR("[pin_memory] out of page-locked host memory: tried to allocate ", size,
                   " bytes with ", reserved_, " bytes already reserved");
      }
      KILN_GPU_CHECK("pin_memory", e);
      b = new HostBlock();
      b->ptr = p;
      b->size = size;
      blocks_[reinterpret_cast<uintptr_t>(p)] = b;
      reserved_ += size;
    }
    b->allocated = true;
    allocated_ += b->size;
    return b->ptr;
  }

  void free(void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    KILN_ASSERT(it != blocks_.end() && it->second->allocated, "freeing unknown pinned memory");
    HostBlock* b = it->second;
    b->allocated = false;
    allocated_ -= b->size;
    for (auto [dev, s] : b->streams) {
      EventHandle e = event_create(dev, false, false, false);
      event_record(e, s, "pin_memory");
      b->events.push_back(e);
    }
    b->streams.clear();
    if (b->events.empty())
      free_[b->size].push_back(b);
    else
      pending_.push_back(b);
  }

  bool record_stream(const void* ptr, int device, StreamHandle stream) {
    std::lock_guard<std::mutex> lock(mu_);
    HostBlock* b = find(ptr);
    if (b == nullptr || !b->allocated) return false;
    for (auto [d, s] : b->streams)
      if (d == device && s == stream) return true;
    b->streams.emplace_back(device, stream);
    return true;
  }

  bool owns(const void* ptr) {
    std::lock_guard<std::mutex> lock(mu_);
    return find(ptr) != nullptr;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    process_pending();
    release_free_blocks();
  }

  size_t allocated() {
    std::lock_guard<std::mutex> lock(mu_);
    return allocated_;
  }
  size_t reserved() {
    std::lock_guard<std::mutex> lock(mu_);
    return reserved_;
  }

 private:
  HostBlock* find(const void* ptr) {
    auto a = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return nullptr;
    --it;
    HostBlock* b = it->second;
    return a < it->first + b->size ? b : nullptr;
  }

  // Moves blocks whose events all completed to the free lists.
  void process_pending() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      HostBlock* b = *it;
      bool done = true;
      for (EventHandle e : b->events) done = done && event_query(e, "pin_memory");
      if (!done) {
        ++it;
        continue;
      }
      for (EventHandle e : b->events) event_destroy(e);
      b->events.clear();
      free_[b->size].push_back(b);
      it = pending_.erase(it);
    }
  }

  void release_free_blocks() {
    for (auto& [size, list] : free_) {
      for (HostBlock* b : list) {
        (void)gpuFreeHost(b->ptr);
        blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        reserved_ -= b->size;
        delete b;
      }
      list.clear();
    }
  }

  std::mutex mu_;
  std::map<uintptr_t, HostBlock*> blocks_;  // every block, by address
  std::map<size_t, std::vector<HostBlock*>> free_;
  std::deque<HostBlock*> pending_;
  size_t allocated_ = 0, reserved_ = 0;
};

HostAllocator& host_allocator() {
  static auto* a = new HostAllocator();  // Note [Leaked at exit] (stream.cu)
  return *a;
}

void pinned_free(void* data, void*) {
  try {
    host_allocator().free(data);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: warning: freeing pinned memory failed: %s\n", e.what());
  }
}

}  // namespace

DataPtr pinned_allocate(size_t nbytes) {
  if (nbytes == 0) return {};
  resolve_device(-1, "pin_memory");  // a GPU (and its driver) is needed to page-lock memory
  return {host_allocator().allocate(nbytes), nullptr, &pinned_free};
}

bool pinned_record_stream(const void* ptr, int device, StreamHandle stream) {
  return host_allocator().record_stream(ptr, device, stream);
}

bool is_pinned_ptr(const void* ptr) {
  if (ptr == nullptr || device_count() == 0) return false;
  return host_allocator().owns(ptr) || gpuPointerIsPinnedHost(ptr);
}

size_t pinned_allocated_bytes() { return host_allocator().allocated(); }
size_t pinned_reserved_bytes() { return host_allocator().reserved(); }
void pinned_empty_cache() { host_allocator().empty_cache(); }

}  // namespace kiln::gpu

namespace kiln::detail {

bool is_pinned(const Tensor& t) {
  if (!t.defined() || !t.is_cpu() || !t.impl()->has_storage()) return false;
  return gpu::is_pinned_ptr(t.impl()->storage()->ptr.data);
}

Tensor pin_memory(const Tensor& t) {
  KILN_CHECK(t.defined(), "[pin_memory] called on an undefined tensor");
  KILN_CHECK(t.is_cpu(), "[pin_memory] cannot pin a tensor on ", t.device().str(),
             ": only CPU tensors can be pinned");
  if (is_pinned(t)) return t;
  size_t nbytes = static_cast<size_t>(t.numel()) * static_cast<size_t>(t.element_size());
  Storage st = Storage::make(gpu::pinned_allocate(nbytes), nbytes, Device(kCPU));
  auto impl = Ref<TensorImpl>::make(std::move(st), t.dtype(), Device(kCPU));
  impl->set_sizes_contiguous(t.sizes());
  Tensor out(std::move(impl));
  out.copy_(t);
  return out;
}

}  // namespace kiln::detail
