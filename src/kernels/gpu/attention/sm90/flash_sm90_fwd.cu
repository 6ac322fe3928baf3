// Hopper (sm_90a) fused-attention forward, FlashAttention-3 style: a producer warp streams Q/K/V
// tiles by TMA into 128-byte-swizzled shared memory (mbarrier pipeline), consumer warpgroups run
// S = Q K^T and O += P V on wgmma with the softmax of one tile overlapping the P V of the last.
#include <atomic>
#include <climits>
#include <cstdlib>
#include <tuple>

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/sm90/flash_sm90.h"
#include "kernels/gpu/attention/sm90/sm90_ptx.cuh"
#include "kernels/gpu/attention/sm90/sm90_tma.cuh"
#include "kernels/gpu/warp.cuh"

namespace kiln::gpu::flash {
namespace {

using detail::FlashParams;
using namespace sm90;

// Note [Flash sm90 forward]: a block owns kBq = 64 kConsumers query rows of one (batch, head):
// a producer warpgroup (registers given up by setmaxnreg; one thread issues every TMA copy) and
// kConsumers consumer warpgroups of 64 rows. The producer loads Q once, then K and V of each key
// tile of kBk keys into stage t % kStages, each on its own "full" mbarrier (S can start before V
// lands); K and V each have an "empty" barrier the consumer warps arrive on once their products
// have read the buffer (K right after S_t, V after P V), so the next loads start early. Per key
// tile t a consumer warpgroup issues S_t = Q K_t^T (wgmma m64nKk16, both operands K-major in
// shared memory), then O += P_{t-1} V_{t-1} (m64nDk16, P from registers in the A-fragment
// layout, V read N-major), waits for S_t alone and runs the online softmax of tile t while the
// tensor cores finish P_{t-1} V_{t-1}; then it rescales O and packs P_t. With two consumers and
// kPingPong they take turns issuing (named barriers 2 and 3). Shared tiles are [D / 64][rows][64
// elements] with TMA's 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8)), the layout
// wgmma's SW128 descriptors read: K-major operands step 32 bytes per k16 inside a 64-element
// chunk (stride between 8-row groups 1024 bytes); V (N-major) steps 16 rows = 2048 bytes per k16,
// its 64-column chunks kBk 128 bytes apart (the leading byte offset). The output goes through the
// warpgroup's (then unused) Q rows in shared memory and leaves as 16-byte row chunks. Causal calls
// stop at the block's diagonal and mask only tiles that cross it; the grid runs a head's query
// tiles together (K / V stay in L2), heaviest first. Softmax runs in the log2 domain with the scale
// folded into the exponent (scale > 0 only). Semantics match flash_mma.cuh: causal is top-left
// aligned (key j seen by row i iff j <= i), rows without keys give 0 and lse = -inf.
//
// Measured on an H200, causal bf16 forward TFLOP/s (bench/run_attention_bench.sh with
// KILN_BENCH_SM90_CFGS; PyTorch 2.11 / cuDNN in the same runs 306-311 and 594-608; flash_mma
// 225 and 273), grid (tiles, heads, batch):
//   B16 H12 T1024 D64: 1 consumer, 3 blocks/SM, kBk 64, 3 or 4 stages 281-283; 1 consumer,
//     2 blocks/SM, kBk 128: 260; 2 consumers ping-pong kBk 128: 235; clusters of 2 multicasting
//     K/V halves: 150.
//   B4 H32 T4096 D128: 2 consumers ping-pong kBk 128, 2 or 3 stages 586-591 (without ping-pong
//     582); kBk 64: 482-488; clusters: 432.
// With the earlier grid (heads, batch, tiles) every resident block had its own head and K/V came
// from DRAM (ncu: 27% L2 hits, 3.8 TB/s): D128 peaked at 496, D64 at 280.
// ptxas: no spills; 168 registers at entry (1 block/SM), consumers raised to 240 / 232 / 136.
// Next at D64 (MUFU-bound softmax, short sequences): a persistent grid that overlaps one tile's
// epilogue with the next one's loads, part of exp2 on the FMA pipe.
//
// One kernel shape: key tile kBk, kStages K/V buffers, kConsumers consumer warpgroups of 64 query
// rows, kMinBlocks blocks per SM (several blocks let one block's start and end overlap another's
// work; the register split follows), kPingPong (2 consumers): the consumer warpgroups take turns
// issuing their MMAs (named barriers), so one's softmax overlaps the other's products.
template <int kD_, int kBk_, int kStages_, int kConsumers_, int kMinBlocks_, bool kPingPong_,
          int kCluster_ = 1>
struct FwdCfg {
  static constexpr int kCluster = kCluster_;
  static constexpr int kD = kD_, kBk = kBk_, kStages = kStages_, kConsumers = kConsumers_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kPingPong = kPingPong_ && kConsumers == 2;
  static constexpr int kBq = 64 * kConsumers, kThreads = 128 * (kConsumers + 1);
  static constexpr int kChunks = kD / 64;
  static constexpr int kQBytes = kBq * kD * 2;
  static constexpr int kTileBytes = kBk * kD * 2;
  static constexpr int kK = kQBytes;                                 // K stages
  static constexpr int kV = kK + kStages * kTileBytes;               // V stages
  static constexpr int kBar = kV + kStages * kTileBytes;             // mbarriers
  static constexpr int kSmem = kBar + 8 * (1 + 4 * kStages) + 1024;  // + alignment slack
  static_assert(kSmem * kMinBlocks <= 232448, "shared memory");
  // setmaxnreg: the producer keeps 24 registers; the consumers take what the block's share (the
  // launch bound's cap, a multiple of 8) leaves, at most 240.
  static constexpr int kLaunchRegs = 65536 / (kThreads * kMinBlocks) / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kSpare = (kThreads * kLaunchRegs - 128 * kProducerRegs) / (128 * kConsumers);
  static constexpr int kConsumerRegs = kSpare / 8 * 8 > 240 ? 240 : kSpare / 8 * 8;
};

template <bool kBf16, int kN>
__device__ inline void wgmma_s(float (&s)[kN / 2], uint64_t da, uint64_t db, int acc) {
  if constexpr (kN == 64)
    wgmma_ss_n64<kBf16>(s, da, db, acc);
  else
    wgmma_ss_n128<kBf16>(s, da, db, acc);
}
template <bool kBf16, int kD>
__device__ inline void wgmma_pv(float (&o)[kD / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (kD == 64)
    wgmma_rs_n64<kBf16>(o, a, db, 1);
  else
    wgmma_rs_n128<kBf16>(o, a, db, 1);
}

template <bool kBf16, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    sm90_fwd_kernel(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const FlashParams p) {
  constexpr int kD = C::kD, kBk = C::kBk, kStages = C::kStages, kChunks = C::kChunks;
  constexpr int kBq = C::kBq;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sq = base, bar = base + C::kBar;
  const uint32_t q_full = bar;
  auto k_full = [&](int s) { return bar + 8 + 8 * s; };
  auto v_full = [&](int s) { return bar + 8 + 8 * (kStages + s); };
  auto k_empty = [&](int s) { return bar + 8 + 8 * (2 * kStages + s); };
  auto v_empty = [&](int s) { return bar + 8 + 8 * (3 * kStages + s); };
  auto k_buf = [&](int s) { return base + C::kK + s * C::kTileBytes; };
  auto v_buf = [&](int s) { return base + C::kV + s * C::kTileBytes; };

  const int h = blockIdx.y, b = blockIdx.z;
  const int64_t lq = p.tq, lk = p.tk;
  const int i0 = static_cast<int>(gridDim.x - 1 - blockIdx.x) * kBq;
  const int hk = h / (p.hq / p.hk);
  // Key tiles of the query tile of grid index z (0 for padding blocks of a cluster grid).
  auto tiles_of = [&](int z) {
    const int64_t iz = static_cast<int64_t>(gridDim.x - 1 - z) * kBq;
    if (iz >= lq) return 0;
    int64_t kend = lk;
    if (p.causal && iz + kBq < kend) kend = iz + kBq;
    return static_cast<int>((kend + kBk - 1) / kBk);
  };
  const int ntiles = tiles_of(blockIdx.x);
  // Clusters of 2 (adjacent query tiles of one head): tiles both blocks need (the first ncommon)
  // come in two halves, one multicast by each block's producer into both blocks; the stage is
  // reused once the consumers of both blocks have released it (they arrive on both blocks' empty
  // barriers; tiles one block needs alone count its own arrivals twice).
  const int rank = C::kCluster == 2 ? static_cast<int>(cluster_rank()) : 0;
  const int ncommon = C::kCluster == 2 ? min(ntiles, tiles_of(blockIdx.x ^ 1)) : 0;
  const int warp = threadIdx.x / kWarpThreads, lane = threadIdx.x % kWarpThreads;

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      // one arrival per consumer warp (of both blocks of a cluster)
      mbar_init(k_empty(s), 4 * C::kConsumers * C::kCluster);
      mbar_init(v_empty(s), 4 * C::kConsumers * C::kCluster);
    }
    mbar_init_fence();
  }
  if constexpr (C::kCluster == 2)
    cluster_sync();  // the partner's barriers exist before any multicast or remote arrival
  else
    __syncthreads();

