// AllocatorImpl: the state and algorithms behind CachingAllocator. Public methods lock the
// mutex; the private ones expect it held. Split over caching_allocator.cpp (allocation paths),
// alloc_segments.cpp (device segments, release, expandable growth) and alloc_introspect.cpp
// (stats, history, snapshots, private pools, teardown).
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/gpu/alloc_block.h"
#include "backend/gpu/alloc_config.h"
#include "backend/gpu/alloc_snapshot.h"
#include "backend/gpu/alloc_stats.h"
#include "backend/gpu/caching_allocator.h"
#include "backend/gpu/device_api.h"
#include "kiln/macros.h"

namespace kiln::gpu::detail {

inline constexpr size_t kArenaChunk = 256;  // blocks per arena allocation

struct AllocParams {
  StreamHandle stream;
  size_t size;  // rounded request
  BlockPool* pool;
  size_t alloc_size;  // size of a new segment for it
  Block* block = nullptr;
};

class AllocatorImpl {
 public:
  AllocatorImpl(DeviceApi& api, AllocatorConfig config);
  ~AllocatorImpl();

  int device() const { return device_; }
  void* malloc(size_t size, StreamHandle stream);
  void free(void* ptr);
  void record_stream(void* ptr, StreamHandle stream);
  void empty_cache();
  void set_memory_fraction(double fraction);
  void set_config(const AllocatorConfig& config);
  AllocatorConfig config() const;

  DeviceStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();

  void record_history(bool enabled, size_t max_entries, CachingAllocator::ContextFn context);
  Snapshot snapshot();

  void begin_allocate_to_pool(PoolId id, CachingAllocator::StreamFilter filter);
  void end_allocate_to_pool(PoolId id);
  void release_pool(PoolId id);

 private:
  struct StreamEvents {
    StreamHandle stream;
    std::deque<std::pair<EventHandle, Block*>> queue;
  };
  struct TraceRecord {
    TraceAction action;
    uintptr_t addr;
    size_t size;
    StreamHandle stream;
    int64_t time_us;
    Context context;
  };

  // caching_allocator.cpp: the allocation and free paths.
  Context gather_context();
  Block* malloc_block(size_t orig_size, StreamHandle stream, const Context& ctx);
  BlockPool& get_pool(size_t size, StreamHandle stream) {
    if (KILN_LIKELY(captures_.empty())) return size <= kSmallSize ? small_ : large_;
    return get_capture_pool(size, stream);
  }
  BlockPool& get_capture_pool(size_t size, StreamHandle stream);
  bool get_free_block(AllocParams& p);
  bool should_split(const Block* block, size_t size) const;
  Block* alloc_found_block(AllocParams& p, size_t orig_size, const Context& ctx, bool split);
  void free_block(Block* block, const Context& ctx);
  size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool);
  [[noreturn]] void throw_oom(const AllocParams& p, size_t orig_size, const Context& ctx);
  void process_events(const Context& ctx);
  void insert_events(Block* block);
  void insert_deferred_events(const Context& ctx);
  void synchronize_and_free_events(const Context& ctx);
  EventHandle get_event();
  Block* new_block(StreamHandle stream, size_t size, BlockPool* pool, char* ptr);
  void delete_block(Block* block);
  void record_trace(TraceAction action, uintptr_t addr, size_t size, StreamHandle stream,
                    const Context& ctx) {
    if (KILN_UNLIKELY(record_history_)) append_trace(action, addr, size, stream, ctx);
  }
  void append_trace(TraceAction action, uintptr_t addr, size_t size, StreamHandle stream,
                    const Context& ctx);

  // alloc_segments.cpp: segments from the device and back.
  bool alloc_block(AllocParams& p, bool is_retry, const Context& ctx);
  bool release_available_cached_blocks(const AllocParams& p, const Context& ctx);
  void release_cached_blocks(const Context& ctx);
  void release_blocks(BlockPool& pool, const Context& ctx);
  void release_block(Block* block, const Context& ctx);
  void garbage_collect_cached_blocks(const Context& ctx);
  Block* find_expandable_block(StreamHandle stream, BlockPool* pool, size_t size);
  bool map_block(Block* to_map, size_t size, const Context& ctx);
  Block* try_allocate_expandable_block(StreamHandle stream, BlockPool* pool, size_t size,
                                       const Context& ctx);
  void unmap_block(Block* block, const Context& ctx);
  void release_expandable_segment(Block* block);

  // alloc_introspect.cpp
  std::vector<Block*> all_blocks() const;
  void apply_config(const AllocatorConfig& config);

  static void stat_add(StatArray& a, bool small, int64_t v) {
    a[kStatAll].increase(v);
    a[small ? kStatSmallPool : kStatLargePool].increase(v);
  }
  static void stat_sub(StatArray& a, bool small, int64_t v) {
    a[kStatAll].decrease(v);
    a[small ? kStatSmallPool : kStatLargePool].decrease(v);
  }

  DeviceApi& api_;
  const int device_;
  AllocatorConfig config_;
  bool use_expandable_ = false;  // config asks for it and the device supports it
  mutable std::mutex mu_;
  DeviceStats stats_;

  NodeCache nodes_;  // declared before the pools that use it
  BlockPool large_{false, nullptr, &nodes_};
  BlockPool small_{true, nullptr, &nodes_};
  PtrMap allocated_;  // allocated blocks by address

  std::vector<std::pair<PoolId, CachingAllocator::StreamFilter>> captures_;
  std::map<PoolId, std::unique_ptr<PrivatePool>> graph_pools_;
  std::map<PoolId, PrivatePool*> graph_pools_freeable_;

  std::vector<Block*> deferred_;      // freed with stream uses during a capture
  std::vector<StreamEvents> events_;  // outstanding events per stream, oldest first
  std::vector<EventHandle> event_pool_;

  size_t total_allocated_memory_ = 0;  // bytes held from the device
  size_t allowed_memory_maximum_ = 0;
  bool set_fraction_ = false;

  std::vector<std::unique_ptr<ExpandableSegment>> expandable_segments_;

  // Blocks come from an arena and are recycled, so splitting does not call operator new.
  std::vector<std::unique_ptr<Block[]>> arena_;
  std::vector<Block*> free_blocks_;

  // Memory history.
  bool record_history_ = false;
  std::atomic<bool> context_enabled_{false};
  std::shared_ptr<const CachingAllocator::ContextFn> context_fn_;
  size_t trace_max_entries_ = 1;
  size_t trace_next_ = 0;
  std::vector<TraceRecord> trace_;
};

}  // namespace kiln::gpu::detail
