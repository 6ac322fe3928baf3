// memory_snapshot(): the allocator's segments, blocks and recent actions in the layout of
// PyTorch's torch.cuda.memory._snapshot(), written as JSON or as a pickle that
// pytorch.org/memory_viz opens (see Note [Snapshot formats]).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu/alloc_config.h"
#include "backend/gpu/device_api.h"

namespace kiln::gpu {

// Identifies a private pool (graph capture, memory pools); {0, 0} is the default pools. Same
// convention as PyTorch's MempoolId_t: graph pools are {0, n}, user pools {n, 0}.
using PoolId = std::pair<uint64_t, uint64_t>;

enum class BlockState { kActiveAllocated, kActivePendingFree, kInactive };
enum class TraceAction {
  kAlloc,          // a block was handed out (addr, requested size)
  kFreeRequested,  // free() was called; the block may still wait for stream events
  kFreeCompleted,  // the block went back to the cache
  kSegmentAlloc,   // device malloc (addr, size)
  kSegmentFree,    // device free
  kSegmentMap,     // expandable segment grew by mapping chunks
  kSegmentUnmap,   // expandable segment chunks were unmapped
  kSnapshot,       // memory_snapshot() was taken (size = active bytes)
  kOom,            // out of memory (addr = free device bytes, size = request)
};
const char* to_string(BlockState s);   // "active_allocated", ...
const char* to_string(TraceAction a);  // "alloc", "free_requested", ...

struct BlockInfo {
  uintptr_t address = 0;
  size_t size = 0;
  size_t requested_size = 0;
  BlockState state = BlockState::kInactive;
  std::string context;  // caller context when allocated ('\n' separates frames); may be empty
};

struct SegmentInfo {
  int device = 0;
  uintptr_t address = 0;
  size_t total_size = 0;
  size_t allocated_size = 0;
  size_t active_size = 0;
  size_t requested_size = 0;
  StreamHandle stream = 0;
  bool is_large = false;
  bool is_expandable = false;  // one contiguous mapped range of an expandable segment
  PoolId pool_id{0, 0};
  std::string context;  // context when the segment was allocated
  std::vector<BlockInfo> blocks;
};

struct TraceEntry {
  TraceAction action = TraceAction::kAlloc;
  uintptr_t addr = 0;  // for kOom: free device bytes ("device_free" in the JSON)
  size_t size = 0;
  StreamHandle stream = 0;
  int64_t time_us = 0;  // microseconds since the Unix epoch
  std::string context;
};

struct Snapshot {
  std::vector<SegmentInfo> segments;  // sorted by address
  // device_traces[d] holds device d's history, oldest first (empty unless recording).
  std::vector<std::vector<TraceEntry>> device_traces;
  AllocatorConfig settings;
};

// {"segments": [...], "device_traces": [[...]], "allocator_settings": {...}}.
std::string snapshot_to_json(const Snapshot& snapshot);
// The same content as a Python pickle (protocol 2), as torch.cuda.memory._dump_snapshot writes.
std::string snapshot_to_pickle(const Snapshot& snapshot);
// Writes `data` to `path` through a temporary file and a rename, so readers never see half a
// file. Throws kiln::Error on failure.
void write_file_atomically(const std::string& path, const std::string& data);

}  // namespace kiln::gpu
