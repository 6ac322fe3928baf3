// AllocatorImpl construction and teardown, settings, stats, memory history, snapshots, and the
// private pools used by graph capture.
#include <algorithm>
#include <limits>

#include "backend/gpu/alloc_impl.h"
#include "kiln/error.h"

namespace kiln::gpu::detail {

namespace {
std::string pool_name(PoolId id) {
  return "(" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")";
}
}  // namespace

AllocatorImpl::AllocatorImpl(DeviceApi& api, AllocatorConfig config)
    : api_(api), device_(api.device_index()) {
  apply_config(config);
  nodes_.reserve(1024);
  event_pool_.reserve(64);
}

AllocatorImpl::~AllocatorImpl() {
  // Hand everything back to the device: whole malloc'ed segments (through their head blocks),
  // expandable segments (their destructors unmap and free the ranges), and the events.
  try {
    for (auto& chunk : arena_) {
      for (size_t i = 0; i < kArenaChunk; ++i) {
        Block& b = chunk[i];
        if (b.live && !b.expandable && b.prev == nullptr) api_.free(b.ptr);
      }
    }
    expandable_segments_.clear();
    for (auto& se : events_)
      for (auto& [event, block] : se.queue) api_.event_destroy(event);
    for (EventHandle e : event_pool_) api_.event_destroy(e);
  } catch (...) {
    // Destructors must not throw.
  }
}

void AllocatorImpl::apply_config(const AllocatorConfig& config) {
  config_ = config;
  use_expandable_ =
      config_.expandable_segments && config_.caching_enabled && api_.vm_granularity() > 0;
  stats_.max_split_size = config_.max_split_size == std::numeric_limits<size_t>::max()
                              ? -1
                              : static_cast<int64_t>(config_.max_split_size);
}

void AllocatorImpl::set_config(const AllocatorConfig& config) {
  std::lock_guard<std::mutex> g(mu_);
  apply_config(config);
  // Turning caching off returns what is cached now.
  if (!config_.caching_enabled && captures_.empty()) release_cached_blocks(nullptr);
}

AllocatorConfig AllocatorImpl::config() const {
  std::lock_guard<std::mutex> g(mu_);
  return config_;
}

void AllocatorImpl::empty_cache() {
  std::lock_guard<std::mutex> g(mu_);
  KILN_CHECK(captures_.empty(),
             "[cuda] empty_cache: not allowed while allocations go to a private pool (a graph "
             "capture is underway); call end_allocate_to_pool first");
  release_cached_blocks(nullptr);
}

void AllocatorImpl::set_memory_fraction(double fraction) {
  KILN_CHECK(fraction >= 0.0 && fraction <= 1.0,
             "[cuda] set_per_process_memory_fraction: fraction must be in [0, 1], got ", fraction);
  std::lock_guard<std::mutex> g(mu_);
  MemInfo info = api_.mem_get_info();
  allowed_memory_maximum_ = static_cast<size_t>(fraction * static_cast<double>(info.total));
  set_fraction_ = true;
}

DeviceStats AllocatorImpl::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void AllocatorImpl::reset_peak_stats() {
  std::lock_guard<std::mutex> g(mu_);
  for (StatArray* a : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
                       &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                       &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *a) s.reset_peak();
  }
  stats_.oversize_allocations.reset_peak();
  stats_.oversize_segments.reset_peak();
}

void AllocatorImpl::reset_accumulated_stats() {
  std::lock_guard<std::mutex> g(mu_);
  for (StatArray* a : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
                       &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
                       &stats_.inactive_split_bytes, &stats_.requested_bytes}) {
    for (Stat& s : *a) s.reset_accumulated();
  }
  stats_.oversize_allocations.reset_accumulated();
  stats_.oversize_segments.reset_accumulated();
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
}

// ---------------------------------------------------------------------------------------------
// Memory history.

void AllocatorImpl::record_history(bool enabled, size_t max_entries,
                                   CachingAllocator::ContextFn context) {
  std::lock_guard<std::mutex> g(mu_);
  record_history_ = enabled;
  context_fn_ = enabled && context
                    ? std::make_shared<const CachingAllocator::ContextFn>(std::move(context))
                    : nullptr;
  context_enabled_.store(context_fn_ != nullptr, std::memory_order_relaxed);
  // Keep the newest entries, oldest first, within the new limit.
  std::vector<TraceRecord> ordered;
  if (enabled) {
    ordered.reserve(trace_.size());
    for (size_t i = 0; i < trace_.size(); ++i) {
      ordered.push_back(std::move(trace_[(trace_next_ + i) % trace_.size()]));
    }
  }
  trace_max_entries_ = std::max<size_t>(1, max_entries);
  if (ordered.size() > trace_max_entries_) {
    ordered.erase(ordered.begin(),
                  ordered.begin() + static_cast<ptrdiff_t>(ordered.size() - trace_max_entries_));
  }
  trace_ = std::move(ordered);
  trace_next_ = 0;
}

// ---------------------------------------------------------------------------------------------
// Snapshots.

