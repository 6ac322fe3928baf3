// Winograd F(2x2, 3x3) float32 convolution on AVX-512: weight transform, gathered input
// transform, register-blocked batched GEMM over channels and scattered output transform.
#include "kernels/cpu/nn_conv_winograd.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "backend/cpu/parallel.h"

namespace kiln::cpu {

// Note [Winograd F(2x2,3x3) convolution]: the output is cut into 2x2 tiles; tile t reads the
// 4x4 input patch d at (2 ti - ph, 2 tj - pw) (zeros outside the image). With the transforms
// V = B^T d B, U = G g G^T (g the 3x3 kernel of (o, c)) and M[e] = sum_c U[e][o][c] V[e][c]
// for the 16 positions e of the 4x4 transform domain, the tile is A^T M A. This takes 16
// multiply-adds per (o, c, tile) instead of 36. B, A hold only 0 and +-1 and G only 0, +-1/2, so
// the float32 rounding stays that of a direct convolution (F(4x4, 3x3), 4x fewer multiplies,
// was measured 20x less accurate than direct float32 on the op-table inputs and is not used).
// Tiles of all images are numbered as one sequence and processed in blocks of kTB: each block
// (one thread) transforms its patches into V [16][cg][kTB] by 16-lane gathers, multiplies by U
// with an 8 (output channels) x 48 (tiles) AVX-512 register block, and scatters the outputs. Each
// output is computed from its own tile with a fixed summation order, so results do not depend
// on the thread count or the block boundaries.

namespace {

constexpr int kRO = 8;         // output channels per register block
constexpr int kNV = 3;         // 16-lane vectors of tiles per register block
constexpr int kTB = 16 * kNV;  // tiles per block
constexpr int64_t kMinChannels = 8;

struct Plan {
  int64_t cg, og, obs;  // channels per group (in, out), blocks of kRO output channels
  int64_t th, tw, tiles, blocks, oh, ow;
  explicit Plan(const WinogradConv& g)
      : cg(g.c / g.groups),
        og(g.o / g.groups),
        obs((og + kRO - 1) / kRO),
        th((g.oh() + 1) / 2),
        tw((g.ow() + 1) / 2),
        tiles(g.n * th * tw),
        blocks((tiles + kTB - 1) / kTB),
        oh(g.oh()),
        ow(g.ow()) {}
};

// U laid out [groups][16][obs][cg][kRO] (output channels past og are zero).
void transform_weights(const WinogradConv& g, const Plan& p, const float* w, float* u) {
  std::fill(u, u + g.groups * 16 * p.obs * p.cg * kRO, 0.0f);
  for (int64_t gr = 0; gr < g.groups; ++gr)
    for (int64_t o = 0; o < p.og; ++o)
      for (int64_t c = 0; c < p.cg; ++c) {
        const float* k = w + ((gr * p.og + o) * p.cg + c) * 9;
        float t[4][3];  // G k
        for (int j = 0; j < 3; ++j) {
          t[0][j] = k[j];
          t[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
          t[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
          t[3][j] = k[6 + j];
        }
        for (int i = 0; i < 4; ++i) {
          const float r[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                              0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
          for (int j = 0; j < 4; ++j) {
            const int64_t e = i * 4 + j;
            u[((((gr * 16 + e) * p.obs + o / kRO) * p.cg + c) * kRO) + o % kRO] = r[j];
          }
        }
      }
}

// Per-lane offsets and masks of the 16 tiles of one vector.
struct Lanes {
  __m512i in_off, out_off;
  __mmask16 in_mask[16], out_mask[4];
};

__attribute__((target("avx512f"))) void make_lanes(const WinogradConv& g, const Plan& p, int64_t t0,
                                                   Lanes& l) {
  alignas(64) int32_t io[16], oo[16];
  uint32_t im[16] = {}, om[4] = {};
  for (int lane = 0; lane < 16; ++lane) {
    const int64_t t = t0 + lane;
    io[lane] = oo[lane] = 0;
    if (t >= p.tiles) continue;
    const int64_t n = t / (p.th * p.tw), rem = t % (p.th * p.tw);
    const int64_t ti = rem / p.tw, tj = rem % p.tw;
    const int64_t y0 = 2 * ti - g.ph, x0 = 2 * tj - g.pw;
    io[lane] = static_cast<int32_t>(n * g.c * g.h * g.w + y0 * g.w + x0);
    oo[lane] = static_cast<int32_t>(n * g.o * p.oh * p.ow + 2 * ti * p.ow + 2 * tj);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 4; ++k)
        if (y0 + r >= 0 && y0 + r < g.h && x0 + k >= 0 && x0 + k < g.w) im[r * 4 + k] |= 1u << lane;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        if (2 * ti + i < p.oh && 2 * tj + j < p.ow) om[i * 2 + j] |= 1u << lane;
  }
  l.in_off = _mm512_load_si512(io);
  l.out_off = _mm512_load_si512(oo);
  for (int e = 0; e < 16; ++e) l.in_mask[e] = static_cast<__mmask16>(im[e]);
  for (int e = 0; e < 4; ++e) l.out_mask[e] = static_cast<__mmask16>(om[e]);
}

// V[e][c][lanes of vector vi] = (B^T d B)[e] for channel plane xc.
__attribute__((target("avx512f"))) inline void input_tile(const Lanes& l, const float* xc,
                                                          int64_t w, float* v, int64_t vstride) {
  __m512 d[16];
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i idx =
          _mm512_add_epi32(l.in_off, _mm512_set1_epi32(static_cast<int32_t>(r * w + k)));
      d[r * 4 + k] = _mm512_mask_i32gather_ps(zero, l.in_mask[r * 4 + k], idx, xc, 4);
    }
  __m512 t[16];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // B^T d: combine rows
    t[0 * 4 + k] = _mm512_sub_ps(d[0 * 4 + k], d[2 * 4 + k]);
    t[1 * 4 + k] = _mm512_add_ps(d[1 * 4 + k], d[2 * 4 + k]);
    t[2 * 4 + k] = _mm512_sub_ps(d[2 * 4 + k], d[1 * 4 + k]);
    t[3 * 4 + k] = _mm512_sub_ps(d[1 * 4 + k], d[3 * 4 + k]);
  }
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {  // (B^T d) B: combine columns
    const __m512* s = t + r * 4;
    _mm512_storeu_ps(v + (r * 4 + 0) * vstride, _mm512_sub_ps(s[0], s[2]));
    _mm512_storeu_ps(v + (r * 4 + 1) * vstride, _mm512_add_ps(s[1], s[2]));
    _mm512_storeu_ps(v + (r * 4 + 2) * vstride, _mm512_sub_ps(s[2], s[1]));
    _mm512_storeu_ps(v + (r * 4 + 3) * vstride, _mm512_sub_ps(s[1], s[3]));
  }
}

// mb[r][0:kTB] = sum_c ue[c][r] * ve[c][0:kTB] for the kRO rows r.
__attribute__((target("avx512f"))) inline void gemm_block(const float* ue, const float* ve,
                                                          int64_t cg, float* mb) {
  __m512 acc[kRO][kNV];
#pragma GCC unroll 8
  for (int r = 0; r < kRO; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNV; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int64_t c = 0; c < cg; ++c) {
    __m512 vv[kNV];
#pragma GCC unroll 3
    for (int j = 0; j < kNV; ++j) vv[j] = _mm512_loadu_ps(ve + c * kTB + 16 * j);
#pragma GCC unroll 8
    for (int r = 0; r < kRO; ++r) {
      const __m512 b = _mm512_set1_ps(ue[c * kRO + r]);
#pragma GCC unroll 3
      for (int j = 0; j < kNV; ++j) acc[r][j] = _mm512_fmadd_ps(b, vv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRO; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNV; ++j) _mm512_storeu_ps(mb + r * kTB + 16 * j, acc[r][j]);
}

// y tiles of one output channel from m[e] = M[e][o][lanes] (A^T m A + bias), scattered.
__attribute__((target("avx512f"))) inline void output_tile(const Lanes& l, const float* m,
                                                           int64_t mstride, float bias, int64_t ow,
                                                           float* yo) {
  __m512 s[8];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // A^T m: rows 0..3 -> 2
    const __m512 m0 = _mm512_loadu_ps(m + (0 * 4 + k) * mstride);
    const __m512 m1 = _mm512_loadu_ps(m + (1 * 4 + k) * mstride);
    const __m512 m2 = _mm512_loadu_ps(m + (2 * 4 + k) * mstride);
    const __m512 m3 = _mm512_loadu_ps(m + (3 * 4 + k) * mstride);
    s[k] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
    s[4 + k] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
  }
  const __m512 b = _mm512_set1_ps(bias);
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    const __m512* r = s + 4 * i;
    const __m512 y0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(r[0], r[1]), r[2]), b);
    const __m512 y1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(r[1], r[2]), r[3]), b);
    const __m512i row =
        _mm512_add_epi32(l.out_off, _mm512_set1_epi32(static_cast<int32_t>(i * ow)));
    _mm512_mask_i32scatter_ps(yo, l.out_mask[i * 2], row, y0, 4);
    _mm512_mask_i32scatter_ps(yo, l.out_mask[i * 2 + 1],
                              _mm512_add_epi32(row, _mm512_set1_epi32(1)), y1, 4);
  }
}