  if (warp < 4) {  // producer warpgroup
    regs_dealloc<C::kProducerRegs>();
    if (warp == 0 && lane == 0 && ntiles > 0) {
      tma_prefetch_map(&mq);
      tma_prefetch_map(&mk);
      tma_prefetch_map(&mv);
      mbar_arrive_expect_tx(q_full, C::kQBytes);
      for (int c = 0; c < kChunks; ++c)
        tma_load_4d(sq + c * kBq * 128, &mq, q_full, c * 64, i0, h, b);
      // One K or V tile into buffer dst: whole (kCluster 1), or two halves of kBk / 2 rows.
      auto load_kv = [&](uint32_t dst, const CUtensorMap* map, uint32_t full, int t) {
        if constexpr (C::kCluster == 1) {
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(dst + c * kBk * 128, map, full, c * 64, t * kBk, hk, b);
        } else {
          constexpr int kHalf = kBk / 2;
          for (int c = 0; c < kChunks; ++c)
            for (int hf = 0; hf < 2; ++hf) {
              const uint32_t d = dst + c * kBk * 128 + hf * kHalf * 128;
              if (t >= ncommon)
                tma_load_4d(d, map, full, c * 64, t * kBk + hf * kHalf, hk, b);
              else if (hf == rank)
                tma_load_4d_multicast(d, map, full, c * 64, t * kBk + hf * kHalf, hk, b, 3);
            }
        }
      };
      for (int t = 0; t < ntiles; ++t) {
        const int s = t % kStages, u = t / kStages;
        if (t >= kStages) mbar_wait(k_empty(s), (u - 1) & 1);
        mbar_arrive_expect_tx(k_full(s), C::kTileBytes);
        load_kv(k_buf(s), &mk, k_full(s), t);
        if (t >= kStages) mbar_wait(v_empty(s), (u - 1) & 1);
        mbar_arrive_expect_tx(v_full(s), C::kTileBytes);
        load_kv(v_buf(s), &mv, v_full(s), t);
      }
    }
  } else {
    regs_alloc<C::kConsumerRegs>();

    const int cw = warp / 4 - 1, wi = warp % 4;
    const int g = lane >> 2, tq4 = lane & 3;
    const int row0 = i0 + cw * 64 + wi * 16 + g;  // this thread's rows: row0, row0 + 8
    const int wg_row = i0 + cw * 64;              // the warpgroup's first row
    constexpr float kLog2e = 1.4426950408889634f;
    const float sl2 = p.scale * kLog2e;

    float o[kD / 2];
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) o[i] = 0.0f;
    float s[kBk / 2];
#pragma unroll
    for (int i = 0; i < kBk / 2; ++i) s[i] = 0.0f;
    uint32_t pa[kBk / 16][4];
    float m[2] = {neg_inf(), neg_inf()}, l[2] = {0.0f, 0.0f};

