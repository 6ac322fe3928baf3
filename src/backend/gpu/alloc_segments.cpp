// Segments of the caching allocator: getting them from the device (malloc or expandable
// growth), releasing cached ones (oversize first, then all), garbage collection, and unmapping
// free chunks of expandable segments.
#include <algorithm>
#include <limits>

#include "backend/gpu/alloc_impl.h"
#include "kiln/error.h"

namespace kiln::gpu::detail {

bool AllocatorImpl::alloc_block(AllocParams& p, bool is_retry, const Context& ctx) {
  const size_t size = p.alloc_size;
  if (is_retry) stats_.num_alloc_retries += 1;
  if (set_fraction_ && total_allocated_memory_ + size > allowed_memory_maximum_) return false;

  if (use_expandable_) {
    p.block = try_allocate_expandable_block(p.stream, p.pool, p.size, ctx);
    return p.block != nullptr;
  }

  void* ptr = api_.malloc(size);
  if (ptr == nullptr) return false;
  if (p.pool->owner) p.pool->owner->malloc_count += 1;
  total_allocated_memory_ += size;
  Block* b = new_block(p.stream, size, p.pool, static_cast<char*>(ptr));
  const bool small = p.pool->is_small;
  stat_add(stats_.segment, small, 1);
  stat_add(stats_.reserved_bytes, small, static_cast<int64_t>(size));
  if (size >= config_.max_split_size) stats_.oversize_segments.increase(1);
  stats_.num_device_alloc += 1;
  record_trace(TraceAction::kSegmentAlloc, reinterpret_cast<uintptr_t>(ptr), size, p.stream, ctx);
  b->segment_context = ctx;
  p.block = b;
  return true;
}

bool AllocatorImpl::release_available_cached_blocks(const AllocParams& p, const Context& ctx) {
  const size_t max_split = config_.max_split_size;
  if (max_split == std::numeric_limits<size_t>::max()) return false;
  BlockPool& pool = *p.pool;
  const size_t target = std::max(p.size, max_split);
  auto releasable = [](const Block* b) { return !b->expandable && !b->is_split(); };
  auto it = pool.blocks.lower_bound(BlockKey{p.stream, target, 0});
  if (it != pool.blocks.end() && (*it)->stream == p.stream && releasable(*it)) {
    // One cached oversize block is large enough: give it back.
    release_block(*it, ctx);
    return true;
  }
  // Otherwise free oversize blocks of this stream, largest first, until enough is released.
  if (it == pool.blocks.begin()) return false;
  size_t released = 0;
  --it;
  while (released < target && (*it)->size >= max_split && (*it)->stream == p.stream) {
    auto cur = it;
    const bool first = (it == pool.blocks.begin());
    if (!first) --it;
    if (releasable(*cur)) {
      released += (*cur)->size;
      release_block(*cur, ctx);
    }
    if (first) break;
  }
  return released >= target;
}

void AllocatorImpl::release_cached_blocks(const Context& ctx) {
  // Blocks still waiting for stream events are returned to the pools first.
  synchronize_and_free_events(ctx);
  release_blocks(large_, ctx);
  release_blocks(small_, ctx);
  for (auto it = graph_pools_freeable_.begin(); it != graph_pools_freeable_.end();) {
    PrivatePool* pp = it->second;
    KILN_ASSERT(pp->use_count == 0);
    release_blocks(pp->small, ctx);
    release_blocks(pp->large, ctx);
    if (pp->malloc_count == 0) {
      graph_pools_.erase(it->first);
      it = graph_pools_freeable_.erase(it);
    } else {
      ++it;
    }
  }
}

void AllocatorImpl::release_blocks(BlockPool& pool, const Context& ctx) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* b = *it;
    ++it;
    if (b->expandable) {
      to_unmap.push_back(b);  // unmapping changes the set: do it after the walk
    } else if (!b->is_split()) {
      release_block(b, ctx);
    }
  }
  for (Block* b : to_unmap) {
    unmap_block(b, ctx);
    if (!b->mapped && !b->prev && !b->next) release_expandable_segment(b);
  }
}

