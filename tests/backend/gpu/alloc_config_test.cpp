// Tests of request rounding (512 B steps and power-of-two divisions) and of the parsing of
// KILN_CUDA_ALLOC_CONF, including its error messages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "alloc_test_util.h"
#include "kiln/error.h"

namespace kiln::gpu {
namespace {

using alloc_test::MiB;

// Independent reference for round_size: the interval index by repeated halving, and the
// rounding by enumerating the division points of the enclosing power-of-two interval.
size_t ref_divisions(const AllocatorConfig& c, size_t size) {
  int log2 = -1;
  for (size_t s = size; s > 0; s /= 2) ++log2;
  int index = std::min(std::max(log2 - 20, 0), 15);
  return c.roundup_power2_divisions[static_cast<size_t>(index)];
}

size_t ref_round(const AllocatorConfig& c, size_t size) {
  if (size < 512) return 512;
  size_t d = ref_divisions(c, size);
  if (d > 1 && size > 512 * d) {
    size_t lo = 1;
    while (lo * 2 <= size) lo *= 2;
    for (size_t j = 0; j <= d; ++j) {
      size_t point = lo + j * (lo / d);
      if (point >= size) return point;
    }
    ADD_FAILURE() << "no division point for " << size;
  }
  return (size + 511) / 512 * 512;
}

TEST(AllocConfig, RoundsTo512ByDefault) {
  AllocatorConfig c;
  const size_t cases[][2] = {{1, 512},         {511, 512},         {512, 512},
                             {513, 1024},      {1000, 1024},       {1024, 1024},
                             {100000, 100352}, {1048576, 1048576}, {1048577, 1049088}};
  for (auto& [in, out] : cases) EXPECT_EQ(round_size(in, c), out) << in;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    size_t s = 1 + rng() % (size_t{1} << (1 + rng() % 36));
    ASSERT_EQ(round_size(s, c), ref_round(c, s)) << s;
  }
}

TEST(AllocConfig, PowerOfTwoDivisions) {
  // PyTorch's own example: 1200 with 4 divisions lies in [1024, 2048), points 1024, 1280,
  // 1536, 1792 -> 1280.
  EXPECT_EQ(roundup_power2_next_division(1200, 4), 1280u);
  EXPECT_EQ(roundup_power2_next_division(1024, 4), 1024u);  // powers of two stay
  EXPECT_EQ(roundup_power2_next_division(1280, 4), 1280u);  // division points stay

  AllocatorConfig c4 = AllocatorConfig::parse("roundup_power2_divisions:4");
  EXPECT_EQ(round_size(1 * MiB + 1, c4), 1 * MiB + MiB / 4);
  EXPECT_EQ(round_size(3 * MiB, c4), 3 * MiB);
  EXPECT_EQ(round_size(3 * MiB + 1, c4), 3 * MiB + MiB / 2);
  EXPECT_EQ(round_size(1500, c4), 1536u);  // 1500 <= 512 * 4: plain 512 rounding
  AllocatorConfig c2 = AllocatorConfig::parse("roundup_power2_divisions:2");
  EXPECT_EQ(round_size(5000, c2), 6144u);  // [4096, 8192) in 2 steps; 512 rounding gives 5120

  std::mt19937_64 rng(8);
  for (const char* conf :
       {"roundup_power2_divisions:2", "roundup_power2_divisions:4", "roundup_power2_divisions:8",
        "roundup_power2_divisions:16", "roundup_power2_divisions:[2:2,64:8]",
        "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"}) {
    AllocatorConfig c = AllocatorConfig::parse(conf);
    for (int i = 0; i < 20000; ++i) {
      size_t s = 1 + rng() % (size_t{1} << (1 + rng() % 37));
      ASSERT_EQ(round_size(s, c), ref_round(c, s)) << conf << " size " << s;
    }
  }
}

TEST(AllocConfig, RoundingAppliesInTheAllocator) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig::parse("roundup_power2_divisions:4"));
  void* p = a.malloc(1 * MiB + 1);
  EXPECT_EQ(a.memory_allocated(), 1 * MiB + MiB / 4);
  EXPECT_EQ(alloc_test::stat_value(a, "requested_bytes.all.current"), int64_t(1 * MiB + 1));
  a.free(p);
}

TEST(AllocConfig, Defaults) {
  AllocatorConfig c = AllocatorConfig::parse("");
  EXPECT_EQ(c.max_split_size, std::numeric_limits<size_t>::max());
  EXPECT_EQ(c.max_non_split_rounding_size, 20 * MiB);
  EXPECT_EQ(c.garbage_collection_threshold, 0.0);
  EXPECT_FALSE(c.expandable_segments);
  EXPECT_TRUE(c.caching_enabled);
  for (size_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 0u);
}