    const uint32_t q_wg = sq + cw * 64 * 128;
    auto issue_s = [&](int t) {
      const uint32_t kb = k_buf(t % kStages);
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t off = (kk % 4) * 32;  // k16 step inside a 64-element chunk
        const uint64_t da = make_desc_sw128(q_wg + (kk / 4) * kBq * 128 + off, 16, 1024);
        const uint64_t db = make_desc_sw128(kb + (kk / 4) * kBk * 128 + off, 16, 1024);
        wgmma_s<kBf16, kBk>(s, da, db, kk > 0 ? 1 : 0);
      }
      wgmma_commit();
    };
    auto issue_pv = [&](int t) {
      const uint32_t vb = v_buf(t % kStages);
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk)
        wgmma_pv<kBf16, kD>(o, pa[kk], make_desc_sw128(vb + kk * 2048, kBk * 128, 1024));
      wgmma_commit();
    };
    // Masks (when tile t crosses the key end or the causal diagonal) and exponentiates s in place
    // against the updated running max; returns the factors that rescale the old O rows.
    auto softmax = [&](int t, float(&al)[2]) {
      const int j0 = t * kBk;
      if (j0 + kBk > lk || (p.causal && j0 + kBk - 1 > wg_row)) {
        const int klim = lk - j0 < kBk ? static_cast<int>(lk - j0) : kBk;
        const int il0 = row0 - j0;
#pragma unroll
        for (int n = 0; n < kBk / 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int jl = n * 8 + 2 * tq4 + (r & 1), il = il0 + (r < 2 ? 0 : 8);
            if (jl >= klim || (p.causal && jl > il)) s[4 * n + r] = neg_inf();
          }
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float mx = neg_inf();
#pragma unroll
        for (int n = 0; n < kBk / 8; ++n)
          mx = fmaxf(mx, fmaxf(s[4 * n + 2 * e], s[4 * n + 2 * e + 1]));
        mx = fmaxf(mx, warp_shfl_xor(mx, 1));
        mx = fmaxf(mx, warp_shfl_xor(mx, 2));
        mx = fmaxf(m[e], mx * sl2);
        const float mu = mx == neg_inf() ? 0.0f : mx;
        al[e] = exp2_approx(m[e] - mu);
        m[e] = mx;
        float rs = 0.0f;
#pragma unroll
        for (int n = 0; n < kBk / 8; ++n) {
          s[4 * n + 2 * e] = exp2_approx(fmaf(s[4 * n + 2 * e], sl2, -mu));
          s[4 * n + 2 * e + 1] = exp2_approx(fmaf(s[4 * n + 2 * e + 1], sl2, -mu));
          rs += s[4 * n + 2 * e] + s[4 * n + 2 * e + 1];
        }
        l[e] = l[e] * al[e] + rs;
      }
    };
    auto pack_p = [&]() {
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) {
        pa[kk][0] = pack2<kBf16>(s[8 * kk + 0], s[8 * kk + 1]);
        pa[kk][1] = pack2<kBf16>(s[8 * kk + 2], s[8 * kk + 3]);
        pa[kk][2] = pack2<kBf16>(s[8 * kk + 4], s[8 * kk + 5]);
        pa[kk][3] = pack2<kBf16>(s[8 * kk + 6], s[8 * kk + 7]);
      }
    };
    auto fence_s = [&]() {
#pragma unroll
      for (int i = 0; i < kBk / 2; ++i) reg_fence(s[i]);
    };
    auto fence_o_pa = [&]() {
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) reg_fence(o[i]);
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) reg_fence(pa[kk][r]);
    };
    auto release = [&](uint32_t empty_bar, int t) {
      __syncwarp();
      if (lane == 0) {
        if constexpr (C::kCluster == 2) {
          if (t < ncommon) {
            mbar_arrive(empty_bar);
            mbar_arrive_cluster(empty_bar, rank ^ 1);
          } else {
            mbar_arrive_n(empty_bar, 2);
          }
        } else {
          mbar_arrive(empty_bar);
        }
      }
    };
    // Ping-pong: warpgroup cw issues its MMAs after bar.sync on barrier 2 + cw, which the other
    // warpgroup arrives on once it has issued its own (warpgroup 0 goes first).
    auto turn_wait = [&]() {
      if constexpr (C::kPingPong) cw == 0 ? named_sync<2, 256>() : named_sync<3, 256>();
    };
    auto turn_pass = [&]() {
      if constexpr (C::kPingPong) cw == 0 ? named_arrive<3, 256>() : named_arrive<2, 256>();
    };

    if (ntiles > 0) {
      if (cw == 1) turn_pass();
      mbar_wait(q_full, 0);
      mbar_wait(k_full(0), 0);
      turn_wait();
      wgmma_fence();
      issue_s(0);
      turn_pass();
      wgmma_wait<0>();
      fence_s();
      release(k_empty(0), 0);
      float al[2];
      softmax(0, al);
      pack_p();
      for (int t = 1; t < ntiles; ++t) {
        mbar_wait(k_full(t % kStages), (t / kStages) & 1);
        mbar_wait(v_full((t - 1) % kStages), ((t - 1) / kStages) & 1);
        turn_wait();
        wgmma_fence();
        issue_s(t);
        issue_pv(t - 1);
        turn_pass();
        wgmma_wait<1>();  // S_t has landed; P_{t-1} V_{t-1} may still run
        fence_s();
        release(k_empty(t % kStages), t);
        softmax(t, al);
        wgmma_wait<0>();
        fence_o_pa();
        release(v_empty((t - 1) % kStages), t - 1);
#pragma unroll
        for (int n = 0; n < kD / 8; ++n) {
          o[4 * n + 0] *= al[0];
          o[4 * n + 1] *= al[0];
          o[4 * n + 2] *= al[1];
          o[4 * n + 3] *= al[1];
        }
        pack_p();
      }
      mbar_wait(v_full((ntiles - 1) % kStages), ((ntiles - 1) / kStages) & 1);
      turn_wait();
      wgmma_fence();
      issue_pv(ntiles - 1);
      turn_pass();
      wgmma_wait<0>();
      fence_o_pa();
      release(v_empty((ntiles - 1) % kStages), ntiles - 1);
      if (cw == 0) turn_wait();  // the other warpgroup's last arrival
    }

    // Row sums across the quad, then out = o / l and lse = (m + log2 l) ln 2. With 16-byte aligned
    // rows the warpgroup stages its 64 output rows in its (no longer read) rows of the Q buffer,
    // same swizzle, and stores them as 16-byte row chunks; else column pairs go straight out.
    uint16_t* out = static_cast<uint16_t*>(p.o) + p.o_row0(b) + h * p.o_sh;
    float* lse = static_cast<float*>(p.lse) + p.lse_row0(b, h);
    const bool staged = (reinterpret_cast<uintptr_t>(p.o) & 15) == 0 && (p.o_sr & 7) == 0 &&
                        (p.o_sh & 7) == 0 && (p.o_sb & 7) == 0;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float ll = l[e];
      ll += warp_shfl_xor(ll, 1);
      ll += warp_shfl_xor(ll, 2);
      const int row = row0 + 8 * e;
      const float inv = ll > 0.0f ? 1.0f / ll : 0.0f;
      if (staged) {
        const int rb = row - i0;  // row in the block; rb % 8 == g
#pragma unroll
        for (int n = 0; n < kD / 8; ++n) {
          const uint32_t a = sq + (n / 8) * kBq * 128 + rb * 128 + (((n % 8) ^ g) * 16) + tq4 * 4;
          const uint32_t v = pack2<kBf16>(o[4 * n + 2 * e] * inv, o[4 * n + 2 * e + 1] * inv);
          asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
        }
      } else if (row < lq) {
        uint16_t* orow = out + row * p.o_sr;
#pragma unroll
        for (int n = 0; n < kD / 8; ++n)
          *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tq4) =
              pack2<kBf16>(o[4 * n + 2 * e] * inv, o[4 * n + 2 * e + 1] * inv);
      }
      if (tq4 == 0 && row < lq)
        lse[row] = ll > 0.0f ? (m[e] + log2f(ll)) * 0.6931471805599453f : neg_inf();
    }
    if (staged) {
      if (cw == 0)
        named_sync<4, 128>();
      else
        named_sync<5, 128>();
      constexpr int kRowChunks = kD / 8;
      const int tw = threadIdx.x % 128;
#pragma unroll
      for (int it = 0; it < 64 * kRowChunks / 128; ++it) {
        const int idx = it * 128 + tw, r = idx / kRowChunks, c16 = idx % kRowChunks;
        const int row = wg_row + r;
        const uint32_t a =
            sq + (c16 / 8) * kBq * 128 + (cw * 64 + r) * 128 + (((c16 % 8) ^ (r % 8)) * 16);
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(a)
                     : "memory");
        if (row < lq) *reinterpret_cast<uint4*>(out + row * p.o_sr + c16 * 8) = v;
      }
    }
  }  // consumers
  // A block of a cluster stays until its partner no longer multicasts into it or arrives on its
  // barriers.
  if constexpr (C::kCluster == 2) cluster_sync();
}

