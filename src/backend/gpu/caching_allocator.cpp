// CachingAllocator's public methods and the allocation / free paths: best-fit search, block
// splitting and merging, stream events, and the out-of-memory ladder.
#include "backend/gpu/caching_allocator.h"

#include <algorithm>
#include <chrono>

#include "backend/gpu/alloc_impl.h"
#include "kiln/error.h"

namespace kiln::gpu {

using detail::AllocParams;
using detail::Block;
using detail::BlockKey;
using detail::BlockPool;
using detail::Context;

// ---------------------------------------------------------------------------------------------
// Public surface.

CachingAllocator::CachingAllocator(DeviceApi& device, AllocatorConfig config)
    : impl_(std::make_unique<detail::AllocatorImpl>(device, std::move(config))) {}
CachingAllocator::~CachingAllocator() = default;

int CachingAllocator::device() const { return impl_->device(); }
void* CachingAllocator::malloc(size_t size, StreamHandle stream) {
  return size == 0 ? nullptr : impl_->malloc(size, stream);
}
void CachingAllocator::free(void* ptr) {
  if (ptr != nullptr) impl_->free(ptr);
}
void CachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  if (ptr != nullptr) impl_->record_stream(ptr, stream);
}
void CachingAllocator::empty_cache() { impl_->empty_cache(); }
void CachingAllocator::set_per_process_memory_fraction(double fraction) {
  impl_->set_memory_fraction(fraction);
}
void CachingAllocator::set_config(const AllocatorConfig& config) { impl_->set_config(config); }
AllocatorConfig CachingAllocator::config() const { return impl_->config(); }
DeviceStats CachingAllocator::stats() const { return impl_->stats(); }
std::vector<std::pair<std::string, int64_t>> CachingAllocator::memory_stats() const {
  return flatten_stats(impl_->stats());
}
void CachingAllocator::reset_peak_memory_stats() { impl_->reset_peak_stats(); }
void CachingAllocator::reset_accumulated_memory_stats() { impl_->reset_accumulated_stats(); }
size_t CachingAllocator::memory_allocated() const {
  return static_cast<size_t>(impl_->stats().allocated_bytes[kStatAll].current);
}
size_t CachingAllocator::max_memory_allocated() const {
  return static_cast<size_t>(impl_->stats().allocated_bytes[kStatAll].peak);
}
size_t CachingAllocator::memory_reserved() const {
  return static_cast<size_t>(impl_->stats().reserved_bytes[kStatAll].current);
}
size_t CachingAllocator::max_memory_reserved() const {
  return static_cast<size_t>(impl_->stats().reserved_bytes[kStatAll].peak);
}
void CachingAllocator::record_memory_history(bool enabled, size_t max_entries, ContextFn context) {
  impl_->record_history(enabled, max_entries, std::move(context));
}
Snapshot CachingAllocator::memory_snapshot() { return impl_->snapshot(); }
std::string CachingAllocator::memory_snapshot_json() { return snapshot_to_json(impl_->snapshot()); }
void CachingAllocator::dump_snapshot(const std::string& path) {
  Snapshot s = impl_->snapshot();
  auto ends_with = [&](const char* suffix) {
    std::string_view p(path), x(suffix);
    return p.size() >= x.size() && p.substr(p.size() - x.size()) == x;
  };
  bool pickle = ends_with(".pickle") || ends_with(".pkl");
  write_file_atomically(path, pickle ? snapshot_to_pickle(s) : snapshot_to_json(s));
}
void CachingAllocator::begin_allocate_to_pool(PoolId id, StreamFilter filter) {
  impl_->begin_allocate_to_pool(id, std::move(filter));
}
void CachingAllocator::end_allocate_to_pool(PoolId id) { impl_->end_allocate_to_pool(id); }
void CachingAllocator::release_pool(PoolId id) { impl_->release_pool(id); }

PoolId new_pool_id() {
  static std::atomic<uint64_t> next{1};
  return PoolId{0, next.fetch_add(1)};
}

