// Tests of the caching allocator's core rules on the fake device: pool routing, best fit,
// splitting and merging, reuse, stats, streams and events, the out-of-memory ladder,
// max_split_size, garbage collection, the memory fraction, uncached mode, threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "alloc_test_util.h"
#include "kiln/error.h"

namespace kiln::gpu {
namespace {

using alloc_test::expect_stats_match_snapshot;
using alloc_test::KiB;
using alloc_test::MiB;
using alloc_test::stat_value;

FakeDevice::Options device_options(size_t capacity) {
  FakeDevice::Options o;
  o.capacity = capacity;
  return o;
}

size_t round512(size_t n) { return n < 512 ? 512 : (n + 511) / 512 * 512; }

const SegmentInfo* segment_of(const Snapshot& s, const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  for (const SegmentInfo& seg : s.segments)
    if (a >= seg.address && a < seg.address + seg.total_size) return &seg;
  return nullptr;
}

TEST(CachingAllocator, ZeroSizeAndNull) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  EXPECT_EQ(a.malloc(0), nullptr);
  a.free(nullptr);
  EXPECT_EQ(dev.counters().malloc, 0);
  EXPECT_EQ(a.memory_allocated(), 0u);
}

TEST(CachingAllocator, FreeOfUnknownPointerThrows) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(1000);
  int x = 0;
  EXPECT_THROW(a.free(&x), Error);
  EXPECT_THROW(a.free(static_cast<char*>(p) + 512), Error);  // inside a block, not its start
  a.free(p);
  try {
    a.free(p);  // double free
    FAIL() << "double free did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid device pointer"), std::string::npos);
  }
  EXPECT_THROW(a.record_stream(p, 3), Error);
}

// Requests of <= 1 MiB go to the small pool (2 MiB segments); larger ones to the large pool
// with 20 MiB segments below 10 MiB, else the request rounded up to 2 MiB.
TEST(CachingAllocator, PoolRoutingAndSegmentSizes) {
  struct Case {
    size_t request;
    bool large;
    size_t segment;
  };
  const Case cases[] = {
      {1, false, 2 * MiB},
      {512, false, 2 * MiB},
      {1 * MiB - 1, false, 2 * MiB},
      {1 * MiB, false, 2 * MiB},
      {1 * MiB + 1, true, 20 * MiB},
      {5 * MiB, true, 20 * MiB},
      {10 * MiB - 512, true, 20 * MiB},
      {10 * MiB, true, 10 * MiB},
      {10 * MiB + 1, true, 12 * MiB},
      {33 * MiB, true, 34 * MiB},
      {64 * MiB, true, 64 * MiB},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("request " + std::to_string(c.request));
    FakeDevice dev;
    CachingAllocator a(dev, AllocatorConfig{});
    void* p = a.malloc(c.request);
    Snapshot s = a.memory_snapshot();
    ASSERT_EQ(s.segments.size(), 1u);
    const SegmentInfo& seg = s.segments[0];
    EXPECT_EQ(seg.is_large, c.large);
    EXPECT_EQ(seg.total_size, c.segment);
    ASSERT_GE(seg.blocks.size(), 1u);
    EXPECT_EQ(seg.blocks[0].address, reinterpret_cast<uintptr_t>(p));
    EXPECT_EQ(seg.blocks[0].requested_size, c.request);
    // The rest is kept as a separate block when >= 512 B (small) or > 1 MiB (large);
    // otherwise the whole segment is handed out.
    size_t rest = c.segment - round512(c.request);
    bool split = c.large ? rest > 1 * MiB : rest >= 512;
    EXPECT_EQ(seg.blocks.size(), split ? 2u : 1u);
    EXPECT_EQ(seg.blocks[0].size, split ? round512(c.request) : c.segment);
    EXPECT_EQ(stat_value(a, c.large ? "segment.large_pool.current" : "segment.small_pool.current"),
              1);
    EXPECT_EQ(stat_value(a, c.large ? "segment.small_pool.current" : "segment.large_pool.current"),
              0);
    EXPECT_EQ(dev.counters().malloc, 1);
    a.free(p);
  }
}

