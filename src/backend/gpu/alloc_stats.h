// Statistics of the caching allocator, with PyTorch's names: DeviceStats, its flattening into
// "allocated_bytes.all.current"-style keys (torch.cuda.memory_stats()), and format_size().
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::gpu {

// One counter: its value now, its high-water mark, and the totals added and removed.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;

  void increase(int64_t amount) {
    current += amount;
    if (current > peak) peak = current;
    allocated += amount;
  }
  void decrease(int64_t amount) {
    current -= amount;
    freed += amount;
  }
  void reset_accumulated() { allocated = freed = 0; }
  void reset_peak() { peak = current; }
};

// Each core statistic is kept for all pools together and for the small and large pools.
enum StatType : int { kStatAll = 0, kStatSmallPool = 1, kStatLargePool = 2, kNumStatTypes = 3 };
using StatArray = std::array<Stat, kNumStatTypes>;

struct DeviceStats {
  StatArray allocation;              // allocations handed out by malloc
  StatArray segment;                 // segments obtained from the device (not expandable ones)
  StatArray active;                  // blocks allocated or waiting for their stream events
  StatArray inactive_split;          // free blocks inside partly used segments
  StatArray allocated_bytes;         // bytes of allocated blocks (rounded sizes)
  StatArray reserved_bytes;          // bytes held from the device
  StatArray active_bytes;            // bytes of active blocks
  StatArray inactive_split_bytes;    // bytes of inactive split blocks
  StatArray requested_bytes;         // bytes requested by callers (before rounding)
  int64_t num_alloc_retries = 0;     // device mallocs retried after freeing the whole cache
  int64_t num_ooms = 0;              // out-of-memory errors raised
  Stat oversize_allocations;         // allocations of blocks >= max_split_size
  Stat oversize_segments;            // segments >= max_split_size
  int64_t num_sync_all_streams = 0;  // waits on every outstanding stream event
  int64_t num_device_alloc = 0;      // device mallocs and chunk maps
  int64_t num_device_free = 0;       // device frees and chunk unmaps
  int64_t max_split_size = -1;       // configured limit in bytes; -1 = none (PyTorch's value)
};

// The stats as torch.cuda.memory_stats() shows them: sorted (key, value) pairs such as
// ("active_bytes.large_pool.peak", 123).
std::vector<std::pair<std::string, int64_t>> flatten_stats(const DeviceStats& stats);

// "512 bytes", "1.50 KiB", "20.00 MiB", "1.25 GiB" (PyTorch's format).
std::string format_size(uint64_t bytes);

}  // namespace kiln::gpu
