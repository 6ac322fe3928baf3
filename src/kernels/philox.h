// Philox 4x32-10 counter-based generator (Salmon et al., SC'11) and the rule that maps a random
// op's elements to counters (Note [Philox streams]). Host, nvcc/hipcc device code and NVRTC/hiprtc.
#pragma once

#include "kiln/macros.h"

#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
// The run-time compilers have no <cstdint>; these widths hold on every target kiln builds for.
// They live in namespace kiln so they never clash with a global typedef of another width.
namespace kiln {
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
}  // namespace kiln
#else
#include <cstdint>
#endif

// Note [Philox streams]
// ---------------------
// A generator's state is (seed, offset). The Philox key is the 64-bit seed (key word 0 = low 32
// bits, key word 1 = high 32 bits). The counter is a 128-bit integer split into four 32-bit
// words, least significant first; `offset` counts counters ("blocks"), each of which yields four
// 32-bit words.
//
// A random op reserves its counters with Generator::reserve(n), which returns (seed, off) and
// advances the generator's offset by n; the next call therefore starts at off + n and no two
// calls ever share a counter. The op's output defines one stream of 32-bit words:
//
//     W[j] = philox4x32_10(key = seed, counter = off + j / 4)[j % 4]      (128-bit addition)
//
// Elements are numbered i = 0, 1, ... in the logical row-major order of the output (not memory
// order; strides do not matter). An op declares k = words per element, a constant for the whole
// call (1, 2 or 4), and element i owns the words W[k*i], ..., W[k*i + k - 1]:
//   - k = 1: 32-bit draws (float uniform/bernoulli/exponential/..., float normal);
//   - k = 2: 64-bit draws, x = W[2i] | W[2i+1] << 32 (double transforms, integers with a range
//            up to 2^32, double normal);
//   - k = 4: 128-bit draws, the whole counter off + i (integers with a range above 2^32).
// Box-Muller turns two uniforms into two normals, so elements 2p and 2p+1 are computed together
// from the words the pair owns (W[2p], W[2p+1] for k = 1; the two 64-bit draws 2p, 2p+1 for
// k = 2); element 2p takes the cosine branch, 2p+1 the sine branch. When the element count is
// odd the last element still reads its partner's words; they lie inside the reserved counters
// (see philox_counters).
//
// The call reserves philox_counters(n, k) = ceil(n * k / 4) counters. Hence every value is a
// pure function of (seed, off, i): a CPU loop may split the elements into chunks at any point
// (a chunk that starts inside a counter recomputes that counter), and a GPU kernel may give each
// thread any elements it likes (the natural choice: one thread per counter, 4/k elements each).
// Thread counts, chunking and the device never change the numbers: 32-bit words, integer and
// bernoulli results and uniform floats (uniform(a, b) too, as long as the host build
// does not contract a * b + c into an FMA) are bit-identical on every device; transforms that
// call log/sin/cos/exp/tan can differ by a few ulp where the device's math library rounds
// differently from the host's (at most 3 ulp on an H100 against glibc, 2^20 elements).
// Two consecutive calls of n1 and n2 elements use the counters [off, off + c1) and
// [off + c1, off + c1 + c2); they give the same values as one call of n1 + n2 elements exactly
// when n1 * k is a multiple of 4.

namespace kiln {

// One Philox block: four 32-bit words, v[0] first.
struct PhiloxBlock {
  uint32_t v[4];
};

// Multipliers and Weyl key increments of Philox4x32 (Salmon et al., table 2 / Random123).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

// Returns the low 32 bits of a * b and stores the high 32 bits in *hi.
KILN_HD inline uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
#if KILN_DEVICE_CODE
  *hi = __umulhi(a, b);
  return a * b;
#else
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
#endif
}

// Philox 4x32 with R rounds; kiln uses R = 10 (Philox4x32). The 7-round variant exists only so
// the tests can check it against the published known answers as well.
template <int R>
struct Philox4x32R {
  uint32_t key[2];

  KILN_HD explicit Philox4x32R(uint64_t seed)
      : key{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}
  KILN_HD Philox4x32R(uint32_t k0, uint32_t k1) : key{k0, k1} {}

  // The bijection itself: counter -> four random words.
  KILN_HD PhiloxBlock operator()(PhiloxBlock ctr) const {
    uint32_t k0 = key[0], k1 = key[1];
    uint32_t c0 = ctr.v[0], c1 = ctr.v[1], c2 = ctr.v[2], c3 = ctr.v[3];
#if KILN_DEVICE_CODE
#pragma unroll
#endif
    for (int r = 0; r < R; ++r) {
      if (r > 0) {
        k0 += kPhiloxW0;
        k1 += kPhiloxW1;
      }
      uint32_t hi0, hi1;
      const uint32_t lo0 = philox_mulhilo(kPhiloxM0, c0, &hi0);
      const uint32_t lo1 = philox_mulhilo(kPhiloxM1, c2, &hi1);
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
    }
    PhiloxBlock out;
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
  }

  // The block at 128-bit counter offset + block (the carry of the 64-bit sum goes to word 2).
  KILN_HD PhiloxBlock block(uint64_t offset, uint64_t block_index) const {
    const uint64_t c = offset + block_index;
    const uint32_t carry = c < offset ? 1u : 0u;
    PhiloxBlock ctr;
    ctr.v[0] = static_cast<uint32_t>(c);
    ctr.v[1] = static_cast<uint32_t>(c >> 32);
    ctr.v[2] = carry;
    ctr.v[3] = 0u;
    return (*this)(ctr);
  }
};

using Philox4x32 = Philox4x32R<10>;

// Counters a call of n elements with k words per element reserves: ceil(n * k / 4).
KILN_HD constexpr uint64_t philox_counters(uint64_t n, uint32_t words_per_element) {
  return (n * words_per_element + 3u) / 4u;
}

// W[j] of the stream (seed, offset) (Note [Philox streams]).
KILN_HD inline uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t j) {
  return Philox4x32(seed).block(offset, j / 4u).v[j % 4u];
}

// The 64-bit draw d of the stream: W[2d] | W[2d+1] << 32 (both words lie in one block).
KILN_HD inline uint64_t philox_u64(uint64_t seed, uint64_t offset, uint64_t d) {
  const PhiloxBlock b = Philox4x32(seed).block(offset, d / 2u);
  const uint32_t w = static_cast<uint32_t>(d % 2u) * 2u;
  return static_cast<uint64_t>(b.v[w]) | (static_cast<uint64_t>(b.v[w + 1]) << 32);
}

// Sequential reader for CPU loops: recomputes a block only when the word index leaves it, so
// reading words j, j+1, ... costs one Philox call per four words.
struct PhiloxCursor {
  Philox4x32 rng;
  uint64_t offset;
  uint64_t cached = ~static_cast<uint64_t>(0);
  PhiloxBlock block{};

  KILN_HD PhiloxCursor(uint64_t seed, uint64_t off) : rng(seed), offset(off) {}

  // W[j].
  KILN_HD uint32_t word(uint64_t j) {
    const uint64_t b = j / 4u;
    if (b != cached) {
      block = rng.block(offset, b);
      cached = b;
    }
    return block.v[j % 4u];
  }
  // 64-bit draw d: W[2d] | W[2d+1] << 32.
  KILN_HD uint64_t u64(uint64_t d) {
    const uint32_t lo = word(2u * d);
    return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(block.v[(2u * d) % 4u + 1u]) << 32);
  }
};

}  // namespace kiln