// One block of kTB tiles of group gr. v: [16][cg][kTB], mb: [16][kRO][kTB] scratch.
__attribute__((target("avx512f"))) void run_block(const WinogradConv& g, const Plan& p, int64_t gr,
                                                  int64_t t0, const float* x, const float* u,
                                                  const float* bias, float* y, float* v,
                                                  float* mb) {
  Lanes lanes[kNV];
  for (int j = 0; j < kNV; ++j) make_lanes(g, p, t0 + 16 * j, lanes[j]);
  const int64_t hw = g.h * g.w, vstride = p.cg * kTB;
  for (int64_t c = 0; c < p.cg; ++c) {
    const float* xc = x + (gr * p.cg + c) * hw;
    for (int j = 0; j < kNV; ++j) input_tile(lanes[j], xc, g.w, v + c * kTB + 16 * j, vstride);
  }
  const int64_t ohw = p.oh * p.ow;
  for (int64_t ob = 0; ob < p.obs; ++ob) {
    for (int e = 0; e < 16; ++e)
      gemm_block(u + (((gr * 16 + e) * p.obs + ob) * p.cg) * kRO, v + e * vstride, p.cg,
                 mb + e * kRO * kTB);
    for (int r = 0; r < kRO; ++r) {
      const int64_t o = ob * kRO + r;
      if (o >= p.og) break;
      const float b = bias ? bias[gr * p.og + o] : 0.0f;
      float* yo = y + (gr * p.og + o) * ohw;
      for (int j = 0; j < kNV; ++j)
        output_tile(lanes[j], mb + r * kTB + 16 * j, kRO * kTB, b, p.ow, yo);
    }
  }
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
std::unique_ptr<float[], FreeDeleter> aligned_floats(int64_t n) {
  const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
  return std::unique_ptr<float[], FreeDeleter>(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

}  // namespace

bool winograd_applicable(const WinogradConv& g) {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  if (!has_avx512 || g.groups <= 0 || g.n <= 0 || g.oh() <= 0 || g.ow() <= 0) return false;
  if (g.c / g.groups < kMinChannels || g.o / g.groups < kMinChannels) return false;
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max() / 2;
  const int64_t oh = g.oh(), ow = g.ow();
  return g.n * g.c * g.h * g.w < kMax && g.n * g.o * oh * ow < kMax && g.ph <= 2 && g.pw <= 2 &&
         g.ph >= 0 && g.pw >= 0;
}

void conv_winograd_f32(const WinogradConv& g, const float* x, const float* w, const float* bias,
                       float* y) {
  const Plan p(g);
  auto u = aligned_floats(g.groups * 16 * p.obs * p.cg * kRO);
  transform_weights(g, p, w, u.get());
  const int64_t jobs = g.groups * p.blocks;
  parallel_for(0, jobs, 1, [&](int64_t j0, int64_t j1) {
    auto v = aligned_floats(16 * p.cg * kTB);
    auto mb = aligned_floats(16 * kRO * kTB);
    for (int64_t j = j0; j < j1; ++j)
      run_block(g, p, j / p.blocks, (j % p.blocks) * kTB, x, u.get(), bias, y, v.get(), mb.get());
  });
}

}  // namespace kiln::cpu