// ---- host side ----

std::atomic<bool> g_enabled{[] {
  const char* e = std::getenv("KILN_FLASH_SM90");
  return !(e && e[0] == '0' && e[1] == 0);
}()};

// Kernel shapes (KILN_FLASH_SM90_CFG=0..3 picks one for tuning runs; default kDefaultCfg*),
// measured in Note [Flash sm90 forward]. Index 2 of each is the cluster (multicast) variant.
// Defaults: D64 <64, 64, 3, 1, 3> (283), D128 <128, 128, 3, 2, 1, ping-pong> (586-591).
using D64Cfgs = std::tuple<FwdCfg<64, 64, 4, 1, 3, false>, FwdCfg<64, 128, 3, 2, 1, true>,
                           FwdCfg<64, 64, 3, 1, 3, false, 2>, FwdCfg<64, 64, 3, 1, 3, false>>;
using D128Cfgs = std::tuple<FwdCfg<128, 128, 2, 2, 1, true>, FwdCfg<128, 128, 3, 2, 1, true>,
                            FwdCfg<128, 128, 3, 2, 1, true, 2>, FwdCfg<128, 128, 3, 2, 1, false>>;
constexpr int kDefaultCfgD64 = 3, kDefaultCfgD128 = 1;

int forced_cfg() {
  static const int c = [] {
    const char* e = std::getenv("KILN_FLASH_SM90_CFG");
    return e && e[0] >= '0' && e[0] <= '3' && e[1] == 0 ? e[0] - '0' : -1;
  }();
  return c;
}