std::vector<Block*> AllocatorImpl::all_blocks() const {
  std::vector<Block*> out;
  auto add_pool = [&](const BlockPool& p) {
    out.insert(out.end(), p.blocks.begin(), p.blocks.end());
  };
  add_pool(small_);
  add_pool(large_);
  for (auto& [id, pp] : graph_pools_) {
    add_pool(pp->small);
    add_pool(pp->large);
  }
  allocated_.for_each([&](Block* b) { out.push_back(b); });
  for (auto& se : events_)
    for (auto& [e, b] : se.queue) out.push_back(b);
  out.insert(out.end(), deferred_.begin(), deferred_.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Snapshot AllocatorImpl::snapshot() {
  std::lock_guard<std::mutex> g(mu_);
  Snapshot snap;
  size_t total_active = 0;
  for (const Block* head : all_blocks()) {
    // One segment per malloc'ed segment, and per contiguous mapped range of an expandable one.
    if (head->prev && head->prev->mapped) continue;
    SegmentInfo seg;
    seg.device = device_;
    seg.address = reinterpret_cast<uintptr_t>(head->ptr);
    seg.stream = head->stream;
    seg.is_large = !head->pool->is_small;
    seg.is_expandable = head->expandable != nullptr;
    seg.pool_id = head->pool->owner ? head->pool->owner->id : PoolId{0, 0};
    if (head->segment_context) seg.context = *head->segment_context;
    for (const Block* b = head; b != nullptr && b->mapped; b = b->next) {
      BlockInfo info;
      info.address = reinterpret_cast<uintptr_t>(b->ptr);
      info.size = b->size;
      info.requested_size = b->requested_size;
      const bool active = b->allocated || b->event_count > 0 || !b->stream_uses.empty();
      info.state = b->allocated ? BlockState::kActiveAllocated
                   : active     ? BlockState::kActivePendingFree
                                : BlockState::kInactive;
      if (b->context) info.context = *b->context;
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size;
      if (active) {
        seg.active_size += b->size;
        seg.requested_size += b->requested_size;
      }
      seg.blocks.push_back(std::move(info));
    }
    total_active += seg.active_size;
    snap.segments.push_back(std::move(seg));
  }
  std::sort(snap.segments.begin(), snap.segments.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.address < b.address; });

  record_trace(TraceAction::kSnapshot, 0, total_active, 0, nullptr);
  snap.device_traces.resize(static_cast<size_t>(device_) + 1);
  auto& trace = snap.device_traces[static_cast<size_t>(device_)];
  trace.reserve(trace_.size());
  for (size_t i = 0; i < trace_.size(); ++i) {
    const TraceRecord& r = trace_[(trace_next_ + i) % trace_.size()];
    trace.push_back(TraceEntry{r.action, r.addr, r.size, r.stream, r.time_us,
                               r.context ? *r.context : std::string()});
  }
  snap.settings = config_;
  return snap;
}

// ---------------------------------------------------------------------------------------------
// Private pools.

void AllocatorImpl::begin_allocate_to_pool(PoolId id, CachingAllocator::StreamFilter filter) {
  std::lock_guard<std::mutex> g(mu_);
  KILN_CHECK(id != (PoolId{0, 0}),
             "[cuda] begin_allocate_to_pool: pool id (0, 0) names the default pools");
  for (auto& [cid, f] : captures_) {
    KILN_CHECK(cid != id, "[cuda] begin_allocate_to_pool: already allocating to pool ",
               pool_name(id));
  }
  auto it = graph_pools_.find(id);
  if (it == graph_pools_.end()) {
    graph_pools_.emplace(id, std::make_unique<PrivatePool>(id, &nodes_));
  } else {
    // Another capture shares this pool.
    KILN_CHECK(it->second->use_count > 0, "[cuda] begin_allocate_to_pool: pool ", pool_name(id),
               " was released by every user; use a new pool id");
    it->second->use_count += 1;
  }
  captures_.emplace_back(id, std::move(filter));
}

void AllocatorImpl::end_allocate_to_pool(PoolId id) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::find_if(captures_.begin(), captures_.end(),
                         [&](const auto& c) { return c.first == id; });
  KILN_CHECK(it != captures_.end(), "[cuda] end_allocate_to_pool: not allocating to pool ",
             pool_name(id));
  captures_.erase(it);
}

void AllocatorImpl::release_pool(PoolId id) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = graph_pools_.find(id);
  KILN_CHECK(it != graph_pools_.end(), "[cuda] release_pool: unknown pool ", pool_name(id));
  PrivatePool* pp = it->second.get();
  KILN_CHECK(pp->use_count > 0, "[cuda] release_pool: pool ", pool_name(id),
             " was already released by every user");
  for (auto& [cid, f] : captures_) {
    KILN_CHECK(cid != id, "[cuda] release_pool: pool ", pool_name(id),
               " is still being allocated to; call end_allocate_to_pool first");
  }
  if (--pp->use_count == 0) {
    // From now on release_cached_blocks may give its unused segments back.
    graph_pools_freeable_.emplace(id, pp);
  }
}

}  // namespace kiln::gpu::detail