TEST(AllocConfig, ParsesEveryOption) {
  AllocatorConfig c = AllocatorConfig::parse(
      "max_split_size_mb:100, garbage_collection_threshold:0.6,roundup_power2_divisions:4,"
      "expandable_segments:True,backend:native,release_lock_on_cudamalloc:True,"
      "pinned_use_cuda_host_register:True,pinned_num_register_threads:8,"
      "max_non_split_rounding_mb:64");
  EXPECT_EQ(c.max_split_size, 100 * MiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  for (size_t d : c.roundup_power2_divisions) EXPECT_EQ(d, 4u);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_TRUE(c.release_lock_on_cudamalloc);
  EXPECT_TRUE(c.pinned_use_cuda_host_register);
  EXPECT_EQ(c.pinned_num_register_threads, 8u);
  EXPECT_EQ(c.max_non_split_rounding_size, 64 * MiB);
  EXPECT_FALSE(AllocatorConfig::parse("expandable_segments:False").expandable_segments);
}

TEST(AllocConfig, DivisionListFollowsPyTorch) {
  // PyTorch's parser: the interval named "N" (MiB, a power of two) is index log2(N); the first
  // one named also fills every smaller index; ">" fills from the last named index to the end.
  AllocatorConfig c = AllocatorConfig::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
  const size_t expected[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8};
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(c.roundup_power2_divisions[i], expected[i]) << i;
  AllocatorConfig d = AllocatorConfig::parse("roundup_power2_divisions:[2:2,64:8]");
  const size_t expected_d[16] = {2, 2, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(d.roundup_power2_divisions[i], expected_d[i]) << i;
  // 600 MiB is in [512 MiB, 1 GiB): 2 divisions there -> 768 MiB.
  EXPECT_EQ(round_size(600 * MiB, c), 768 * MiB);
}

void expect_error(const char* conf, std::initializer_list<const char*> parts) {
  try {
    AllocatorConfig::parse(conf);
    ADD_FAILURE() << "no error for \"" << conf << "\"";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("[cuda] KILN_CUDA_ALLOC_CONF", 0), 0u) << msg;
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << " / " << p;
  }
}

TEST(AllocConfig, ErrorsNameTheBadKeyOrValue) {
  expect_error("foo:1", {"unrecognized option 'foo'", "max_split_size_mb"});
  expect_error("max_split_size_mb:10", {"max_split_size_mb", ">= 20", "10"});
  expect_error("max_split_size_mb:abc", {"'abc'", "max_split_size_mb"});
  expect_error("max_split_size_mb:-5", {"'-5'", "max_split_size_mb"});
  expect_error("max_split_size_mb", {"expected ':' after 'max_split_size_mb'"});
  expect_error("max_split_size_mb:", {"missing value for max_split_size_mb"});
  expect_error("max_split_size_mb:100 garbage_collection_threshold:0.5",
               {"'100garbage_collection_threshold'"});
  expect_error("garbage_collection_threshold:1.5", {"garbage_collection_threshold", "1.5"});
  expect_error("garbage_collection_threshold:0", {"garbage_collection_threshold"});
  expect_error("garbage_collection_threshold:x", {"'x'", "not a number"});
  expect_error("roundup_power2_divisions:3", {"roundup_power2_divisions", "power of 2", "3"});
  expect_error("roundup_power2_divisions:[256:3]", {"power of 2", "3"});
  expect_error("roundup_power2_divisions:[300:2]", {"interval '300'"});
  expect_error("roundup_power2_divisions:[256:2", {"missing value"});
  expect_error("expandable_segments:yes", {"'yes'", "expandable_segments", "True or False"});
  expect_error("expandable_segments:true", {"True or False"});
  expect_error("backend:cudaMallocAsync", {"cudaMallocAsync", "native"});
  expect_error("pinned_num_register_threads:3", {"pinned_num_register_threads"});
  expect_error("max_split_size_mb:100;expandable_segments:True", {"'100;expandable_segments'"});
  expect_error(",", {"unexpected ','"});
}

struct EnvGuard {
  explicit EnvGuard(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v, had_ = true;
  }
  ~EnvGuard() {
    if (had_) {
      setenv(name_, saved_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

TEST(AllocConfig, ReadsTheEnvironment) {
  EnvGuard g1("KILN_CUDA_ALLOC_CONF"), g2("KILN_NO_CUDA_MEMORY_CACHING");
  setenv("KILN_CUDA_ALLOC_CONF", "max_split_size_mb:64,expandable_segments:True", 1);
  unsetenv("KILN_NO_CUDA_MEMORY_CACHING");
  AllocatorConfig c = AllocatorConfig::from_env();
  EXPECT_EQ(c.max_split_size, 64 * MiB);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_TRUE(c.caching_enabled);
  EXPECT_EQ(c.conf, "max_split_size_mb:64,expandable_segments:True");
  setenv("KILN_NO_CUDA_MEMORY_CACHING", "1", 1);
  EXPECT_FALSE(AllocatorConfig::from_env().caching_enabled);
  setenv("KILN_NO_CUDA_MEMORY_CACHING", "0", 1);
  EXPECT_TRUE(AllocatorConfig::from_env().caching_enabled);
  setenv("KILN_NO_CUDA_MEMORY_CACHING", "maybe", 1);
  EXPECT_THROW(AllocatorConfig::from_env(), Error);
  setenv("KILN_NO_CUDA_MEMORY_CACHING", "1", 1);
  // An allocator built from the environment bypasses the cache.
  FakeDevice dev;
  CachingAllocator a(dev);
  a.free(a.malloc(4096));
  EXPECT_EQ(dev.counters().free, 1);
  setenv("KILN_CUDA_ALLOC_CONF", "max_split_size_mb:1", 1);
  EXPECT_THROW(AllocatorConfig::from_env(), Error);
}

TEST(AllocConfig, SetConfigAtRunTime) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  a.free(a.malloc(30 * MiB));
  EXPECT_EQ(a.memory_reserved(), 30 * MiB);
  a.set_config(AllocatorConfig::parse("max_split_size_mb:200"));
  EXPECT_EQ(alloc_test::stat_value(a, "max_split_size"), int64_t(200 * MiB));
  AllocatorConfig off;
  off.caching_enabled = false;
  a.set_config(off);  // turning caching off returns the cache
  EXPECT_EQ(a.memory_reserved(), 0u);
  EXPECT_EQ(dev.used(), 0u);
}

}  // namespace
}  // namespace kiln::gpu