template <bool kBf16, class C>
bool launch(const FlashParams& p, cudaStream_t stream) {
  constexpr int kBoxK = C::kBk / C::kCluster;  // clusters load K / V in halves
  CUtensorMap mq, mk, mv;
  if (!make_map(&mq, p.q, kBf16, p.d, p.tq, p.hq, p.b, p.q_sr, p.q_sh, p.q_sb, C::kBq) ||
      !make_map(&mk, p.k, kBf16, p.d, p.tk, p.hk, p.b, p.k_sr, p.k_sh, p.k_sb, kBoxK) ||
      !make_map(&mv, p.v, kBf16, p.d, p.tk, p.hk, p.b, p.v_sr, p.v_sh, p.v_sb, kBoxK))
    return false;
  const auto kernel = &sm90_fwd_kernel<kBf16, C>;
  static const bool attr = [&] {
    return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                C::kSmem) == cudaSuccess;
  }();
  if (!attr) return false;
  // Grid (query tiles, heads, batch): the blocks resident at once share a few heads' K / V in L2
  // (heads first put every resident block on its own head: K / V came from DRAM, 27% L2 hits at
  // B4 H32 T4096 D128); each head's heaviest (causal: last) tiles start first.
  int64_t gx = (p.tq + C::kBq - 1) / C::kBq;
  if (C::kCluster == 2) gx += gx % 2;  // whole clusters; the extra block has no rows
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(p.hq),
                  static_cast<unsigned>(p.b));
  if constexpr (C::kCluster == 1) {
    kernel<<<grid, C::kThreads, C::kSmem, stream>>>(mq, mk, mv, p);
  } else {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(C::kThreads);
    cfg.dynamicSmemBytes = C::kSmem;
    cfg.stream = stream;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    (void)cudaLaunchKernelEx(&cfg, kernel, mq, mk, mv, p);
  }
  return true;
}