namespace detail {

// ---------------------------------------------------------------------------------------------
// Allocation.

Context AllocatorImpl::gather_context() {
  std::shared_ptr<const CachingAllocator::ContextFn> fn;
  {
    std::lock_guard<std::mutex> g(mu_);
    fn = context_fn_;
  }
  // Called without the lock: the callback may do anything, including allocate.
  if (!fn || !*fn) return nullptr;
  return std::make_shared<const std::string>((*fn)());
}

void* AllocatorImpl::malloc(size_t size, StreamHandle stream) {
  Context ctx;
  if (KILN_UNLIKELY(context_enabled_.load(std::memory_order_relaxed))) ctx = gather_context();
  std::lock_guard<std::mutex> g(mu_);
  return malloc_block(size, stream, ctx)->ptr;
}

Block* AllocatorImpl::malloc_block(size_t orig_size, StreamHandle stream, const Context& ctx) {
  // Cross-stream frees are completed here. During a capture event queries are not allowed, so
  // they wait until it ends.
  if (KILN_UNLIKELY(!events_.empty() || !deferred_.empty()) && captures_.empty()) {
    process_events(ctx);
  }
  const size_t size = round_size(orig_size, config_);
  BlockPool& pool = get_pool(size, stream);
  // Uncached allocations get a segment of exactly their size.
  const size_t alloc_size = config_.caching_enabled ? allocation_size(size) : size;
  AllocParams p{stream, size, &pool, alloc_size};

  bool found = get_free_block(p);
  if (!found) {
    if (KILN_UNLIKELY(set_fraction_ && config_.garbage_collection_threshold > 0.0)) {
      garbage_collect_cached_blocks(ctx);
    }
    // The out-of-memory ladder: a plain attempt; then free cached oversize blocks and retry;
    // then wait for all stream events, free every unused cached segment and retry (not during
    // a capture, where synchronizing and freeing device memory are not allowed).
    found = alloc_block(p, false, ctx);
    if (!found && release_available_cached_blocks(p, ctx)) found = alloc_block(p, false, ctx);
    if (!found && captures_.empty()) {
      release_cached_blocks(ctx);
      found = alloc_block(p, true, ctx);
    }
  }
  if (!found) throw_oom(p, orig_size, ctx);
  return alloc_found_block(p, orig_size, ctx, should_split(p.block, p.size));
}

BlockPool& AllocatorImpl::get_capture_pool(size_t size, StreamHandle stream) {
  for (auto& [id, filter] : captures_) {
    if (!filter || filter(stream)) {
      PrivatePool& pp = *graph_pools_.at(id);
      return size <= kSmallSize ? pp.small : pp.large;
    }
  }
  return size <= kSmallSize ? small_ : large_;
}

bool AllocatorImpl::get_free_block(AllocParams& p) {
  BlockPool& pool = *p.pool;
  if (KILN_UNLIKELY(set_fraction_ && config_.garbage_collection_threshold > 0.0)) {
    // Ages cached blocks for the garbage collector: one tick per search.
    ++pool.get_free_blocks_call_count;
  }
  auto it = pool.blocks.lower_bound(BlockKey{p.stream, p.size, 0});
  if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
  if ((*it)->expandable) {
    if (use_expandable_) {
      // A free block at the end of an expandable segment can grow into the unmapped space after
      // it; for best fit count that space too.
      auto grown = [](const Block* b) {
        return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable && next != pool.blocks.end() && (*next)->stream == p.stream &&
             grown(*next) < grown(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments were switched off: use only ordinary blocks.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable && (*it)->stream == p.stream);
      if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    }
  }
  const size_t max_split = config_.max_split_size;
  // An oversize block is kept for oversize requests...
  if (p.size < max_split && (*it)->size >= max_split) return false;
  // ... that it does not exceed by too much.
  if (p.size >= max_split && (*it)->size >= p.size + config_.max_non_split_rounding_size) {
    return false;
  }
  p.block = *it;
  pool.erase(it);
  return true;
}

bool AllocatorImpl::should_split(const Block* block, size_t size) const {
  size_t remaining = block->size - size;
  if (block->pool->is_small || use_expandable_) return remaining >= kMinBlockSize;
  return size < config_.max_split_size && remaining > kSmallSize;
}

Block* AllocatorImpl::alloc_found_block(AllocParams& p, size_t orig_size, const Context& ctx,
                                        bool split) {
  Block* block = p.block;
  const bool small = p.pool->is_small;
  const bool already_split = block->is_split();
  if (split) {
    // The front of the free block is handed out; the rest stays cached.
    Block* rest = block;
    block = new_block(p.stream, p.size, p.pool, rest->ptr);
    block->expandable = rest->expandable;
    block->prev = rest->prev;
    if (block->prev) {
      block->prev->next = block;
    } else {
      block->segment_context = std::move(rest->segment_context);  // the head moved
    }
    block->next = rest;
    rest->prev = block;
    rest->ptr += p.size;
    rest->size -= p.size;
    p.pool->insert(rest);
    if (!block->expandable) {
      if (already_split) {
        // An inactive split block shrank.
        stat_sub(stats_.inactive_split_bytes, small, static_cast<int64_t>(block->size));
      } else {
        // A whole segment became split: its rest is a new inactive split block.
        stat_add(stats_.inactive_split_bytes, small, static_cast<int64_t>(rest->size));
        stat_add(stats_.inactive_split, small, 1);
      }
    }
  } else if (already_split && !block->expandable) {
    stat_sub(stats_.inactive_split_bytes, small, static_cast<int64_t>(block->size));
    stat_sub(stats_.inactive_split, small, 1);
  }

  block->allocated = true;
  block->requested_size = orig_size;
  block->context = ctx;
  record_trace(TraceAction::kAlloc, reinterpret_cast<uintptr_t>(block->ptr), orig_size,
               block->stream, ctx);
  allocated_.insert(block->ptr, block);

  const auto bytes = static_cast<int64_t>(block->size);
  stat_add(stats_.allocation, small, 1);
  stat_add(stats_.allocated_bytes, small, bytes);
  stat_add(stats_.active, small, 1);
  stat_add(stats_.active_bytes, small, bytes);
  stat_add(stats_.requested_bytes, small, static_cast<int64_t>(orig_size));
  if (block->size >= config_.max_split_size) stats_.oversize_allocations.increase(1);
  return block;
}

// ---------------------------------------------------------------------------------------------
// Free.

void AllocatorImpl::free(void* ptr) {
  std::lock_guard<std::mutex> g(mu_);
  Block* block = allocated_.erase(ptr);
  KILN_CHECK(block != nullptr, "[cuda] free: invalid device pointer ", ptr,
             " (not allocated by the caching allocator of device ", device_, ", or already freed)");
  block->allocated = false;
  const bool small = block->pool->is_small;
  stat_sub(stats_.allocation, small, 1);
  stat_sub(stats_.allocated_bytes, small, static_cast<int64_t>(block->size));
  record_trace(TraceAction::kFreeRequested, reinterpret_cast<uintptr_t>(block->ptr),
               block->requested_size, block->stream, block->context);
  if (block->size >= config_.max_split_size) stats_.oversize_allocations.decrease(1);

  if (!block->stream_uses.empty()) {
    if (KILN_UNLIKELY(!captures_.empty())) {
      // Events recorded during a capture must not be queried: wait until it ends.
      deferred_.push_back(block);
    } else {
      insert_events(block);
    }
  } else {
    free_block(block, nullptr);
  }
}

void AllocatorImpl::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard<std::mutex> g(mu_);
  Block* block = allocated_.find(ptr);
  KILN_CHECK(block != nullptr, "[cuda] record_stream: invalid device pointer ", ptr,
             " (not allocated by the caching allocator of device ", device_, ")");
  // Uses on the allocation stream are ordered with the free already.
  if (stream == block->stream) return;
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void AllocatorImpl::free_block(Block* block, const Context& ctx) {
  KILN_ASSERT(!block->allocated && block->event_count == 0 && block->stream_uses.empty());
  record_trace(TraceAction::kFreeCompleted, reinterpret_cast<uintptr_t>(block->ptr),
               block->requested_size, block->stream, ctx ? ctx : block->context);
  block->context.reset();
  const size_t original_size = block->size;
  const size_t requested = block->requested_size;
  BlockPool& pool = *block->pool;

  int64_t net_blocks = 0, net_bytes = 0;
  Block* const neighbours[2] = {block->prev, block->next};
  for (Block* n : neighbours) {
    size_t merged = try_merge_blocks(block, n, pool);
    if (merged > 0) {
      net_blocks -= 1;
      net_bytes -= static_cast<int64_t>(merged);
    }
  }
  pool.insert(block);
  if (block->is_split()) {
    net_blocks += 1;
    net_bytes += static_cast<int64_t>(block->size);
  }

  const bool small = pool.is_small;
  // Free chunks of expandable segments can always be unmapped, so they do not count as
  // inactive split memory (as in PyTorch).
  if (!block->expandable) {
    if (net_blocks > 0) stat_add(stats_.inactive_split, small, net_blocks);
    if (net_blocks < 0) stat_sub(stats_.inactive_split, small, -net_blocks);
    if (net_bytes > 0) stat_add(stats_.inactive_split_bytes, small, net_bytes);
    if (net_bytes < 0) stat_sub(stats_.inactive_split_bytes, small, -net_bytes);
  }
  stat_sub(stats_.active, small, 1);
  stat_sub(stats_.active_bytes, small, static_cast<int64_t>(original_size));
  stat_sub(stats_.requested_bytes, small, static_cast<int64_t>(requested));

  if (KILN_UNLIKELY(!config_.caching_enabled) && !block->expandable && !block->is_split()) {
    release_block(block, ctx);
  }
}

size_t AllocatorImpl::try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
  if (!src || src->allocated || src->event_count > 0 || !src->stream_uses.empty() ||
      dst->mapped != src->mapped) {
    return 0;
  }
  KILN_ASSERT(dst->is_split() && src->is_split());
  // Take src out of its set while its key is still intact.
  if (src->mapped) {
    pool.erase(src);
  } else {
    size_t n = pool.unmapped.erase(src);
    KILN_ASSERT(n == 1);
  }
  if (dst->prev == src) {  // [src dst]
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
    dst->segment_context = std::move(src->segment_context);
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  const size_t subsumed = src->size;
  dst->size += subsumed;
  delete_block(src);
  return subsumed;
}

[[noreturn]] void AllocatorImpl::throw_oom(const AllocParams& p, size_t orig_size,
                                           const Context& ctx) {
  MemInfo info = api_.mem_get_info();
  record_trace(TraceAction::kOom, info.free, p.size, p.stream, ctx);
  stats_.num_ooms += 1;
  const auto allocated = static_cast<uint64_t>(stats_.allocated_bytes[kStatAll].current);
  const auto reserved = static_cast<uint64_t>(stats_.reserved_bytes[kStatAll].current);
  uint64_t private_cached = 0;
  for (auto& [id, pp] : graph_pools_) {
    for (Block* b : pp->small.blocks) private_cached += b->size;
    for (Block* b : pp->large.blocks) private_cached += b->size;
  }
  auto sz = [](uint64_t n) { return format_size(n) + " (" + std::to_string(n) + " bytes)"; };
  std::string allowed, priv;
  if (set_fraction_) {
    allowed = "; " + sz(allowed_memory_maximum_) + " allowed by set_per_process_memory_fraction";
  }
  if (private_cached > 0) {
    priv = "; " + sz(private_cached) + " cached in private pools (graph capture)";
  }
  KILN_ERROR("[cuda] out of memory: tried to allocate ", sz(orig_size), "; ", sz(allocated),
             " allocated by kiln, ", sz(reserved), " reserved (", sz(reserved - allocated),
             " reserved but unallocated), ", sz(info.free), " free of ", sz(info.total),
             " total on device ", device_, allowed, priv,
             ". If reserved but unallocated memory is large, try "
             "KILN_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.");
}

// ---------------------------------------------------------------------------------------------
// Stream events.

EventHandle AllocatorImpl::get_event() {
  if (!event_pool_.empty()) {
    EventHandle e = event_pool_.back();
    event_pool_.pop_back();
    return e;
  }
  return api_.event_create();
}

void AllocatorImpl::insert_events(Block* block) {
  std::vector<StreamHandle> streams = std::move(block->stream_uses);
  block->stream_uses.clear();
  for (StreamHandle s : streams) {
    EventHandle e = get_event();
    api_.event_record(e, s);
    ++block->event_count;
    auto it = std::find_if(events_.begin(), events_.end(),
                           [s](const StreamEvents& se) { return se.stream == s; });
    if (it == events_.end()) it = events_.insert(events_.end(), StreamEvents{s, {}});
    it->queue.emplace_back(e, block);
  }
}

void AllocatorImpl::insert_deferred_events(const Context& ctx) {
  if (deferred_.empty()) return;
  std::vector<Block*> blocks = std::move(deferred_);
  deferred_.clear();
  for (Block* b : blocks) {
    insert_events(b);
    if (b->event_count == 0) free_block(b, ctx);
  }
}

void AllocatorImpl::process_events(const Context& ctx) {
  insert_deferred_events(ctx);
  // One queue per stream, so a busy stream does not hold back blocks of an idle one.
  for (auto it = events_.begin(); it != events_.end();) {
    auto& q = it->queue;
    while (!q.empty()) {
      auto [event, block] = q.front();
      if (!api_.event_query(event)) break;
      q.pop_front();
      event_pool_.push_back(event);
      if (--block->event_count == 0) free_block(block, ctx);
    }
    it = q.empty() ? events_.erase(it) : std::next(it);
  }
}

void AllocatorImpl::synchronize_and_free_events(const Context& ctx) {
  stats_.num_sync_all_streams += 1;
  KILN_ASSERT(captures_.empty());
  insert_deferred_events(ctx);
  std::vector<StreamEvents> events = std::move(events_);
  events_.clear();
  for (auto& se : events) {
    for (auto [event, block] : se.queue) {
      api_.event_synchronize(event);
      event_pool_.push_back(event);
      if (--block->event_count == 0) free_block(block, ctx);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Block arena and history.

Block* AllocatorImpl::new_block(StreamHandle stream, size_t size, BlockPool* pool, char* ptr) {
  if (free_blocks_.empty()) {
    arena_.push_back(std::make_unique<Block[]>(kArenaChunk));
    for (size_t i = kArenaChunk; i-- > 0;) free_blocks_.push_back(&arena_.back()[i]);
  }
  Block* b = free_blocks_.back();
  free_blocks_.pop_back();
  b->stream = stream;
  b->size = size;
  b->requested_size = 0;
  b->pool = pool;
  b->ptr = ptr;
  b->allocated = false;
  b->mapped = true;
  b->live = true;
  b->event_count = 0;
  b->gc_count_base = 0;
  b->prev = b->next = nullptr;
  b->expandable = nullptr;
  return b;
}

void AllocatorImpl::delete_block(Block* block) {
  block->live = false;
  block->stream_uses.clear();
  block->context.reset();
  block->segment_context.reset();
  free_blocks_.push_back(block);
}

void AllocatorImpl::append_trace(TraceAction action, uintptr_t addr, size_t size,
                                 StreamHandle stream, const Context& ctx) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  TraceRecord r{action,
                addr,
                size,
                stream,
                std::chrono::duration_cast<std::chrono::microseconds>(now).count(),
                ctx};
  if (trace_.size() < trace_max_entries_) {
    trace_.push_back(std::move(r));
  } else {
    trace_[trace_next_] = std::move(r);
    trace_next_ = (trace_next_ + 1) % trace_max_entries_;
  }
}

}  // namespace detail
}  // namespace kiln::gpu
