// Block list splicing, the free-block pools, the pointer table and expandable segments.
#include "backend/gpu/alloc_block.h"

#include <bit>

#include "kiln/error.h"

namespace kiln::gpu::detail {

void Block::splice(Block* before, Block* after) {
  if (before) {
    KILN_ASSERT(before->next == after);
    before->next = this;
  }
  prev = before;
  if (after) {
    KILN_ASSERT(after->prev == before);
    after->prev = this;
  }
  next = after;
}

void BlockPool::insert(Block* b) {
  b->gc_count_base = get_free_blocks_call_count;
  if (!nodes->empty()) {
    SizeSet::node_type node = std::move(nodes->back());
    nodes->pop_back();
    node.value() = b;
    bool inserted = blocks.insert(std::move(node)).inserted;
    KILN_ASSERT(inserted, "block cached twice");
  } else {
    bool inserted = blocks.insert(b).second;
    KILN_ASSERT(inserted, "block cached twice");
  }
}

void BlockPool::erase(Block* b) {
  auto it = blocks.find(b);
  KILN_ASSERT(it != blocks.end() && *it == b, "block missing from its pool");
  erase(it);
}

PtrMap::PtrMap(size_t capacity) {
  size_t cap = std::bit_ceil(capacity < 16 ? size_t{16} : capacity);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - (std::bit_width(cap) - 1);
}

void PtrMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  size_t cap = old.size() * 2;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  shift_ = 64 - (std::bit_width(cap) - 1);
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != 0) insert(reinterpret_cast<const void*>(s.key), s.value);
}

void PtrMap::insert(const void* key, Block* value) {
  if (2 * (size_ + 1) > slots_.size()) grow();  // keep the load at most 1/2
  uintptr_t k = reinterpret_cast<uintptr_t>(key);
  KILN_ASSERT(k != 0);
  for (size_t i = home(k);; i = (i + 1) & mask_) {
    if (slots_[i].key == 0) {
      slots_[i] = Slot{k, value};
      ++size_;
      return;
    }
    KILN_ASSERT(slots_[i].key != k, "pointer registered twice");
  }
}

Block* PtrMap::find(const void* key) const {
  uintptr_t k = reinterpret_cast<uintptr_t>(key);
  if (k == 0) return nullptr;
  for (size_t i = home(k);; i = (i + 1) & mask_) {
    if (slots_[i].key == k) return slots_[i].value;
    if (slots_[i].key == 0) return nullptr;
  }
}

Block* PtrMap::erase(const void* key) {
  uintptr_t k = reinterpret_cast<uintptr_t>(key);
  if (k == 0) return nullptr;
  size_t i = home(k);
  while (slots_[i].key != k) {
    if (slots_[i].key == 0) return nullptr;
    i = (i + 1) & mask_;
  }
  Block* value = slots_[i].value;
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // slot does not lie cyclically in (hole, j].
  size_t hole = i;
  for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
    size_t h = home(slots_[j].key);
    bool stays = (hole < j) ? (h > hole && h <= j) : (h > hole || h <= j);
    if (!stays) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
  --size_;
  return value;
}

// Note [Expandable segments]
// With expandable_segments:True a pool holds one big reserved address range per stream instead
// of one cudaMalloc per segment. Physical memory is mapped chunk by chunk at the end of the
// range as allocations need it, so a growing workload fills one contiguous segment instead of
// leaving slivers at the end of many fixed-size ones; freeing the cache unmaps whole free chunks
// (after synchronizing the stream, since unmapping does not wait for queued work). The range
// reserved is 1 1/8 of the device memory, as in PyTorch, which leaves room to remap chunks that
// were unmapped in the middle.

ExpandableSegment::ExpandableSegment(DeviceApi& api, StreamHandle stream, size_t address_space,
                                     size_t chunk_size)
    : api_(api),
      stream_(stream),
      chunk_(chunk_size),
      max_chunks_((address_space + chunk_size - 1) / chunk_size) {
  base_ = static_cast<char*>(api_.vm_reserve(size(), chunk_));
  KILN_CHECK(base_ != nullptr, "[cuda] expandable segments: could not reserve ", size(),
             " bytes of address space on device ", api_.device_index());
}

ExpandableSegment::~ExpandableSegment() {
  try {
    size_t i = 0;
    while (i < handles_.size()) {
      if (handles_[i] == 0) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < handles_.size() && handles_[j] != 0) ++j;
      unmap_chunks(i, j);
      i = j;
    }
    api_.vm_free(base_, size());
  } catch (...) {
    // Destructors must not throw; the process is tearing the allocator down anyway.
  }
}

ExpandableSegment::Range ExpandableSegment::map(Range r) {
  size_t begin = left(r.ptr), end = right(r.ptr + r.size);
  KILN_ASSERT(base_ + begin * chunk_ == r.ptr, "expandable map of an unaligned range");
  KILN_ASSERT(end <= max_chunks_);
  if (handles_.size() < end) handles_.resize(end, 0);
  for (size_t i = begin; i < end; ++i) {
    KILN_ASSERT(handles_[i] == 0, "chunk mapped twice");
    PhysHandle h = api_.vm_create(chunk_);
    if (h == 0) {
      for (size_t j = begin; j < i; ++j) {
        api_.vm_release(handles_[j]);
        handles_[j] = 0;
      }
      trim();
      return Range{r.ptr, 0};
    }
    handles_[i] = h;
  }
  for (size_t i = begin; i < end; ++i) api_.vm_map(base_ + i * chunk_, chunk_, handles_[i]);
  return Range{base_ + begin * chunk_, (end - begin) * chunk_};
}

ExpandableSegment::Range ExpandableSegment::unmap(Range r) {
  size_t begin = right(r.ptr), end = left(r.ptr + r.size);
  if (begin >= end) return Range{r.ptr, 0};
  unmap_chunks(begin, end);
  return Range{base_ + begin * chunk_, (end - begin) * chunk_};
}

void ExpandableSegment::unmap_chunks(size_t begin, size_t end) {
  // Work queued on the stream may still use these pages.
  api_.stream_synchronize(stream_);
  for (size_t i = begin; i < end; ++i) {
    api_.vm_unmap(base_ + i * chunk_, chunk_);
    api_.vm_release(handles_[i]);
    handles_[i] = 0;
  }
  trim();
}

void ExpandableSegment::trim() {
  while (!handles_.empty() && handles_.back() == 0) handles_.pop_back();
}

}  // namespace kiln::gpu::detail