// A, B, C from one 2 MiB segment; free B, then A (merges with B), then C (all merge).
TEST(CachingAllocator, SplitAndMerge) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  const size_t req = 100000, r = round512(req);  // 196 * 512 = 100352
  char* pa = static_cast<char*>(a.malloc(req));
  char* pb = static_cast<char*>(a.malloc(req));
  char* pc = static_cast<char*>(a.malloc(req));
  EXPECT_EQ(dev.counters().malloc, 1);  // one segment for all three
  EXPECT_EQ(pb, pa + r);
  EXPECT_EQ(pc, pb + r);

  auto blocks = [&] { return a.memory_snapshot().segments.at(0).blocks; };
  auto b = blocks();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[3].state, BlockState::kInactive);
  EXPECT_EQ(b[3].size, 2 * MiB - 3 * r);
  EXPECT_EQ(stat_value(a, "inactive_split.all.current"), 1);
  EXPECT_EQ(stat_value(a, "inactive_split_bytes.all.current"), int64_t(2 * MiB - 3 * r));

  a.free(pb);
  b = blocks();
  ASSERT_EQ(b.size(), 4u);  // a hole between A and C
  EXPECT_EQ(b[0].state, BlockState::kActiveAllocated);
  EXPECT_EQ(b[1].state, BlockState::kInactive);
  EXPECT_EQ(b[1].size, r);
  EXPECT_EQ(b[2].state, BlockState::kActiveAllocated);
  EXPECT_EQ(stat_value(a, "inactive_split.all.current"), 2);
  EXPECT_EQ(stat_value(a, "inactive_split_bytes.all.current"), int64_t(2 * MiB - 2 * r));

  a.free(pa);
  b = blocks();
  ASSERT_EQ(b.size(), 3u);  // A merged with B
  EXPECT_EQ(b[0].state, BlockState::kInactive);
  EXPECT_EQ(b[0].size, 2 * r);
  EXPECT_EQ(b[0].address, reinterpret_cast<uintptr_t>(pa));
  EXPECT_EQ(stat_value(a, "inactive_split.all.current"), 2);

  a.free(pc);
  b = blocks();
  ASSERT_EQ(b.size(), 1u);  // everything merged back into one free block
  EXPECT_EQ(b[0].size, 2 * MiB);
  EXPECT_EQ(b[0].state, BlockState::kInactive);
  EXPECT_EQ(stat_value(a, "inactive_split.all.current"), 0);
  EXPECT_EQ(stat_value(a, "inactive_split_bytes.all.current"), 0);
  EXPECT_EQ(dev.counters().free, 0);  // still cached
  expect_stats_match_snapshot(a);
}

TEST(CachingAllocator, CachedBlockIsReusedWithoutDeviceMalloc) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  for (size_t size : {size_t{4096}, 1 * MiB, 64 * MiB}) {
    void* p = a.malloc(size);
    int64_t mallocs = dev.counters().malloc;
    a.free(p);
    void* q = a.malloc(size);
    EXPECT_EQ(q, p);
    EXPECT_EQ(dev.counters().malloc, mallocs);
    a.free(q);
  }
  EXPECT_EQ(stat_value(a, "num_device_alloc"), dev.counters().malloc);
  EXPECT_EQ(dev.counters().free, 0);
}

TEST(CachingAllocator, BestFitPicksSmallestSufficientBlock) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* p12 = a.malloc(12 * MiB);
  void* p16 = a.malloc(16 * MiB);
  void* p14 = a.malloc(14 * MiB);
  a.free(p12);
  a.free(p16);
  a.free(p14);
  EXPECT_EQ(a.malloc(13 * MiB), p14);  // 14 fits best (12 is too small, 16 is larger)
  EXPECT_EQ(a.malloc(11 * MiB), p12);
  EXPECT_EQ(a.malloc(15 * MiB), p16);
  EXPECT_EQ(dev.counters().malloc, 3);
  // 14 - 13 = 1 MiB is not more than 1 MiB: the block is handed out whole.
  EXPECT_EQ(a.memory_allocated(), 42 * MiB);
  expect_stats_match_snapshot(a);
}

