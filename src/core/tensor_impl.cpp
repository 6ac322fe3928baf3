// TensorImpl geometry bookkeeping and the CPU/default allocators.
#include "kiln/detail/tensor_impl.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "autograd/meta.h"
#include "kiln/error.h"

namespace kiln {
namespace detail {

void AutogradMetaDeleter::operator()(AutogradMeta* m) const { delete m; }

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  sizes_ = DimVector(sizes);
  strides_.resize(sizes.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides_[i] = s;
    s *= sizes[i] > 1 ? sizes[i] : 1;
  }
  numel_ = 1;
  for (int64_t v : sizes) numel_ *= v;
  contiguous_ = true;
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  offset_ = offset;
  refresh();
}

void TensorImpl::refresh() {
  numel_ = 1;
  for (int64_t v : sizes_) numel_ *= v;
  // PyTorch's rule: size-1 dims may have any stride; empty tensors are contiguous.
  bool c = true;
  if (numel_ != 0) {
    int64_t expect = 1;
    for (int64_t i = static_cast<int64_t>(sizes_.size()) - 1; i >= 0; --i) {
      if (sizes_[i] == 1) continue;
      if (strides_[i] != expect) {
        c = false;
        break;
      }
      expect *= sizes_[i];
    }
  }
  contiguous_ = c;
}

}  // namespace detail

namespace {

void cpu_free(void* data, void*) { std::free(data); }

// Note [CPU large-block cache]: buffers of 4 MiB and more come from mmap, so every fresh output
// would fault in (and the kernel would zero) new pages; PyTorch avoids that through glibc's
// adaptive mmap threshold. kiln keeps a few freed large blocks by rounded size and hands them out
// again: at most kCacheBlocks blocks and kCacheBytes bytes, oldest evicted first.
class LargeBlockCache {
 public:
  static constexpr size_t kCacheBlocks = 8;
  static constexpr size_t kCacheBytes = size_t(512) << 20;

  void* take(size_t size) {
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].second == size) {
        void* p = blocks_[i].first;
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
        bytes_ -= size;
        return p;
      }
    return nullptr;
  }
  void give(void* p, size_t size) {
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (size > kCacheBytes) {
        evicted.push_back(p);
      } else {
        blocks_.emplace_back(p, size);
        bytes_ += size;
        while (blocks_.size() > kCacheBlocks || bytes_ > kCacheBytes) {
          evicted.push_back(blocks_.front().first);
          bytes_ -= blocks_.front().second;
          blocks_.erase(blocks_.begin());
        }
      }
    }
    for (void* e : evicted) std::free(e);
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> blocks_;
  size_t bytes_ = 0;
};

LargeBlockCache& large_cache() {
  static auto* c = new LargeBlockCache();  // never destroyed: frees may run at exit
  return *c;
}

void cpu_free_large(void* data, void* ctx) {
  large_cache().give(data, reinterpret_cast<size_t>(ctx));
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return {};
    // Large buffers get 64-byte alignment for vector loads; small ones take malloc's fast path.
    // Buffers of 4 MiB and more are 2 MiB-aligned and marked for transparent huge pages: first
    // touch then faults 512x fewer pages (a fresh 64 MiB output costs a third of the time); they
    // are recycled through Note [CPU large-block cache].
    void* p = nullptr;
    constexpr size_t kHuge = size_t(2) << 20;
    if (nbytes < 4096) {
      p = std::malloc(nbytes);
    } else if (nbytes < 2 * kHuge) {
      p = std::aligned_alloc(64, (nbytes + 63) & ~size_t(63));
    } else {
      const size_t size = (nbytes + kHuge - 1) & ~(kHuge - 1);
      p = large_cache().take(size);
      if (p == nullptr) {
        p = std::aligned_alloc(kHuge, size);
#ifdef __linux__
        if (p) madvise(p, size, MADV_HUGEPAGE);  // advisory: failure only costs speed
#endif
      }
      KILN_CHECK(p != nullptr, "[cpu] out of memory: tried to allocate ", nbytes, " bytes");
      return {p, reinterpret_cast<void*>(size), &cpu_free_large};
    }
    KILN_CHECK(p != nullptr, "[cpu] out of memory: tried to allocate ", nbytes, " bytes");
    return {p, nullptr, &cpu_free};
  }
};

CpuAllocator g_cpu_allocator;
Allocator* g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr};

void blob_free(void* data, void* ctx) {
  auto* fn = static_cast<std::function<void(void*)>*>(ctx);
  if (*fn) (*fn)(data);
  delete fn;
}

}  // namespace

Allocator* get_allocator(DeviceType t) { return g_allocators[static_cast<int>(t)]; }
void set_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

Storage make_storage(size_t nbytes, Device device) {
  Allocator* a = get_allocator(device.type);
  KILN_CHECK(a != nullptr, "[", device.str(), "] kiln was built without GPU support");
  return Storage::make(a->allocate(nbytes), nbytes, device);
}

Storage make_storage_from_blob(void* data, size_t nbytes, Device device,
                               std::function<void(void*)> deleter) {
  auto* ctx = new std::function<void(void*)>(std::move(deleter));
  return Storage::make(DataPtr{data, ctx, &blob_free}, nbytes, device);
}

}  // namespace kiln
