// Caching-allocator constants, AllocatorConfig (the KILN_CUDA_ALLOC_CONF settings, parsed like
// PYTORCH_CUDA_ALLOC_CONF) and the size rules: rounding of requests and the size of new segments.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace kiln::gpu {

inline constexpr size_t kMinBlockSize = 512;                // every size is a multiple of this
inline constexpr size_t kSmallSize = size_t{1} << 20;       // largest request of the small pool
inline constexpr size_t kSmallBuffer = size_t{2} << 20;     // small requests share 2 MiB segments
inline constexpr size_t kLargeBuffer = size_t{20} << 20;    // 1-10 MiB requests share 20 MiB ones
inline constexpr size_t kMinLargeAlloc = size_t{10} << 20;  // from here a segment fits one request
inline constexpr size_t kRoundLarge = size_t{2} << 20;      // ... rounded up to 2 MiB
inline constexpr size_t kRoundUpPowerOfTwoIntervals = 16;   // intervals [1 MiB, 2 MiB) ... 64 GiB

struct AllocatorConfig {
  // Blocks of this size or more are never split ("oversize"); SIZE_MAX = no limit.
  size_t max_split_size = std::numeric_limits<size_t>::max();
  // An oversize cached block serves a request only if it exceeds it by less than this.
  size_t max_non_split_rounding_size = kLargeBuffer;
  // Fraction of the set_per_process_memory_fraction limit above which cached blocks are
  // reclaimed before new segments are allocated; 0 = off.
  double garbage_collection_threshold = 0.0;
  // roundup_power2_divisions[i] applies to requests in [2^(20+i), 2^(21+i)) bytes (index 0
  // also below 1 MiB, index 15 also above 32 GiB); 0 or 1 = no power-of-two rounding.
  std::array<size_t, kRoundUpPowerOfTwoIntervals> roundup_power2_divisions{};
  bool expandable_segments = false;
  // Accepted for compatibility; kiln keeps the lock while calling malloc.
  bool release_lock_on_cudamalloc = false;
  // Settings of the pinned host allocator, carried here because they share the variable.
  bool pinned_use_cuda_host_register = false;
  size_t pinned_num_register_threads = 1;
  // false when KILN_NO_CUDA_MEMORY_CACHING=1: every free returns memory to the device.
  bool caching_enabled = true;
  std::string conf;  // the text this config was parsed from

  // Parses "key:value,key:value"; throws kiln::Error naming the bad key or value.
  static AllocatorConfig parse(std::string_view conf);
  // Reads KILN_CUDA_ALLOC_CONF and KILN_NO_CUDA_MEMORY_CACHING.
  static AllocatorConfig from_env();

  size_t divisions_for(size_t size) const;
};

// Rounds a request up: to 512 B, or to the next power-of-two division when configured.
size_t round_size(size_t size, const AllocatorConfig& config);
// Rounds `size` up to the next of `divisions` equal steps between its enclosing powers of two.
size_t roundup_power2_next_division(size_t size, size_t divisions);
// Size of the segment to allocate for a rounded request: 2 MiB, 20 MiB, or the request rounded
// up to 2 MiB.
inline size_t allocation_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace kiln::gpu
