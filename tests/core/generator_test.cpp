// Tests of kiln::Generator (include/kiln/random.h): seeding, offsets, state bytes, thread-safe
// reserve, the default generators, and the offset rule of Note [Philox streams] across calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>
#include <vector>

#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/error.h"
#include "kiln/random.h"

namespace kiln {
namespace {

// What a float rand op of n elements does (k = 1): reserve, then element i = uniform(W[i]).
std::vector<float> fake_rand(Generator& g, uint64_t n) {
  const PhiloxSeedOffset so = g.reserve(philox_counters(n, 1));
  std::vector<float> out(n);
  PhiloxCursor cur(so.seed, so.offset);
  for (uint64_t i = 0; i < n; ++i) out[i] = rng_uniform_float(cur.word(i));
  return out;
}

// The error message of `f`, or "" if it does not throw kiln::Error.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Generator, FreshGeneratorUsesPyTorchDefaultSeed) {
  Generator g;
  EXPECT_EQ(g.initial_seed(), 67280421310721ull);
  EXPECT_EQ(g.get_offset(), 0u);
  EXPECT_EQ(g.device(), Device("cpu"));
  EXPECT_EQ(Generator(Device("cuda:2")).device(), Device("cuda:2"));
}

// The defaults of a fresh process, checked in a freshly started copy of this test binary (the
// "threadsafe" death-test style re-executes it), whatever other tests did to the defaults.
TEST(Generator, FreshProcessDefaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const bool ok = initial_seed() == kDefaultRngSeed &&
                        default_generator().initial_seed() == kDefaultRngSeed &&
                        default_generator().get_offset() == 0 &&
                        default_generator(Device("cuda:0")).initial_seed() == kDefaultRngSeed;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Generator, ReserveAdvancesAndManualSeedResets) {
  Generator g;
  g.manual_seed(99);
  PhiloxSeedOffset a = g.reserve(10);
  EXPECT_EQ(a.seed, 99u);
  EXPECT_EQ(a.offset, 0u);
  PhiloxSeedOffset b = g.reserve(0);
  EXPECT_EQ(b.offset, 10u);
  PhiloxSeedOffset c = g.reserve(3);
  EXPECT_EQ(c.offset, 10u);
  EXPECT_EQ(g.get_offset(), 13u);
  g.set_offset(1000);
  EXPECT_EQ(g.reserve(1).offset, 1000u);
  EXPECT_EQ(&g.manual_seed(7), &g);
  EXPECT_EQ(g.initial_seed(), 7u);
  EXPECT_EQ(g.get_offset(), 0u);
}

TEST(Generator, ReserveRefusesToWrap) {
  Generator g;
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  g.set_offset(max - 5);
  EXPECT_EQ(g.reserve(5).offset, max - 5);
  EXPECT_EQ(g.get_offset(), max);
  EXPECT_NE(error_of([&] { g.reserve(1); }).find("[Generator.reserve]"), std::string::npos);
  EXPECT_EQ(g.get_offset(), max);
  EXPECT_EQ(g.reserve(0).offset, max);
}

TEST(Generator, SeedIsNonDeterministicAndResetsOffset) {
  Generator g;
  g.reserve(5);
  const uint64_t s1 = g.seed();
  EXPECT_EQ(g.initial_seed(), s1);
  EXPECT_EQ(g.get_offset(), 0u);
  const uint64_t s2 = g.seed();
  EXPECT_NE(s1, s2);  // equal with probability 2^-64
}

TEST(Generator, HandlesShareState) {
  Generator a;
  Generator b = a;
  Generator c;
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(a != c);
  b.manual_seed(5);
  b.reserve(4);
  EXPECT_EQ(a.initial_seed(), 5u);
  EXPECT_EQ(a.get_offset(), 4u);
  EXPECT_EQ(c.initial_seed(), kDefaultRngSeed);
}

TEST(Generator, StateLayout) {
  Generator g;
  g.manual_seed(0x0102030405060708ull);
  g.set_offset(0x1112131415161718ull);
  const std::vector<uint8_t> s = g.get_state();
  const std::vector<uint8_t> want = {'k',  'R',  'N',  'G',  1,    0,    0,    0,
                                     0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                                     0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11};
  EXPECT_EQ(s, want);
}

TEST(Generator, StateRoundTripReproducesTheSequence) {
  Generator g;
  g.manual_seed(2024);
  fake_rand(g, 7);
  const std::vector<uint8_t> saved = g.get_state();
  const std::vector<float> a1 = fake_rand(g, 5), a2 = fake_rand(g, 100);
  g.set_state(saved);
  EXPECT_EQ(fake_rand(g, 5), a1);
  EXPECT_EQ(fake_rand(g, 100), a2);
  // Another generator, even on another device, continues identically from the same state.
  Generator other(Device("cuda:1"));
  other.set_state(saved);
  EXPECT_EQ(fake_rand(other, 5), a1);
  EXPECT_NE(fake_rand(other, 5), a1);  // and then moves on
}

TEST(Generator, SetStateRejectsBadStates) {
  Generator g;
  g.manual_seed(3);
  g.reserve(2);
  const std::vector<uint8_t> good = g.get_state();
  std::vector<uint8_t> short_state(good.begin(), good.end() - 1);
  std::vector<uint8_t> bad_tag = good, bad_version = good;
  bad_tag[0] = 'x';
  bad_version[4] = 2;
  Generator h;
  for (const auto& bad : {short_state, bad_tag, bad_version, std::vector<uint8_t>{}}) {
    const std::string msg = error_of([&] { h.set_state(bad); });
    EXPECT_EQ(msg.rfind("[Generator.set_state]", 0), 0u) << msg;
    EXPECT_EQ(h.initial_seed(), kDefaultRngSeed);  // unchanged
    EXPECT_EQ(h.get_offset(), 0u);
  }
  h.set_state(good);
  EXPECT_EQ(h.initial_seed(), 3u);
  EXPECT_EQ(h.get_offset(), 2u);
}

// Concurrent reserves get disjoint ranges that tile [0, total) exactly.
TEST(Generator, ConcurrentReservesAreDisjoint) {
  Generator g;
  g.manual_seed(1);
  constexpr int kThreads = 8, kCalls = 2000;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const uint64_t n = static_cast<uint64_t>((t * 7 + i * 13) % 5);  // includes 0
        const PhiloxSeedOffset so = g.reserve(n);
        EXPECT_EQ(so.seed, 1u);
        got[t].push_back({so.offset, n});
      }
    });
  for (auto& th : threads) th.join();
  std::vector<std::pair<uint64_t, uint64_t>> all;
  uint64_t total = 0;
  for (auto& v : got)
    for (auto& r : v) {
      all.push_back(r);
      total += r.second;
    }
  std::sort(all.begin(), all.end());
  uint64_t next = 0;
  for (auto& [off, n] : all) {
    EXPECT_EQ(off, next);
    next = off + n;
  }
  EXPECT_EQ(next, total);
  EXPECT_EQ(g.get_offset(), total);
}