template <bool kBf16, class Cfgs>
bool launch_cfg(int cfg, const FlashParams& p, cudaStream_t stream) {
  switch (cfg) {
    case 1:
      return launch<kBf16, std::tuple_element_t<1, Cfgs>>(p, stream);
    case 2:
      return launch<kBf16, std::tuple_element_t<2, Cfgs>>(p, stream);
    case 3:
      return launch<kBf16, std::tuple_element_t<3, Cfgs>>(p, stream);
    default:
      return launch<kBf16, std::tuple_element_t<0, Cfgs>>(p, stream);
  }
}

}  // namespace

void sm90_set_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

bool sm90_enabled() { return g_enabled.load(std::memory_order_relaxed); }

bool sm90_forward(const detail::FlashParams& p, DType dtype, int device, gpuStream_t stream) {
  if (!g_enabled.load(std::memory_order_relaxed)) return false;
  const bool bf16 = dtype == DType::BFloat16;
  if (!bf16 && dtype != DType::Float16) return false;
  if (p.d != 64 && p.d != 128) return false;
  if (p.mask != nullptr || p.p_drop > 0.0f || p.cu_q != nullptr || p.cu_k != nullptr) return false;
  if (!(p.scale > 0.0f)) return false;  // the scale is folded into the exponent
  if (p.tq <= 0 || p.tk <= 0 || p.tq > INT_MAX / 2 || p.tk > INT_MAX / 2) return false;
  if (p.hq > 65535 || p.b > 65535 || p.hk <= 0 || p.hq % p.hk != 0) return false;
  // Output: 4-byte stores of column pairs (strides of size-1 dimensions are never used).
  if (reinterpret_cast<uintptr_t>(p.o) % 4 != 0 || (p.tq > 1 && p.o_sr % 2 != 0) ||
      (p.hq > 1 && p.o_sh % 2 != 0) || (p.b > 1 && p.o_sb % 2 != 0))
    return false;
  if (!is_sm90(device)) return false;
  const cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  const int f = forced_cfg();
  if (p.d == 64) {
    const int c = f >= 0 ? f : kDefaultCfgD64;
    return bf16 ? launch_cfg<true, D64Cfgs>(c, p, s) : launch_cfg<false, D64Cfgs>(c, p, s);
  }
  const int c = f >= 0 ? f : kDefaultCfgD128;
  return bf16 ? launch_cfg<true, D128Cfgs>(c, p, s) : launch_cfg<false, D128Cfgs>(c, p, s);
}

}  // namespace kiln::gpu::flash