// Random mallocs and frees; every counter is compared with a snapshot walk, with the fake
// device's own accounting and with the test's bookkeeping. Sentinels detect overlaps.
TEST(CachingAllocator, StatsInvariantsUnderRandomWorkload) {
  FakeDevice dev(device_options(size_t{8} << 30));
  CachingAllocator a(dev, AllocatorConfig{});
  std::mt19937_64 rng(1234);
  struct Live {
    size_t requested;
    uint64_t id;
  };
  std::map<char*, Live> live;
  int64_t mallocs = 0, frees = 0, peak_allocated = 0, peak_reserved = 0;
  uint64_t next_id = 1;
  auto pick_size = [&]() -> size_t {
    int r = static_cast<int>(rng() % 100);
    if (r < 50) return 16 + rng() % (1 * MiB - 15);
    if (r < 85) return 1 * MiB + 1 + rng() % (9 * MiB);
    return 10 * MiB + rng() % (30 * MiB);
  };
  auto check_sentinel = [](char* p, const Live& l) {
    uint64_t head, tail;
    std::memcpy(&head, p, 8);
    std::memcpy(&tail, p + l.requested - 8, 8);
    EXPECT_EQ(head, l.id);
    EXPECT_EQ(tail, ~l.id);
  };
  for (int step = 0; step < 3000; ++step) {
    bool do_free = !live.empty() && (live.size() > 40 || rng() % 100 < 45);
    if (do_free) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      check_sentinel(it->first, it->second);
      a.free(it->first);
      live.erase(it);
      ++frees;
    } else {
      size_t size = pick_size();
      StreamHandle stream = rng() % 3 == 0 ? 7 : 0;
      char* p = static_cast<char*>(a.malloc(size, stream));
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 512, 0u);
      ASSERT_EQ(live.count(p), 0u);
      Live l{size, next_id++};
      uint64_t tail = ~l.id;
      std::memcpy(p, &l.id, 8);
      std::memcpy(p + size - 8, &tail, 8);
      live.emplace(p, l);
      ++mallocs;
    }
    DeviceStats s = a.stats();
    int64_t requested = 0;
    for (auto& [p, l] : live) requested += static_cast<int64_t>(l.requested);
    ASSERT_EQ(s.requested_bytes[kStatAll].current, requested);
    ASSERT_EQ(s.allocation[kStatAll].current, static_cast<int64_t>(live.size()));
    ASSERT_EQ(s.reserved_bytes[kStatAll].current, static_cast<int64_t>(dev.used()));
    ASSERT_EQ(s.segment[kStatAll].current, static_cast<int64_t>(dev.live_allocations()));
    peak_allocated = std::max(peak_allocated, s.allocated_bytes[kStatAll].current);
    peak_reserved = std::max(peak_reserved, static_cast<int64_t>(dev.used()));
    if (step % 100 == 0) expect_stats_match_snapshot(a);
  }
  for (auto& [p, l] : live) check_sentinel(p, l);
  expect_stats_match_snapshot(a);
  DeviceStats s = a.stats();
  EXPECT_EQ(s.allocation[kStatAll].allocated, mallocs);
  EXPECT_EQ(s.allocation[kStatAll].freed, frees);
  EXPECT_EQ(s.allocation[kStatSmallPool].allocated + s.allocation[kStatLargePool].allocated,
            mallocs);
  EXPECT_EQ(s.allocated_bytes[kStatAll].peak, peak_allocated);
  EXPECT_EQ(s.reserved_bytes[kStatAll].peak, peak_reserved);
  EXPECT_EQ(s.num_device_alloc, dev.counters().malloc - dev.counters().malloc_failed);
  EXPECT_EQ(s.num_device_free, dev.counters().free);
  for (auto& [p, l] : live) a.free(p);
  EXPECT_EQ(a.memory_allocated(), 0u);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev.used(), 0u);
  expect_stats_match_snapshot(a);
}

TEST(CachingAllocator, PeaksAndResets) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* x = a.malloc(30 * MiB);
  void* y = a.malloc(12 * MiB);
  a.free(x);
  EXPECT_EQ(a.memory_allocated(), 12 * MiB);
  EXPECT_EQ(a.max_memory_allocated(), 42 * MiB);
  EXPECT_EQ(a.memory_reserved(), 42 * MiB);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 12 * MiB);
  EXPECT_EQ(a.max_memory_reserved(), 42 * MiB);
  a.reset_peak_memory_stats();
  EXPECT_EQ(a.max_memory_allocated(), 12 * MiB);
  EXPECT_EQ(a.max_memory_reserved(), 12 * MiB);
  EXPECT_EQ(stat_value(a, "allocation.all.allocated"), 2);
  EXPECT_EQ(stat_value(a, "allocation.all.freed"), 1);
  EXPECT_EQ(stat_value(a, "num_device_free"), 1);
  a.reset_accumulated_memory_stats();
  EXPECT_EQ(stat_value(a, "allocation.all.allocated"), 0);
  EXPECT_EQ(stat_value(a, "allocation.all.freed"), 0);
  EXPECT_EQ(stat_value(a, "num_device_alloc"), 0);
  EXPECT_EQ(stat_value(a, "num_device_free"), 0);
  EXPECT_EQ(stat_value(a, "allocation.all.current"), 1);  // current values stay
  a.free(y);
}