void AllocatorImpl::release_block(Block* block, const Context& ctx) {
  KILN_ASSERT(!block->expandable && !block->is_split());
  stats_.num_device_free += 1;
  record_trace(TraceAction::kSegmentFree, reinterpret_cast<uintptr_t>(block->ptr), block->size,
               block->stream, ctx ? ctx : block->segment_context);
  BlockPool* pool = block->pool;
  pool->erase(block);
  api_.free(block->ptr);
  total_allocated_memory_ -= block->size;
  if (pool->owner) {
    KILN_ASSERT(pool->owner->malloc_count > 0);
    pool->owner->malloc_count -= 1;
  }
  stat_sub(stats_.segment, pool->is_small, 1);
  stat_sub(stats_.reserved_bytes, pool->is_small, static_cast<int64_t>(block->size));
  if (block->size >= config_.max_split_size) stats_.oversize_segments.decrease(1);
  delete_block(block);
}

void AllocatorImpl::garbage_collect_cached_blocks(const Context& ctx) {
  // Reclaims cached large segments, oldest (least recently reusable) first, until reserved
  // memory is back under threshold * allowed maximum. Unlike release_cached_blocks it does
  // not synchronize.
  const auto threshold = static_cast<size_t>(config_.garbage_collection_threshold *
                                             static_cast<double>(allowed_memory_maximum_));
  if (total_allocated_memory_ <= threshold) return;
  const size_t target = total_allocated_memory_ - threshold;
  auto freeable = [](const Block* b) { return !b->is_split() && !b->expandable; };
  auto age = [](const Block* b) { return b->pool->get_free_blocks_call_count - b->gc_count_base; };

  int64_t total_age = 0;
  int freeable_count = 0;
  for (Block* b : large_.blocks) {
    if (freeable(b)) {
      total_age += age(b);
      ++freeable_count;
    }
  }
  size_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && freeable_count > 0) {
    // Free the blocks at least as old as the average; repeat with the younger ones if needed.
    const double threshold_age = static_cast<double>(total_age) / freeable_count;
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* b = *it;
      ++it;
      if (freeable(b) && static_cast<double>(age(b)) >= threshold_age) {
        freed = true;
        reclaimed += b->size;
        total_age -= age(b);
        --freeable_count;
        release_block(b, ctx);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Expandable segments (Note [Expandable segments] in alloc_block.cpp).

Block* AllocatorImpl::find_expandable_block(StreamHandle stream, BlockPool* pool, size_t size) {
  auto allocatable = [](const Block* b) {
    return b && !b->allocated && b->event_count == 0 && b->stream_uses.empty();
  };
  auto has_room = [&](const Block* b) {
    size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  // The lowest unmapped range of this stream (with the free block before it) that fits.
  for (auto it = pool->unmapped.lower_bound(BlockKey{stream, 0, 0});
       it != pool->unmapped.end() && (*it)->stream == stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;
    if (has_room(c)) return c;
  }
  // None: reserve a new range for this stream and pool.
  const size_t granularity = api_.vm_granularity();
  size_t chunk = pool->is_small ? kSmallBuffer : kLargeBuffer;
  chunk = (chunk + granularity - 1) / granularity * granularity;
  const size_t total = api_.mem_get_info().total;
  auto segment =
      std::make_unique<ExpandableSegment>(api_, stream, std::max(total + total / 8, chunk), chunk);
  Block* c = new_block(stream, segment->size(), pool, segment->ptr());
  c->mapped = false;
  c->expandable = segment.get();
  expandable_segments_.push_back(std::move(segment));
  pool->unmapped.insert(c);
  if (pool->owner) pool->owner->malloc_count += 1;
  return c;
}

bool AllocatorImpl::map_block(Block* to_map, size_t size, const Context& ctx) {
  KILN_ASSERT(!to_map->mapped && size <= to_map->size);
  auto range = to_map->expandable->map(ExpandableSegment::Range{to_map->ptr, size});
  if (range.size == 0) return false;  // out of memory
  KILN_ASSERT(range.ptr == to_map->ptr && range.size >= size);
  BlockPool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (range.size < to_map->size) {
    // to_map -> rest (still unmapped) -> to_map->next
    Block* rest =
        new_block(to_map->stream, to_map->size - range.size, &pool, to_map->ptr + range.size);
    rest->mapped = false;
    rest->expandable = to_map->expandable;
    rest->splice(to_map, to_map->next);
    pool.unmapped.insert(rest);
    to_map->size = range.size;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  pool.insert(to_map);

  total_allocated_memory_ += range.size;
  stat_add(stats_.reserved_bytes, pool.is_small, static_cast<int64_t>(range.size));
  stats_.num_device_alloc += 1;
  record_trace(TraceAction::kSegmentMap, reinterpret_cast<uintptr_t>(range.ptr), range.size,
               to_map->stream, ctx);
  if (!to_map->prev && !to_map->segment_context) to_map->segment_context = ctx;
  return true;
}

Block* AllocatorImpl::try_allocate_expandable_block(StreamHandle stream, BlockPool* pool,
                                                    size_t size, const Context& ctx) {
  Block* candidate = find_expandable_block(stream, pool, size);
  // candidate starts a run with room for `size`: unmapped, or free followed by unmapped.
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), ctx)) {
    return nullptr;
  }
  KILN_ASSERT(candidate->mapped);
  while (candidate->size < size) {
    // free -> unmapped: map what is missing; map_block merges it with the free block.
    Block* next = candidate->next;
    if (!map_block(next, std::min(size - candidate->size, next->size), ctx)) return nullptr;
    candidate = next;
  }
  pool->erase(candidate);
  return candidate;
}

void AllocatorImpl::unmap_block(Block* block, const Context& ctx) {
  auto range = block->expandable->unmap(ExpandableSegment::Range{block->ptr, block->size});
  if (range.size == 0) return;
  BlockPool& pool = *block->pool;
  pool.erase(block);
  // Parts of the block outside whole chunks stay mapped and free.
  const size_t before = static_cast<size_t>(range.ptr - block->ptr);
  if (before > 0) {
    Block* head = new_block(block->stream, before, &pool, block->ptr);
    head->expandable = block->expandable;
    head->splice(block->prev, block);
    head->segment_context = std::move(block->segment_context);
    pool.insert(head);
  }
  const size_t after = block->size - (before + range.size);
  if (after > 0) {
    Block* tail = new_block(block->stream, after, &pool, range.ptr + range.size);
    tail->expandable = block->expandable;
    tail->splice(block, block->next);
    pool.insert(tail);
  }
  block->ptr = range.ptr;
  block->size = range.size;
  block->mapped = false;
  try_merge_blocks(block, block->prev, pool);
  try_merge_blocks(block, block->next, pool);
  pool.unmapped.insert(block);

  total_allocated_memory_ -= range.size;
  stat_sub(stats_.reserved_bytes, pool.is_small, static_cast<int64_t>(range.size));
  stats_.num_device_free += 1;
  record_trace(TraceAction::kSegmentUnmap, reinterpret_cast<uintptr_t>(range.ptr), range.size,
               block->stream, ctx ? ctx : block->segment_context);
}

void AllocatorImpl::release_expandable_segment(Block* block) {
  KILN_ASSERT(block->size == block->expandable->size() && !block->mapped);
  auto it = std::find_if(expandable_segments_.begin(), expandable_segments_.end(),
                         [&](const auto& s) { return s.get() == block->expandable; });
  KILN_ASSERT(it != expandable_segments_.end());
  BlockPool* pool = block->pool;
  pool->unmapped.erase(block);
  if (pool->owner) {
    KILN_ASSERT(pool->owner->malloc_count > 0);
    pool->owner->malloc_count -= 1;
  }
  expandable_segments_.erase(it);
  delete_block(block);
}

}  // namespace kiln::gpu::detail
