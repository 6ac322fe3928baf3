// CachingAllocator: kiln's GPU memory allocator, one per device, with PyTorch's
// CUDACachingAllocator rules, stats, snapshots and private pools. Plain C++ over DeviceApi.
//
// The rules (the same as PyTorch's, so that memory behaves as PyTorch users expect):
// - Sizes are rounded up to multiples of 512 B, or to power-of-two divisions where
//   roundup_power2_divisions says so. Requests of at most 1 MiB use the small pool, whose
//   segments are 2 MiB; larger ones use the large pool, with 20 MiB segments for requests under
//   10 MiB and segments of the request rounded up to 2 MiB otherwise.
// - A request takes the smallest cached free block of its pool on the same stream (best fit)
//   and splits it when the rest is worth keeping: >= 512 B in the small pool, > 1 MiB in the
//   large pool (and never for requests >= max_split_size). Freed blocks merge with free
//   neighbours. Blocks >= max_split_size ("oversize") are not split and serve only requests
//   within max_non_split_rounding_mb (default 20 MiB) of their size.
// - Blocks belong to the stream they were allocated on. record_stream(ptr, s) marks a use on
//   another stream: the free then records an event on each such stream and the block returns to
//   the cache only once they completed (checked at later allocations).
// - When the device is out of memory: free cached oversize blocks, retry; then wait on all
//   outstanding events, release every unused cached segment, retry; then throw kiln::Error
//   "[cuda] out of memory: tried to allocate ..." with requested / allocated / reserved / free
//   bytes. set_per_process_memory_fraction() caps reserved memory the same way, and
//   garbage_collection_threshold reclaims old cached blocks before reaching that cap.
// - expandable_segments:True grows one virtual range per stream and pool in place.
// - KILN_NO_CUDA_MEMORY_CACHING=1 returns every block to the device when freed (stats stay
//   exact); KILN_CUDA_ALLOC_CONF takes PYTORCH_CUDA_ALLOC_CONF's options.
// - Between begin_allocate_to_pool and end_allocate_to_pool, allocations on the matching
//   streams come from a private pool (graph capture); its blocks are never given to ordinary
//   allocations and its memory is released only after release_pool and empty_cache.
//
// Thread safety: every method may be called from any thread (one mutex per allocator).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu/alloc_config.h"
#include "backend/gpu/alloc_snapshot.h"
#include "backend/gpu/alloc_stats.h"
#include "backend/gpu/device_api.h"

namespace kiln::gpu {

namespace detail {
class AllocatorImpl;
}

class CachingAllocator {
 public:
  // Returns a caller context (e.g. "train.cpp:42 forward") recorded with each allocation
  // while memory history is on; lines become frames in the snapshot.
  using ContextFn = std::function<std::string()>;
  // Chooses the streams whose allocations go to a private pool; empty = every stream.
  using StreamFilter = std::function<bool(StreamHandle)>;

  // `device` must outlive the allocator. The default config comes from the environment.
  explicit CachingAllocator(DeviceApi& device,
                            AllocatorConfig config = AllocatorConfig::from_env());
  ~CachingAllocator();  // returns all device memory, including blocks still allocated
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  int device() const;

  // Allocates `size` bytes for use on `stream`; nullptr for size 0. Throws kiln::Error when
  // the device is out of memory.
  void* malloc(size_t size, StreamHandle stream = 0);
  // Frees a pointer returned by malloc (nullptr is ignored); throws kiln::Error otherwise.
  void free(void* ptr);
  // Marks the allocation `ptr` as used on `stream` too (see the rules above).
  void record_stream(void* ptr, StreamHandle stream);

  // Releases every cached segment that holds no allocation (like torch.cuda.empty_cache()).
  void empty_cache();
  // Caps reserved memory at fraction * total device memory.
  void set_per_process_memory_fraction(double fraction);
  // Replaces the settings at run time (torch.cuda.memory._set_allocator_settings).
  void set_config(const AllocatorConfig& config);
  AllocatorConfig config() const;

  DeviceStats stats() const;
  // The stats flattened as torch.cuda.memory_stats() shows them, sorted by key.
  std::vector<std::pair<std::string, int64_t>> memory_stats() const;
  void reset_peak_memory_stats();
  void reset_accumulated_memory_stats();
  size_t memory_allocated() const;      // allocated_bytes.all.current
  size_t max_memory_allocated() const;  // allocated_bytes.all.peak
  size_t memory_reserved() const;       // reserved_bytes.all.current
  size_t max_memory_reserved() const;   // reserved_bytes.all.peak

  // Starts or stops recording allocator actions in a ring buffer of `max_entries` (PyTorch's
  // default is unlimited); `context`, when given, is called at each allocation.
  void record_memory_history(bool enabled, size_t max_entries = SIZE_MAX, ContextFn context = {});
  Snapshot memory_snapshot();
  std::string memory_snapshot_json();
  // Writes the snapshot to `path` atomically: a pickle for *.pickle / *.pkl (what
  // pytorch.org/memory_viz opens), JSON otherwise.
  void dump_snapshot(const std::string& path);

  // Private pools (used by graph capture). Pools are shared by passing the same id.
  void begin_allocate_to_pool(PoolId id, StreamFilter filter = {});
  void end_allocate_to_pool(PoolId id);
  // Drops one use of the pool; at zero its cached memory is released by empty_cache or the
  // out-of-memory path.
  void release_pool(PoolId id);

 private:
  std::unique_ptr<detail::AllocatorImpl> impl_;
};

// A fresh private pool id {0, n}, as torch.cuda.graph_pool_handle() returns.
PoolId new_pool_id();

}  // namespace kiln::gpu
