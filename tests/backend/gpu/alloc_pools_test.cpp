// Tests of expandable segments (growth in place over the fake device's virtual memory) and of
// private pools (graph capture): isolation, sharing by id, release, deferred stream events.
#include <gtest/gtest.h>

#include "alloc_test_util.h"
#include "kiln/error.h"

namespace kiln::gpu {
namespace {

using alloc_test::expect_stats_match_snapshot;
using alloc_test::MiB;
using alloc_test::stat_value;

FakeDevice::Options vm_device(size_t capacity) {
  FakeDevice::Options o;
  o.capacity = capacity;
  o.vm_granularity = 2 * MiB;
  return o;
}

AllocatorConfig expandable() { return AllocatorConfig::parse("expandable_segments:True"); }

TEST(ExpandableSegments, GrowInPlaceAndUnmapWhenFreed) {
  FakeDevice dev(vm_device(256 * MiB));
  CachingAllocator a(dev, expandable());
  char* p1 = static_cast<char*>(a.malloc(30 * MiB));
  // Large-pool chunks are 20 MiB: 30 MiB needs two of them.
  EXPECT_EQ(dev.counters().vm_reserve, 1);
  EXPECT_EQ(dev.counters().vm_create, 2);
  EXPECT_EQ(dev.counters().vm_map, 2);
  EXPECT_EQ(dev.counters().malloc, 0);
  EXPECT_EQ(a.memory_reserved(), 40 * MiB);
  EXPECT_TRUE(dev.vm_is_mapped(p1, 30 * MiB));

  // The next block continues right after the first: the segment grew by one chunk.
  char* p2 = static_cast<char*>(a.malloc(30 * MiB));
  EXPECT_EQ(p2, p1 + 30 * MiB);
  EXPECT_EQ(dev.counters().vm_reserve, 1);
  EXPECT_EQ(dev.counters().vm_create, 3);
  EXPECT_EQ(a.memory_reserved(), 60 * MiB);
  EXPECT_EQ(dev.used(), 60 * MiB);
  EXPECT_TRUE(dev.vm_is_mapped(p1, 60 * MiB));

  Snapshot s = a.memory_snapshot();
  ASSERT_EQ(s.segments.size(), 1u);
  EXPECT_TRUE(s.segments[0].is_expandable);
  EXPECT_TRUE(s.segments[0].is_large);
  EXPECT_EQ(s.segments[0].address, reinterpret_cast<uintptr_t>(p1));
  EXPECT_EQ(s.segments[0].total_size, 60 * MiB);
  ASSERT_EQ(s.segments[0].blocks.size(), 2u);
  expect_stats_match_snapshot(a);

  // Freeing the second block and emptying the cache unmaps the chunk it alone covered,
  // [40, 60) MiB; [30, 40) shares a chunk with the first block and stays mapped.
  a.free(p2);
  a.empty_cache();
  EXPECT_EQ(dev.counters().vm_unmap, 1);
  EXPECT_EQ(a.memory_reserved(), 40 * MiB);
  EXPECT_EQ(dev.used(), 40 * MiB);
  EXPECT_TRUE(dev.vm_is_mapped(p1, 40 * MiB));
  EXPECT_FALSE(dev.vm_is_mapped(p1 + 40 * MiB, 1));
  EXPECT_EQ(stat_value(a, "num_device_free"), 1);
  EXPECT_GE(dev.counters().stream_synchronize, 1);  // unmapping waits for the stream
  expect_stats_match_snapshot(a);

  // Growing again maps the hole back at the same address.
  char* p3 = static_cast<char*>(a.malloc(30 * MiB));
  EXPECT_EQ(p3, p2);
  EXPECT_EQ(a.memory_reserved(), 60 * MiB);
  a.free(p3);
  a.free(p1);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(dev.live_phys_handles(), 0u);
  EXPECT_EQ(dev.live_reservations(), 0u);  // the fully unmapped segment was released
  expect_stats_match_snapshot(a);
}

TEST(ExpandableSegments, OneSegmentPerStreamAndPool) {
  FakeDevice dev(vm_device(512 * MiB));
  CachingAllocator a(dev, expandable());
  void* small = a.malloc(100000);  // small pool: 2 MiB chunks
  EXPECT_EQ(a.memory_reserved(), 2 * MiB);
  void* large = a.malloc(5 * MiB);
  void* other = a.malloc(5 * MiB, 9);
  EXPECT_EQ(dev.counters().vm_reserve, 3);
  Snapshot s = a.memory_snapshot();
  ASSERT_EQ(s.segments.size(), 3u);
  int small_segments = 0;
  for (const auto& seg : s.segments) {
    EXPECT_TRUE(seg.is_expandable);
    small_segments += seg.is_large ? 0 : 1;
  }
  EXPECT_EQ(small_segments, 1);
  expect_stats_match_snapshot(a);
  a.free(small);
  a.free(large);
  a.free(other);
}

TEST(ExpandableSegments, OomUnmapsCachedChunksOfOtherStreams) {
  FakeDevice dev(vm_device(64 * MiB));
  CachingAllocator a(dev, expandable());
  void* p = a.malloc(40 * MiB, 1);
  a.free(p);                        // 40 MiB stay mapped for stream 1
  void* q = a.malloc(50 * MiB, 2);  // needs 60 MiB of chunks: only after unmapping stream 1's
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(a.memory_reserved(), 60 * MiB);
  EXPECT_EQ(dev.used(), 60 * MiB);
  EXPECT_EQ(stat_value(a, "num_alloc_retries"), 1);
  EXPECT_GE(dev.counters().vm_create_failed, 1);
  expect_stats_match_snapshot(a);
  // 10 MiB of q's last chunk are free, but 20 MiB need one more chunk and nothing is left to
  // unmap: the usual error.
  EXPECT_THROW(a.malloc(20 * MiB, 2), Error);
  a.free(q);
}

TEST(ExpandableSegments, IgnoredWithoutVirtualMemory) {
  FakeDevice::Options o;
  o.vm_granularity = 0;
  FakeDevice dev(o);
  CachingAllocator a(dev, expandable());
  void* p = a.malloc(30 * MiB);
  EXPECT_EQ(dev.counters().malloc, 1);
  EXPECT_EQ(dev.counters().vm_reserve, 0);
  EXPECT_FALSE(a.memory_snapshot().segments.at(0).is_expandable);
  a.free(p);
}

TEST(PrivatePools, CaptureAllocationsAreIsolated) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  const StreamHandle capture_stream = 7;
  PoolId id = new_pool_id();
  EXPECT_EQ(id.first, 0u);
  EXPECT_NE(id.second, 0u);
  a.begin_allocate_to_pool(id, [&](StreamHandle s) { return s == capture_stream; });
  void* in_pool = a.malloc(1 * MiB, capture_stream);
  void* outside = a.malloc(1 * MiB, 0);  // another stream: default pool
  a.end_allocate_to_pool(id);