// Note [Philox streams] across calls: two calls of n1 and n2 elements equal one call of n1 + n2
// elements exactly when n1 * k is a multiple of 4; otherwise the second call starts at the next
// whole counter, and the two calls never share a counter.
TEST(Generator, TwoCallsFollowTheOffsetRule) {
  const uint64_t n = 50;
  Generator g;
  g.manual_seed(77);
  const std::vector<float> whole = fake_rand(g, n);
  for (uint64_t n1 : {uint64_t{0}, uint64_t{4}, uint64_t{20}, uint64_t{1}, uint64_t{21}}) {
    g.manual_seed(77);
    std::vector<float> halves = fake_rand(g, n1);
    const uint64_t second_offset = g.get_offset();
    EXPECT_EQ(second_offset, (n1 + 3) / 4);
    const std::vector<float> rest = fake_rand(g, n - n1);
    halves.insert(halves.end(), rest.begin(), rest.end());
    if (n1 % 4 == 0) {
      EXPECT_EQ(halves, whole) << "n1 = " << n1;
    } else {
      EXPECT_NE(halves, whole) << "n1 = " << n1;
      for (uint64_t i = 0; i < n - n1; ++i)  // element i of call 2 uses W[i] at its own offset
        EXPECT_EQ(rest[i], rng_uniform_float(philox_word(77, second_offset, i)));
      // Call 1 used counters [0, ceil(n1/4)); call 2 starts there.
      EXPECT_GT(second_offset * 4, n1 - 1);
    }
    EXPECT_EQ(g.get_offset(), second_offset + (n - n1 + 3) / 4);
  }
  // 64-bit draws (k = 2) follow the same rule with two words per element.
  g.manual_seed(5);
  const PhiloxSeedOffset so = g.reserve(philox_counters(3, 2));
  EXPECT_EQ(g.get_offset(), 2u);
  EXPECT_EQ(philox_u64(so.seed, so.offset, 2),
            rng_make_u64(philox_word(5, 0, 4), philox_word(5, 0, 5)));
}

TEST(Generator, DefaultGeneratorsAndGlobalSeeding) {
  Generator cuda1 = default_generator(Device("cuda:1"));
  EXPECT_EQ(cuda1.device(), Device("cuda:1"));
  EXPECT_TRUE(default_generator(Device("cuda:1")) == cuda1);
  EXPECT_TRUE(default_generator() == default_generator(Device("cpu")));
  EXPECT_TRUE(default_generator(Device("cuda:1")) != default_generator(Device("cuda:2")));
  cuda1.reserve(9);
  default_generator().reserve(4);

  manual_seed(123);
  EXPECT_EQ(initial_seed(), 123u);
  EXPECT_EQ(default_generator().initial_seed(), 123u);
  EXPECT_EQ(default_generator().get_offset(), 0u);
  EXPECT_EQ(cuda1.initial_seed(), 123u);
  EXPECT_EQ(cuda1.get_offset(), 0u);
  // Created after the global seed (an index far beyond any real GPU is accepted here).
  Generator cuda100 = default_generator(Device("cuda:100"));
  EXPECT_EQ(cuda100.device(), Device("cuda:100"));
  EXPECT_EQ(cuda100.initial_seed(), 123u);

  const uint64_t s = seed();
  EXPECT_EQ(initial_seed(), s);
  EXPECT_EQ(cuda1.initial_seed(), s);
  EXPECT_EQ(default_generator(Device("cuda:101")).initial_seed(), s);
  EXPECT_NE(seed(), s);  // equal with probability 2^-64
}

int fake_current_device() { return 3; }

TEST(Generator, CudaWithoutIndexMeansCurrentDevice) {
  EXPECT_EQ(default_generator(Device("cuda")).device(), Device("cuda:0"));
  detail::set_current_cuda_device_hook(&fake_current_device);
  EXPECT_EQ(default_generator(Device("cuda")).device(), Device("cuda:3"));
  EXPECT_TRUE(default_generator(Device("cuda")) == default_generator(Device("cuda:3")));
  EXPECT_EQ(Generator(Device("cuda")).device(), Device("cuda:3"));
  detail::set_current_cuda_device_hook(nullptr);
  EXPECT_EQ(Generator(Device("cuda")).device(), Device("cuda:0"));
}

}  // namespace
}  // namespace kiln
