// Flattening of DeviceStats into PyTorch's memory_stats() keys, and human-readable sizes.
#include "backend/gpu/alloc_stats.h"

#include <algorithm>
#include <cstdio>

namespace kiln::gpu {

std::vector<std::pair<std::string, int64_t>> flatten_stats(const DeviceStats& s) {
  std::vector<std::pair<std::string, int64_t>> out;
  auto add_stat = [&](const std::string& prefix, const Stat& st) {
    out.emplace_back(prefix + ".current", st.current);
    out.emplace_back(prefix + ".peak", st.peak);
    out.emplace_back(prefix + ".allocated", st.allocated);
    out.emplace_back(prefix + ".freed", st.freed);
  };
  auto add_array = [&](const char* name, const StatArray& a) {
    static const char* const kTypes[kNumStatTypes] = {"all", "small_pool", "large_pool"};
    for (int t = 0; t < kNumStatTypes; ++t) add_stat(std::string(name) + "." + kTypes[t], a[t]);
  };
  add_array("allocation", s.allocation);
  add_array("segment", s.segment);
  add_array("active", s.active);
  add_array("inactive_split", s.inactive_split);
  add_array("allocated_bytes", s.allocated_bytes);
  add_array("reserved_bytes", s.reserved_bytes);
  add_array("active_bytes", s.active_bytes);
  add_array("inactive_split_bytes", s.inactive_split_bytes);
  add_array("requested_bytes", s.requested_bytes);
  add_stat("oversize_allocations", s.oversize_allocations);
  add_stat("oversize_segments", s.oversize_segments);
  out.emplace_back("num_alloc_retries", s.num_alloc_retries);
  out.emplace_back("num_ooms", s.num_ooms);
  out.emplace_back("num_sync_all_streams", s.num_sync_all_streams);
  out.emplace_back("num_device_alloc", s.num_device_alloc);
  out.emplace_back("num_device_free", s.num_device_free);
  out.emplace_back("max_split_size", s.max_split_size);
  std::sort(out.begin(), out.end());
  return out;
}

std::string format_size(uint64_t bytes) {
  char buf[64];
  double b = static_cast<double>(bytes);
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes <= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.2f KiB", b / 1024.0);
  } else if (bytes <= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", b / 1048576.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / 1073741824.0);
  }
  return buf;
}

}  // namespace kiln::gpu