TEST(CachingAllocator, MemoryStatsKeys) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  auto stats = a.memory_stats();
  std::map<std::string, int64_t> m(stats.begin(), stats.end());
  EXPECT_EQ(m.size(), stats.size());  // no duplicates
  EXPECT_TRUE(std::is_sorted(stats.begin(), stats.end()));
  for (const char* base :
       {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
        "active_bytes", "inactive_split_bytes", "requested_bytes"}) {
    for (const char* pool : {"all", "small_pool", "large_pool"}) {
      for (const char* field : {"current", "peak", "allocated", "freed"}) {
        std::string key = std::string(base) + "." + pool + "." + field;
        EXPECT_EQ(m.count(key), 1u) << key;
      }
    }
  }
  for (const char* key :
       {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
        "num_device_free", "max_split_size", "oversize_allocations.current",
        "oversize_allocations.peak", "oversize_segments.current", "oversize_segments.freed"}) {
    EXPECT_EQ(m.count(key), 1u) << key;
  }
  EXPECT_EQ(m["max_split_size"], -1);  // PyTorch reports "no limit" as -1
  // 9 arrays * 3 pools * 4 fields + 2 single stats * 4 + 6 counters.
  EXPECT_EQ(stats.size(), 9u * 3 * 4 + 2 * 4 + 6);
}

TEST(CachingAllocator, BlocksAreOwnedByTheirStream) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  const StreamHandle s1 = 0x1000, s2 = 0x2000;
  void* p = a.malloc(1 * MiB, s1);
  a.free(p);
  void* q = a.malloc(1 * MiB, s2);  // the free block of s1 must not be used
  EXPECT_NE(q, p);
  EXPECT_EQ(dev.counters().malloc, 2);
  void* r = a.malloc(1 * MiB, s1);
  EXPECT_EQ(r, p);
  EXPECT_EQ(dev.counters().malloc, 2);
  Snapshot s = a.memory_snapshot();
  EXPECT_EQ(segment_of(s, q)->stream, s2);
  EXPECT_EQ(segment_of(s, r)->stream, s1);
  a.free(q);
  a.free(r);
}

TEST(CachingAllocator, RecordStreamDelaysReuseUntilEventCompletes) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  const StreamHandle s1 = 11, s2 = 22;
  void* p = a.malloc(12 * MiB, s1);
  a.record_stream(p, s2);
  a.record_stream(p, s2);  // recorded once
  a.free(p);
  EXPECT_EQ(dev.counters().event_record, 1);
  EXPECT_EQ(dev.pending_events(), 1u);
  // Freed but not reusable: allocated drops, active stays.
  EXPECT_EQ(a.memory_allocated(), 0u);
  EXPECT_EQ(stat_value(a, "active_bytes.all.current"), int64_t(12 * MiB));
  Snapshot snap = a.memory_snapshot();
  EXPECT_EQ(segment_of(snap, p)->blocks[0].state, BlockState::kActivePendingFree);
  expect_stats_match_snapshot(a);

  void* q = a.malloc(12 * MiB, s1);
  EXPECT_NE(q, p);
  EXPECT_EQ(dev.counters().malloc, 2);

  dev.complete_stream(s2);
  void* r = a.malloc(12 * MiB, s1);  // processes the completed event first
  EXPECT_EQ(r, p);
  EXPECT_EQ(dev.counters().malloc, 2);
  EXPECT_EQ(stat_value(a, "num_sync_all_streams"), 0);
  a.free(q);
  a.free(r);
  expect_stats_match_snapshot(a);
}