  Snapshot s = a.memory_snapshot();
  ASSERT_EQ(s.segments.size(), 2u);
  for (const auto& seg : s.segments) {
    bool is_pool = reinterpret_cast<uintptr_t>(in_pool) == seg.address;
    EXPECT_EQ(seg.pool_id, is_pool ? id : PoolId(0, 0));
  }

  // A block freed into the private pool is not handed to ordinary allocations.
  a.free(in_pool);
  void* ordinary = a.malloc(1 * MiB, capture_stream);
  EXPECT_NE(ordinary, in_pool);
  EXPECT_EQ(dev.counters().malloc, 3);
  expect_stats_match_snapshot(a);

  // The pool keeps its memory through empty_cache until it is released.
  a.free(ordinary);
  a.free(outside);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 2 * MiB);
  EXPECT_EQ(dev.live_allocations(), 1u);
  a.release_pool(id);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev.live_allocations(), 0u);
  EXPECT_THROW(a.release_pool(id), Error);  // gone
}

TEST(PrivatePools, SharedBetweenCapturesById) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  PoolId id = new_pool_id();
  a.begin_allocate_to_pool(id);  // every stream
  void* first = a.malloc(4 * MiB);
  a.end_allocate_to_pool(id);
  a.free(first);
  // A second capture sharing the pool gets the first one's freed block back.
  a.begin_allocate_to_pool(id);
  void* second = a.malloc(4 * MiB);
  a.end_allocate_to_pool(id);
  EXPECT_EQ(second, first);
  EXPECT_EQ(dev.counters().malloc, 1);
  a.free(second);
  a.release_pool(id);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 20 * MiB);  // one user left
  a.release_pool(id);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
}

TEST(PrivatePools, MemoryOfLiveAllocationsOutlivesRelease) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  PoolId id = new_pool_id();
  a.begin_allocate_to_pool(id);
  void* p = a.malloc(4 * MiB);
  a.end_allocate_to_pool(id);
  a.release_pool(id);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 20 * MiB);  // p is still allocated
  a.free(p);
  a.empty_cache();
  EXPECT_EQ(a.memory_reserved(), 0u);
}

TEST(PrivatePools, MisuseIsReported) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  PoolId id = new_pool_id();
  EXPECT_THROW(a.end_allocate_to_pool(id), Error);
  EXPECT_THROW(a.release_pool(id), Error);
  EXPECT_THROW(a.begin_allocate_to_pool(PoolId{0, 0}), Error);
  a.begin_allocate_to_pool(id);
  EXPECT_THROW(a.begin_allocate_to_pool(id), Error);
  EXPECT_THROW(a.empty_cache(), Error);
  EXPECT_THROW(a.release_pool(id), Error);  // still capturing
  a.end_allocate_to_pool(id);
  a.release_pool(id);
  EXPECT_THROW(a.begin_allocate_to_pool(id), Error);  // released by every user
}

TEST(PrivatePools, CrossStreamFreesDuringCaptureAreDeferred) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(12 * MiB, 1);
  a.record_stream(p, 2);
  PoolId id = new_pool_id();
  a.begin_allocate_to_pool(id, [](StreamHandle s) { return s == 5; });
  a.free(p);
  EXPECT_EQ(dev.counters().event_record, 0);  // no event work while capturing
  void* q = a.malloc(12 * MiB, 1);
  EXPECT_NE(q, p);
  EXPECT_EQ(dev.counters().event_record, 0);
  a.end_allocate_to_pool(id);
  void* r = a.malloc(1000, 1);  // the deferred free now records its event
  EXPECT_EQ(dev.counters().event_record, 1);
  dev.complete_stream(2);
  void* t = a.malloc(12 * MiB, 1);
  EXPECT_EQ(t, p);
  a.free(q);
  a.free(r);
  a.free(t);
  a.release_pool(id);
  expect_stats_match_snapshot(a);
}

}  // namespace
}  // namespace kiln::gpu
