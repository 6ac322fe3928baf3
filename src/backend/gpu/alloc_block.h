// Internal data structures of the caching allocator: Block (a piece of a segment), BlockPool
// (free blocks ordered for best fit), PrivatePool, the pointer -> Block table, and
// ExpandableSegment (a virtual range grown by mapping physical chunks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/gpu/alloc_snapshot.h"
#include "backend/gpu/device_api.h"

namespace kiln::gpu::detail {

using Context = std::shared_ptr<const std::string>;

struct BlockPool;
struct PrivatePool;
class ExpandableSegment;

// A contiguous piece of a segment. The blocks of a segment form a list through prev/next; a
// block is either allocated, waiting for stream events, or free (then it sits in its pool).
struct Block {
  StreamHandle stream = 0;    // the stream it was allocated on
  size_t size = 0;            // bytes, a multiple of 512
  size_t requested_size = 0;  // what the caller asked for
  BlockPool* pool = nullptr;
  char* ptr = nullptr;
  bool allocated = false;
  bool mapped = true;         // false: unmapped address space of an expandable segment
  bool live = false;          // arena bookkeeping: in use as a block
  int event_count = 0;        // outstanding events recorded after a cross-stream free
  int64_t gc_count_base = 0;  // pool's get_free_blocks_call_count when it was cached
  Block* prev = nullptr;
  Block* next = nullptr;
  ExpandableSegment* expandable = nullptr;
  std::vector<StreamHandle> stream_uses;  // other streams that used it (record_stream)
  Context context;                        // caller context of the current allocation (history only)
  Context segment_context;  // caller context when the segment was created (head block only)

  bool is_split() const { return prev != nullptr || next != nullptr; }
  // Inserts this block between `before` and `after` (either may be null).
  void splice(Block* before, Block* after);
};

// Lookup key for the free-block sets, so that searches need no Block object.
struct BlockKey {
  StreamHandle stream;
  size_t size;
  uintptr_t ptr;
};

// Free blocks ordered by (stream, size, address): lower_bound gives the best fit on a stream.
struct BySize {
  using is_transparent = void;
  static BlockKey key(const Block* b) {
    return {b->stream, b->size, reinterpret_cast<uintptr_t>(b->ptr)};
  }
  static BlockKey key(const BlockKey& k) { return k; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    BlockKey x = key(a), y = key(b);
    if (x.stream != y.stream) return x.stream < y.stream;
    if (x.size != y.size) return x.size < y.size;
    return x.ptr < y.ptr;
  }
};

// Unmapped ranges ordered by (stream, address): the lowest address that can grow first.
struct ByAddress {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    BlockKey x = BySize::key(a), y = BySize::key(b);
    if (x.stream != y.stream) return x.stream < y.stream;
    return x.ptr < y.ptr;
  }
};

using SizeSet = std::set<Block*, BySize>;
using AddressSet = std::set<Block*, ByAddress>;
using NodeCache = std::vector<SizeSet::node_type>;

struct BlockPool {
  BlockPool(bool small, PrivatePool* owner_pool, NodeCache* node_cache)
      : is_small(small), owner(owner_pool), nodes(node_cache) {}

  SizeSet blocks;       // free mapped blocks
  AddressSet unmapped;  // unmapped tails and holes of expandable segments
  const bool is_small;
  PrivatePool* owner;  // null for the default pools
  int64_t get_free_blocks_call_count = 0;
  NodeCache* nodes;  // set nodes kept for reuse, so caching a block does not allocate

  void insert(Block* b);
  void erase(SizeSet::iterator it) { nodes->push_back(blocks.extract(it)); }
  void erase(Block* b);
};

// A pool of blocks reserved for one graph capture (or shared by several).
struct PrivatePool {
  PrivatePool(PoolId pool_id, NodeCache* nodes)
      : id(pool_id), large(false, this, nodes), small(true, this, nodes) {}
  PoolId id;
  int use_count = 1;     // captures (graphs) using it
  int malloc_count = 0;  // device segments it still owns (malloc'ed or expandable)
  BlockPool large;
  BlockPool small;
};

// Allocated pointer -> Block, open addressing with linear probing: no allocation per insert.
class PtrMap {
 public:
  explicit PtrMap(size_t capacity = 4096);
  void insert(const void* key, Block* value);
  Block* find(const void* key) const;
  Block* erase(const void* key);  // the removed value, or nullptr when absent
  size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.key != 0) f(s.value);
  }

 private:
  struct Slot {
    uintptr_t key = 0;  // 0 = empty
    Block* value = nullptr;
  };
  size_t home(uintptr_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

// A large reserved address range per (stream, pool) whose pages are mapped on demand, in
// chunks of `chunk_size` (2 MiB small pool, 20 MiB large pool). See Note [Expandable segments].
class ExpandableSegment {
 public:
  struct Range {
    char* ptr;
    size_t size;
  };
  ExpandableSegment(DeviceApi& api, StreamHandle stream, size_t address_space, size_t chunk_size);
  ~ExpandableSegment();
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  // Maps every chunk touching `r` (r.ptr must be chunk-aligned); returns the mapped range,
  // of size 0 when the device is out of memory (nothing stays mapped then).
  Range map(Range r);
  // Unmaps the chunks lying entirely inside `r`; returns them (size 0 if none).
  Range unmap(Range r);
  char* ptr() const { return base_; }
  size_t size() const { return chunk_ * max_chunks_; }
  StreamHandle stream() const { return stream_; }

 private:
  size_t left(const char* p) const { return static_cast<size_t>(p - base_) / chunk_; }
  size_t right(const char* p) const {
    return (static_cast<size_t>(p - base_) + chunk_ - 1) / chunk_;
  }
  void unmap_chunks(size_t begin, size_t end);
  void trim();

  DeviceApi& api_;
  StreamHandle stream_;
  size_t chunk_;
  size_t max_chunks_;
  char* base_ = nullptr;
  std::vector<PhysHandle> handles_;  // per chunk; 0 = not mapped
};

}  // namespace kiln::gpu::detail