TEST(CachingAllocator, RecordStreamWaitsForEveryStream) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(12 * MiB, 1);
  a.record_stream(p, 2);
  a.record_stream(p, 3);
  a.record_stream(p, 1);  // the allocation stream itself needs no event
  a.free(p);
  EXPECT_EQ(dev.counters().event_record, 2);
  dev.complete_stream(2);
  void* q = a.malloc(12 * MiB, 1);
  EXPECT_NE(q, p);  // stream 3 has not finished
  dev.complete_stream(3);
  void* r = a.malloc(12 * MiB, 1);
  EXPECT_EQ(r, p);
  a.free(q);
  a.free(r);
  // Events are pooled: a second cross-stream free creates no new event.
  void* t = a.malloc(12 * MiB, 1);
  a.record_stream(t, 2);
  a.free(t);
  EXPECT_EQ(dev.counters().event_create, 2);
}

TEST(CachingAllocator, OomLadderReleasesCachedBlocksAndRetries) {
  FakeDevice dev(device_options(100 * MiB));
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(60 * MiB, 1);
  a.free(p);                        // cached on stream 1
  void* q = a.malloc(60 * MiB, 2);  // needs the cached memory back
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(dev.counters().malloc_failed, 1);
  EXPECT_EQ(dev.counters().free, 1);
  EXPECT_EQ(stat_value(a, "num_alloc_retries"), 1);
  EXPECT_EQ(stat_value(a, "num_sync_all_streams"), 1);
  EXPECT_EQ(stat_value(a, "num_ooms"), 0);
  EXPECT_EQ(a.memory_reserved(), 60 * MiB);
  a.free(q);
}

TEST(CachingAllocator, OomLadderWaitsForPendingFrees) {
  FakeDevice dev(device_options(100 * MiB));
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(60 * MiB, 1);
  a.record_stream(p, 2);
  a.free(p);  // waits for stream 2
  void* q = a.malloc(60 * MiB, 1);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(dev.counters().event_synchronize, 1);
  EXPECT_EQ(dev.counters().free, 1);
  EXPECT_EQ(stat_value(a, "num_sync_all_streams"), 1);
  a.free(q);
}

TEST(CachingAllocator, OomErrorReportsTheNumbers) {
  FakeDevice dev(device_options(100 * MiB));
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(60 * MiB);
  std::string msg;
  try {
    a.malloc(60 * MiB);
  } catch (const Error& e) {
    msg = e.what();
  }
  ASSERT_FALSE(msg.empty()) << "no out-of-memory error";
  EXPECT_EQ(msg.rfind("[cuda] out of memory: tried to allocate 60.00 MiB (62914560 bytes)", 0), 0u)
      << msg;
  EXPECT_NE(msg.find("60.00 MiB (62914560 bytes) allocated by kiln"), std::string::npos) << msg;
  EXPECT_NE(msg.find("60.00 MiB (62914560 bytes) reserved"), std::string::npos) << msg;
  EXPECT_NE(msg.find("40.00 MiB (41943040 bytes) free of 100.00 MiB (104857600 bytes) total on "
                     "device 0"),
            std::string::npos)
      << msg;
  EXPECT_EQ(stat_value(a, "num_ooms"), 1);
  // The failed request changed nothing.
  EXPECT_EQ(a.memory_allocated(), 60 * MiB);
  expect_stats_match_snapshot(a);
  a.free(p);
  // With the memory back, the same request succeeds.
  void* q = a.malloc(60 * MiB);
  EXPECT_EQ(q, p);
  a.free(q);
}

TEST(CachingAllocator, OomMessageHasReservedButUnallocated) {
  FakeDevice dev(device_options(24 * MiB));
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(2 * MiB);  // one 20 MiB segment, 18 MiB of it free but unusable for 22 MiB
  std::string msg;
  try {
    a.malloc(22 * MiB);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("2.00 MiB (2097152 bytes) allocated by kiln, 20.00 MiB (20971520 bytes) "
                     "reserved (18.00 MiB (18874368 bytes) reserved but unallocated)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("4.00 MiB (4194304 bytes) free of 24.00 MiB"), std::string::npos) << msg;
  a.free(p);
}

TEST(CachingAllocator, MaxSplitSizeKeepsOversizeBlocksWhole) {
  FakeDevice dev(device_options(size_t{2} << 30));
  CachingAllocator a(dev, AllocatorConfig::parse("max_split_size_mb:40"));
  EXPECT_EQ(stat_value(a, "max_split_size"), int64_t(40 * MiB));
  void* big = a.malloc(100 * MiB);
  EXPECT_EQ(stat_value(a, "oversize_segments.current"), 1);
  EXPECT_EQ(stat_value(a, "oversize_allocations.current"), 1);
  a.free(big);
  EXPECT_EQ(stat_value(a, "oversize_allocations.current"), 0);

  // A request below max_split_size never takes an oversize block.
  void* small = a.malloc(30 * MiB);
  EXPECT_NE(segment_of(a.memory_snapshot(), small)->address, reinterpret_cast<uintptr_t>(big));
  EXPECT_EQ(dev.counters().malloc, 2);
  // An oversize request takes it whole if it is less than 20 MiB too large...
  void* again = a.malloc(90 * MiB);
  EXPECT_EQ(again, big);
  EXPECT_EQ(dev.counters().malloc, 2);
  EXPECT_EQ(a.memory_allocated(), 130 * MiB);  // not split: 100 MiB allocated for 90
  Snapshot snap = a.memory_snapshot();
  EXPECT_EQ(segment_of(snap, again)->blocks.size(), 1u);
  a.free(again);
  // ... but not when it is 20 MiB or more too large.
  void* other = a.malloc(80 * MiB);
  EXPECT_NE(other, big);
  EXPECT_EQ(dev.counters().malloc, 3);
  a.free(other);
  a.free(small);
  expect_stats_match_snapshot(a);
}

TEST(CachingAllocator, OomFreesOversizeBlocksBeforeEverything) {
  FakeDevice dev(device_options(150 * MiB));
  CachingAllocator a(dev, AllocatorConfig::parse("max_split_size_mb:40"));
  void* big = a.malloc(100 * MiB);
  a.free(big);
  void* p = a.malloc(60 * MiB);  // 100 >= 60 + 20: not reused; 100 + 60 > 150: release it
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(dev.counters().free, 1);
  EXPECT_EQ(stat_value(a, "num_sync_all_streams"), 0);  // the full release was not needed
  EXPECT_EQ(stat_value(a, "num_alloc_retries"), 0);
  EXPECT_EQ(stat_value(a, "oversize_segments.current"), 1);
  a.free(p);
}

TEST(CachingAllocator, GarbageCollectionFreesOldBlocksFirst) {
  FakeDevice dev(device_options(200 * MiB));
  CachingAllocator a(dev, AllocatorConfig::parse("garbage_collection_threshold:0.5"));
  a.set_per_process_memory_fraction(1.0);  // GC works relative to this limit: 100 MiB here
  void* x = a.malloc(40 * MiB);
  void* y = a.malloc(40 * MiB);
  void* z = a.malloc(40 * MiB);
  a.free(x);
  a.free(y);
  a.free(z);
  void* reused = a.malloc(40 * MiB);  // makes one cached block "young"
  a.free(reused);
  EXPECT_EQ(a.memory_reserved(), 120 * MiB);
  // 120 MiB reserved > 100 MiB: a new segment first reclaims the two older blocks.
  void* w = a.malloc(50 * MiB);
  EXPECT_EQ(dev.counters().free, 2);
  EXPECT_EQ(a.memory_reserved(), 90 * MiB);
  Snapshot s = a.memory_snapshot();
  ASSERT_NE(segment_of(s, reused), nullptr);  // the recently used block survived
  EXPECT_EQ(stat_value(a, "num_sync_all_streams"), 0);
  a.free(w);
}

TEST(CachingAllocator, GarbageCollectionNeedsMemoryFraction) {
  // As in PyTorch the threshold is a fraction of the set_per_process_memory_fraction limit.
  FakeDevice dev(device_options(200 * MiB));
  CachingAllocator a(dev, AllocatorConfig::parse("garbage_collection_threshold:0.5"));
  void* x = a.malloc(40 * MiB);
  void* y = a.malloc(40 * MiB);
  void* z = a.malloc(40 * MiB);
  a.free(x);
  a.free(y);
  a.free(z);
  void* w = a.malloc(50 * MiB);
  EXPECT_EQ(dev.counters().free, 0);
  a.free(w);
}

TEST(CachingAllocator, MemoryFractionCapsReservedMemory) {
  FakeDevice dev(device_options(100 * MiB));
  CachingAllocator a(dev, AllocatorConfig{});
  EXPECT_THROW(a.set_per_process_memory_fraction(1.5), Error);
  EXPECT_THROW(a.set_per_process_memory_fraction(-0.1), Error);
  a.set_per_process_memory_fraction(0.5);  // 50 MiB
  void* p = a.malloc(40 * MiB);
  std::string msg;
  try {
    a.malloc(20 * MiB);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("50.00 MiB (52428800 bytes) allowed by set_per_process_memory_fraction"),
            std::string::npos)
      << msg;
  EXPECT_EQ(dev.counters().malloc_failed, 0);  // the cap, not the device, refused
  a.free(p);
  // 40 cached + 46 > 50: the cache is released and the retry fits.
  int64_t retries = stat_value(a, "num_alloc_retries");
  void* q = a.malloc(45 * MiB);
  EXPECT_EQ(stat_value(a, "num_alloc_retries"), retries + 1);
  EXPECT_EQ(a.memory_reserved(), 46 * MiB);
  a.free(q);
}

TEST(CachingAllocator, UncachedModeFreesImmediatelyWithExactStats) {
  FakeDevice dev;
  AllocatorConfig c;
  c.caching_enabled = false;
  CachingAllocator a(dev, c);
  void* p = a.malloc(1000);
  void* q = a.malloc(3 * MiB);
  EXPECT_EQ(dev.counters().malloc, 2);
  EXPECT_EQ(a.memory_allocated(), 1024 + 3 * MiB);
  EXPECT_EQ(a.memory_reserved(), 1024 + 3 * MiB);  // segments of exactly the rounded size
  expect_stats_match_snapshot(a);
  a.free(p);
  EXPECT_EQ(dev.counters().free, 1);
  EXPECT_EQ(a.memory_reserved(), 3 * MiB);
  void* r = a.malloc(1000);
  EXPECT_EQ(dev.counters().malloc, 3);
  // A cross-stream free still waits for the event before returning memory.
  a.record_stream(r, 5);
  a.free(r);
  EXPECT_EQ(dev.counters().free, 1);
  dev.complete_stream(5);
  a.free(q);
  void* t = a.malloc(1000);  // processes the event
  EXPECT_EQ(dev.counters().free, 3);
  a.free(t);
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev.used(), 0u);
  expect_stats_match_snapshot(a);
}

TEST(CachingAllocator, DestructorReturnsAllDeviceMemory) {
  FakeDevice dev;
  {
    CachingAllocator a(dev, AllocatorConfig{});
    a.malloc(1000);
    void* p = a.malloc(30 * MiB);
    a.malloc(12 * MiB);
    a.free(p);
    void* q = a.malloc(5 * MiB, 3);
    a.record_stream(q, 4);
    a.free(q);  // still waiting for an event
  }
  EXPECT_EQ(dev.live_allocations(), 0u);
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(dev.counters().event_create, dev.counters().event_destroy);
}

TEST(CachingAllocator, ThreadsShareOneAllocator) {
  FakeDevice dev(device_options(size_t{4} << 30));
  CachingAllocator a(dev, AllocatorConfig{});
  auto work = [&](StreamHandle stream, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::pair<char*, uint64_t>> mine;
    for (int i = 0; i < 4000; ++i) {
      if (!mine.empty() && (mine.size() > 20 || rng() % 2 == 0)) {
        size_t k = rng() % mine.size();
        uint64_t v;
        std::memcpy(&v, mine[k].first, 8);
        EXPECT_EQ(v, mine[k].second);
        a.free(mine[k].first);
        mine[k] = mine.back();
        mine.pop_back();
      } else {
        size_t size = 8 + rng() % (rng() % 4 == 0 ? 24 * MiB : 256 * KiB);
        char* p = static_cast<char*>(a.malloc(size, stream));
        uint64_t tag = rng();
        std::memcpy(p, &tag, 8);
        mine.emplace_back(p, tag);
      }
    }
    for (auto& [p, tag] : mine) a.free(p);
  };
  std::thread t1(work, 1, 1), t2(work, 2, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(a.memory_allocated(), 0u);
  EXPECT_EQ(stat_value(a, "allocation.all.allocated"), stat_value(a, "allocation.all.freed"));
  expect_stats_match_snapshot(a);
}

}  // namespace
}  // namespace kiln::gpu
