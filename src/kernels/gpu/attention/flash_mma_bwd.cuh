// Tensor-core flash-attention backward for float16/bfloat16, head dim 64 and 128 (CUDA sm_80+): the
// pre-pass (delta, lse in the log2 domain, zeroed dq accumulator), the dk/dv kernel with atomic dq,
// and dq's final cast. Under HIP mma_backward_supported says false (flash_portable.cuh runs).
#pragma once

#include "kernels/gpu/attention/flash_mma.cuh"
#if KILN_CUDA
#include "kernels/gpu/attention/pdl.cuh"
#endif

namespace kiln::gpu::flash {

#if KILN_CUDA

constexpr float kLog2eF = 1.4426950408889634f;
constexpr int kBwdBk = 128;  // keys per backward block, 16 or 32 per warp

// Rows per (batch, head) of the pre-pass buffers: every query tile the kernel reads lies inside.
inline int64_t bwd_pad_rows(int64_t tq) { return (tq + 63) / 64 * 64; }

template <bool kBf16>
__device__ inline float to_f32(uint32_t bits16) {
  if constexpr (kBf16) {
    return __uint_as_float(bits16 << 16);
  } else {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(static_cast<unsigned short>(bits16)));
    return f;
  }
}

// Note [Flash mma backward pre-pass]: for each (batch, query head, row i < pad rows) it writes
// dl = rowsum(dO * O) and l2 = lse log2(e) into [B, Hq, pad] float buffers. Rows past the sequence
// and rows whose lse is -inf (they saw no key) get dl = 0 and l2 = +inf, so the backward kernel's
// exp2(s - l2) is 0 there without a test. It also zeroes the rows of the dq accumulator and, when
// p.delta is set (the deterministic dq pass reads it), writes delta in lse's layout. kD / 8 lanes
// share one row, 16 bytes each. The blocks run backwards through the grid (and the cast's below
// backwards through the accumulator), so that the rows each kernel touches last are those the
// next one takes first, while they are in L2. Measured on an H100 at B16 H12 T1024 D64 (stream
// order, ncu --cache-control none): pre-pass DRAM reads 51.1 -> 44.9 MB, cast 49.3 -> 41.6 MB,
// 27.3 -> 25.8 us; causal bf16 forward+backward 252.3-254.5 -> 256.8-257.8 TFLOP/s (three
// interleaved passes; B4 H32 T4096 D128, where the buffers are 5x the L2: unchanged within the
// run-to-run spread).
//
// Session 10 moved each of the two passes into the sm90 backward's main kernel. Neither was kept:
// both sit at the DRAM roofline, and the work in the main kernel cost more than it saved.
// H100, in-stream kernel times (KILN_BENCH_TRACE=1), B16 H12 T1024 D64, main kernel 199-202 us
// without either:
//   - The cast, by the last key block to add into a 64-row tile. Leaders publish each completed
//     reduce-add group in shared memory; idle producer warps count tiles in global counters; the
//     tile is cast from a bulk load of its rows. The cast kernel then covers the last 2 tiles.
//     Main kernel: every variant 233-291 us. Variants: last incrementer or first key block casts,
//     publish lag 1-3, with or without fences.
//   - The zeroing, by the first block of each (batch, head) to start. It claims the head and
//     bulk-stores its 256 KiB of zeros; the head's other blocks wait for its flag. Pre-pass
//     32.4 -> 20.3 us, main kernel 202 -> 240.5 us.
// ncu shows the consumers' stalls unchanged in both cases. The blocks live longer: one SM zeroes
// a whole head, or key block 0, the longest block, takes on the casts.
// Session 11 cast whole (batch, head) pairs there instead, with no per-tile waits. Each consumer
// leader, after its last reduce-add completed (bulk wait_group, release add), counted its pair;
// one idle producer warp per block, until its producer had issued the last loads, took tickets
// (atomicAdd) for 32-row chunks of finished pairs, bulk-loaded each and stored it as bf16; the
// cast kernel took the rest. (Claims by compare-and-swap on one cursor serialized at about one a
// microsecond: 2% of the chunks.) Helpers cast 74% of the chunks at D64 and 95% at B4 H32 T4096
// D128 (tests passed), but the cast's bytes cost about as much inside the main kernel as after it:
// D64 main 199.6-200.0 -> 231.6-232.7 us (the end-of-block completion wait and release alone
// 214-215, 211-212 relaxed), cast after it about 25 -> 7.5 us net, step 338-340 -> 352-355 us;
// D128 main 2.68-2.77 -> 2.66-2.82 ms, cast 134 -> 10 us net; forward+backward with helpers at
// D128 only, interleaved passes against PyTorch: 478.6-486.7 TFLOP/s against 478.1-486.6
// without (the power cap's spread is larger than the difference).
// Session 12 zeroed it in the sm90 main kernel instead, just ahead of use: the blocks of each
// (batch, head) group (about a wave) zero the next group's rows with their idle producer warps
// (group 0's blocks their own too) and count them in a per-group counter the pre-pass zeroes; a
// consumer leader waits (acquire, then fence.proxy.async.global) for its group's count before its
// first reduce-add. Tests passed. bench/gpu_attention_shapes fwdbwd, three interleaved passes,
// H100 (us a step): B16 H12 T1024 D64 332.8-333.1 against 335.5-336.5; B1 H24 T2048 D64 162.4-
// 163.8 against 157.3-157.6; B4 H32 T4096 D128 3943-3976 against 3916-3919; B2 H16 T2048 D128
// 300.4-302.2 against 289.8-291.5. Not kept: 1% at one shape, up to 4% lost at the others. Nor
// L2 hints here (dO evict-last, O and the cast's reads evict-first): 331.8-333.3 against
// 331.9-332.4; the zeros evict-last: 331.5-333.5 against 331.4-334.2.
template <bool kBf16, int kD>
__global__ void __launch_bounds__(256)
    mma_bwd_prep_kernel(FlashParams p, float* l2buf, float* dlbuf, int64_t pad) {
  pdl_launch_dependents();  // the sm90 backward's blocks load K / V before they wait for these
  constexpr int kPer = kD / 8, kRows = 256 / kPer;
  // Backwards through the grid, so that the last rows written (still in L2) are those of the
  // first (batch, head) pairs, which the backward kernels take first.
  const int b = gridDim.z - 1 - blockIdx.z, h = gridDim.y - 1 - blockIdx.y;
  const int c = threadIdx.x % kPer;
  const int64_t i = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kRows + threadIdx.x / kPer;
  const int64_t lq = p.q_len(b);
  float acc = 0.0f;
  if (i < lq) {
    const uint4 a = *reinterpret_cast<const uint4*>(
        static_cast<const uint16_t*>(p.dout) + p.do_row0(b) + h * p.do_sh + i * p.do_sr + c * 8);
    const uint4 o = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.o) +
                                                    p.o_row0(b) + h * p.o_sh + i * p.o_sr + c * 8);
    const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, ow[4] = {o.x, o.y, o.z, o.w};
#pragma unroll
    for (int w = 0; w < 4; ++w)
      acc += to_f32<kBf16>(aw[w] & 0xffffu) * to_f32<kBf16>(ow[w] & 0xffffu) +
             to_f32<kBf16>(aw[w] >> 16) * to_f32<kBf16>(ow[w] >> 16);
    if (p.dq_acc) {
      float4* z =
          reinterpret_cast<float4*>(p.dq_acc + p.acc_row0(b) + h * p.acc_sh + i * p.acc_sr + c * 8);
      z[0] = z[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
#pragma unroll
  for (int m = 1; m < kPer; m *= 2) acc += warp_shfl_xor(acc, m);
  if (c == 0 && i < pad) {
    const int64_t pi = (static_cast<int64_t>(b) * p.hq + h) * pad + i;
    const float l = i < lq ? static_cast<const float*>(p.lse)[p.lse_row0(b, h) + i] : mma_neg_inf();
    dlbuf[pi] = i < lq ? acc : 0.0f;
    l2buf[pi] = l == mma_neg_inf() ? __int_as_float(0x7f800000) : l * kLog2eF;
    if (p.delta && i < lq) p.delta[p.lse_row0(b, h) + i] = acc;
  }
}

// Bytes of one streamed query tile (Q, dO, l2, dl) and of the whole backward block.
template <int kD, int kBq>
constexpr int bwd_stage_bytes() {
  return 2 * kBq * kD * 2 + 2 * kBq * 4;
}
template <int kD, int kBq>
constexpr int bwd_smem_bytes() {
  return 2 * kBwdBk * kD * 2 + kStages * bwd_stage_bytes<kD, kBq>() + 2 * kBwdBk * kBq * 2;
}

// Byte offset of chunk c of row r in the dS^T tile ([128 keys][kBq queries], kChunks = kBq / 8
// chunks of 16 bytes a row); with fewer than 8 chunks several rows share 128 bytes, so the XOR
// takes the row index above them.
template <int kChunks>
__device__ inline uint32_t swz_ds(int r, int c) {
  if constexpr (kChunks >= 8)
    return swz<kChunks>(r, c);
  else if constexpr (kChunks == 4)
    return static_cast<uint32_t>((r * 4 + (c ^ ((r >> 1) & 3))) * 16);
  else  // 2 chunks: four rows share 128 bytes
    return static_cast<uint32_t>((r * 2 + (c ^ ((r >> 2) & 1))) * 16);
}

// Note [Flash mma backward]: a block owns 128 keys of one (batch, query head): 8 warps of 16 keys
// (kMk = 1) or 4 warps of 32 keys (kMk = 2: two m16 tiles share every Q / dO fragment load, which
// halves the shared-memory traffic of the four products below). It walks the query tiles of kBq
// rows (Q, dO and the pre-pass rows l2, dl streamed kStages deep by cp.async). Per tile each warp
// computes S^T = K Q^T and dP^T = V dO^T for its keys (m16n8k16, K and V read from shared memory),
// P^T = exp2(S^T scale log2(e) - l2) and dS^T = P^T (Z dP^T - dl), then dV += (Z P)^T dO and
// dK += dS^T Q from registers. dS^T goes to shared memory (two buffers), and after the barrier
// that opens the next tile the warps add dQ = dS K for it into the float accumulator with atomics
// (kBq / 16 row groups x head-dim slices): one barrier per tile. kGen compiles the additive mask
// and dropout in; the plain instantiation (the common case) only masks the causal diagonal and the
// key tail. kBq 32 at head dim 64 keeps the kMk = 1 kernel's fragments in 128 registers: 2 blocks
// per SM (kMk = 2 measured no faster, though it moves half the shared-memory bytes). Profile at
// B16 H12 T1024 D64 on an H200 (ncu, before the phased order below): 388 us, issue slots 43% busy,
// tensor pipe 31%, shared-memory wavefronts 60%; the top stall is short scoreboard (ldmatrix
// results used right after issue: at 128 registers the compiler cannot load fragments ahead). The
// plain kernel runs a tile's products in the order of Note [Flash mma backward phases] (GPT-2
// shape forward+backward 151 -> 157 TFLOP/s). Next: P and dS through shared memory with 2-D warp
// tiles (FlashAttention-2's layout), or wgmma on Hopper.
template <int kD, int kBq, bool kGen, int kMk>
constexpr int bwd_min_blocks() {
  return kMk == 2 ? 2 : (kD == 64 && kBq == 32 && !kGen ? 2 : 1);
}

template <bool kBf16, int kD, int kBq, bool kGen, int kMk, bool kPhased>
__global__ void __launch_bounds__(kLanes * 8 / kMk, (bwd_min_blocks<kD, kBq, kGen, kMk>()))
    mma_backward_kv_kernel(FlashParams p, const float* l2buf, const float* dlbuf, int64_t pad) {
  constexpr int kWarpsB = 8 / kMk, kThreads = kWarpsB * kLanes, kWk = 16 * kMk;
  constexpr int kChunks = kD / 8, kDsChunks = kBq / 8, kN = kBq / 8;
  constexpr int kQdBytes = kBq * kD * 2, kStage = bwd_stage_bytes<kD, kBq>();
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sk = smem_addr(smem), sv = sk + kBwdBk * kD * 2;
  const uint32_t sst = sv + kBwdBk * kD * 2;  // stage i at sst + i kStage: Q, dO, l2, dl
  // dS^T of tile t at sds0 + (t & 1) kDsBytes: the dQ product of tile t runs after the barrier
  // that opens tile t + 1, so each tile needs one barrier.
  constexpr int kDsBytes = kBwdBk * kBq * 2;
  const uint32_t sds0 = sst + kStages * kStage;
  // Grid (key tiles, heads, batch): the blocks of one head run side by side and share its Q and
  // dO in L2; within a head the heavy (causal: first) key tiles go first.
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kBwdBk;
  if (j0 >= lk) return;
  const int hk = h / (p.hq / p.hk);
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int g = lane >> 2, tq = lane & 3, mi = lane >> 3;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + p.q_row0(b) + h * p.q_sh;
  const uint16_t* go = static_cast<const uint16_t*>(p.dout) + p.do_row0(b) + h * p.do_sh;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + p.v_row0(b) + hk * p.v_sh;
  float* const dqa = p.dq_acc + (p.acc_row0(b) + h * p.acc_sh);  // used only when dq_acc is set
  const int64_t prow = (static_cast<int64_t>(b) * p.hq + h) * pad;
  const float* l2g = l2buf + prow;
  const float* dlg = dlbuf + prow;
  const int64_t istart = p.causal ? j0 : 0;  // causal: earlier queries see none of these keys
  const int ntiles = istart < lq ? static_cast<int>((lq - istart + kBq - 1) / kBq) : 0;

  auto load_stage = [&](int t) {
    const uint32_t s = sst + (t % kStages) * kStage;
    const int64_t r0 = istart + static_cast<int64_t>(t) * kBq;
    load_tile_async<kD, kBq, kThreads>(s, q, p.q_sr, r0, lq);
    load_tile_async<kD, kBq, kThreads>(s + kQdBytes, go, p.do_sr, r0, lq);
    if (threadIdx.x < kBq / 2) {  // kBq / 4 chunks of l2, then of dl (r0 + kBq <= pad)
      const int which = threadIdx.x / (kBq / 4), c = threadIdx.x % (kBq / 4);
      cp_async16(s + 2 * kQdBytes + which * kBq * 4 + c * 16, (which ? dlg : l2g) + r0 + c * 4,
                 true);
    }
  };
  // Groups: {K, V, tile 0}, {tile 1}, then one per iteration (possibly empty).
  load_tile_async<kD, kBwdBk, kThreads>(sk, k, p.k_sr, j0, lk);
  load_tile_async<kD, kBwdBk, kThreads>(sv, v, p.v_sr, j0, lk);
  for (int t = 0; t < 2; ++t) {
    if (t < ntiles) load_stage(t);
    cp_async_commit();
  }

  const float sl2 = p.scale * kLog2eF;
  const float* mask = kGen ? static_cast<const float*>(p.mask) : nullptr;
  float dk[kMk][kD / 8][4], dv[kMk][kD / 8][4];
#pragma unroll
  for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
    for (int n = 0; n < kD / 8; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) dk[mt][n][r] = dv[mt][n][r] = 0.0f;
  const int wk0 = warp * kWk;  // this warp's keys: wk0 .. wk0 + kWk (block-local)
  // Lane parts of the ldmatrix addresses (swz_at): A operand rows, B operand rows, B transposed.
  const uint32_t lo_a = swz<kChunks>(lane & 15, lane >> 4);
  const uint32_t lo_b = swz<kChunks>((mi >> 1) * 8 + (lane & 7), mi & 1);
  const uint32_t lo_t = swz<kChunks>((mi & 1) * 8 + (lane & 7), mi >> 1);
  const int klim = lk - j0 < kBwdBk ? static_cast<int>(lk - j0) : kBwdBk;

  // dQ rows i0t + qr .. + 16 += dS K (k = the 128 keys), head dims d0 .. d0 + kDw, from the dS^T
  // tile at sds.
  auto dq_tile = [&](uint32_t sds, int64_t i0t) {
    constexpr int kRg = kBq / 16, kDw = kD * kRg / kWarpsB;
    const int qr = (warp % kRg) * 16, d0 = (warp / kRg) * kDw;
#pragma unroll
    for (int hp = 0; hp < kDw / 16; ++hp) {
      const int np = d0 / 16 + hp;
      float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
      for (int kk = 0; kk < kBwdBk / 16; ++kk) {
        uint32_t a[4];
        ldsm_x4_t(sds + swz_ds<kDsChunks>(kk * 16 + (mi >> 1) * 8 + (lane & 7), qr / 8 + (mi & 1)),
                  a[0], a[1], a[2], a[3]);
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(sk + swz_at<kChunks>(lo_t, kk * 16, np * 2), b0, b1, b2, b3);
        mma16816<kBf16>(acc[0], a, b0, b1);
        mma16816<kBf16>(acc[1], a, b2, b3);
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t i = i0t + qr + g + 8 * e;
        if (i >= lq) continue;
        float* row = dqa + i * p.acc_sr + np * 16 + 2 * tq;
        red_add2(row, acc[0][2 * e] * p.scale, acc[0][2 * e + 1] * p.scale);
        red_add2(row + 8, acc[1][2 * e] * p.scale, acc[1][2 * e + 1] * p.scale);
      }
    }
  };

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_one();  // tile t has landed
    __syncthreads();
    if (t + 2 < ntiles) load_stage(t + 2);  // into the buffer of tile t - 1: every warp is done
    cp_async_commit();
    const uint32_t sq = sst + (t % kStages) * kStage, sdo = sq + kQdBytes;
    const uint32_t sl = sdo + kQdBytes, sdl = sl + kBq * 4;
    const int64_t i0 = istart + static_cast<int64_t>(t) * kBq;
    const uint32_t sds = sds0 + (t & 1) * kDsBytes;
    if (p.dq_acc && t > 0) dq_tile(sds0 + ((t - 1) & 1) * kDsBytes, i0 - kBq);
    // Causal: when every query of the tile precedes this warp's keys, P^T and dS^T are 0: the warp
    // only writes its dS^T rows, all 0, to shared memory for dQ. (Skipping here, not around each
    // product loop, leaves the tile's work one straight-line block for the scheduler.)
    if (p.causal && i0 + kBq - 1 < j0 + wk0) {
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk)
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
          for (int x = 0; x < 4; ++x)
            asm volatile(
                "st.shared.b32 [%0], %1;\n" ::"r"(
                    sds + swz_ds<kDsChunks>(wk0 + mt * 16 + g + 8 * (x & 1), 2 * kk + (x >> 1)) +
                    4 * tq),
                "r"(0u));
      continue;
    }
    if constexpr (!kGen && kPhased) {
      // Note [Flash mma backward phases]: the plain kernel orders a tile's work so that at most one
      // score-sized accumulator is live next to dK / dV: S^T = K Q^T, then P^T (rounded to the
      // input dtype, 8 registers where the float S^T took 16), then dV += P^T dO, then
      // dP^T = V dO^T, dS^T = P^T (dP^T - dl) from the rounded P^T, dK += dS^T Q. The registers
      // this frees let the compiler load fragments ahead, and the exp2 of P^T has the independent
      // dV and dP^T products to overlap with. Measured on an H200 (causal bf16 forward+backward,
      // bench/run_attention_bench.sh, TFLOP/s, one run): B16 H12 T1024 D64 (Bq 32) 151.2 before,
      // 154.6 with the causal skip hoisted out of the product loops alone
      // (KILN_FLASH_BWD_PHASED=0), 156.5 phased; B4 H32 T4096 D128 (Bq 64) 225.6, 226.7, 231.6.
      // Rounding P^T before dS^T adds one input-dtype rounding to dS^T, which is rounded to it for
      // the dK / dQ products anyway.
      uint32_t pa[kMk][kBq / 16][4];
      {
        float st[kMk][kN][4];
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
          for (int n = 0; n < kN; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r) st[mt][n][r] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
          uint32_t ka[kMk][4];
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt)
            ldsm_x4(sk + swz_at<kChunks>(lo_a, wk0 + mt * 16, kk * 2), ka[mt][0], ka[mt][1],
                    ka[mt][2], ka[mt][3]);
#pragma unroll
          for (int np = 0; np < kBq / 16; ++np) {
            uint32_t b0, b1, b2, b3;
            ldsm_x4(sq + swz_at<kChunks>(lo_b, np * 16, kk * 2), b0, b1, b2, b3);
#pragma unroll
            for (int mt = 0; mt < kMk; ++mt) {
              mma16816<kBf16>(st[mt][2 * np], ka[mt], b0, b1);
              mma16816<kBf16>(st[mt][2 * np + 1], ka[mt], b2, b3);
            }
          }
        }
        // P^T; fragment element r of st[mt][n] is key wk0 + mt 16 + g + 8 (r >> 1), query
        // n 8 + 2 tq + (r & 1) of the tile.
        const bool edge = j0 + kBwdBk > lk || (p.causal && i0 < j0 + kBwdBk - 1);
        const int qrel = static_cast<int>(i0 - j0);  // causal: key kl is seen by query qi iff
                                                     // kl <= qrel + qi
#pragma unroll
        for (int n = 0; n < kN; ++n) {
          float l2v[2];
          asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                       : "=f"(l2v[0]), "=f"(l2v[1])
                       : "r"(sl + (n * 8 + 2 * tq) * 4));
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              const int qi = n * 8 + 2 * tq + (r & 1), kl = wk0 + mt * 16 + g + 8 * (r >> 1);
              float x = fmaf(st[mt][n][r], sl2, -l2v[r & 1]);  // l2 = +inf: rows without weights
              if (edge && (kl >= klim || (p.causal && kl > qrel + qi))) x = mma_neg_inf();
              st[mt][n][r] = fast_exp2(x);
            }
        }
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
          for (int kk = 0; kk < kBq / 16; ++kk) {
            pa[mt][kk][0] = pack2<kBf16>(st[mt][2 * kk][0], st[mt][2 * kk][1]);
            pa[mt][kk][1] = pack2<kBf16>(st[mt][2 * kk][2], st[mt][2 * kk][3]);
            pa[mt][kk][2] = pack2<kBf16>(st[mt][2 * kk + 1][0], st[mt][2 * kk + 1][1]);
            pa[mt][kk][3] = pack2<kBf16>(st[mt][2 * kk + 1][2], st[mt][2 * kk + 1][3]);
          }
      }
      // dV += P^T dO (k = the kBq queries of the tile).
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk)
#pragma unroll
        for (int np = 0; np < kD / 16; ++np) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(sdo + swz_at<kChunks>(lo_t, kk * 16, np * 2), b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dv[mt][2 * np], pa[mt][kk], b0, b1);
            mma16816<kBf16>(dv[mt][2 * np + 1], pa[mt][kk], b2, b3);
          }
        }
      // dP^T = V dO^T, then dS^T = P^T (dP^T - dl) in place.
      float dp[kMk][kN][4];
#pragma unroll
      for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
        for (int n = 0; n < kN; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) dp[mt][n][r] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        uint32_t va[kMk][4];
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
          ldsm_x4(sv + swz_at<kChunks>(lo_a, wk0 + mt * 16, kk * 2), va[mt][0], va[mt][1],
                  va[mt][2], va[mt][3]);
#pragma unroll
        for (int np = 0; np < kBq / 16; ++np) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4(sdo + swz_at<kChunks>(lo_b, np * 16, kk * 2), b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dp[mt][2 * np], va[mt], b0, b1);
            mma16816<kBf16>(dp[mt][2 * np + 1], va[mt], b2, b3);
          }
        }
      }
#pragma unroll
      for (int n = 0; n < kN; ++n) {
        float dlv[2];
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                     : "=f"(dlv[0]), "=f"(dlv[1])
                     : "r"(sdl + (n * 8 + 2 * tq) * 4));
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint32_t w = pa[mt][n / 2][(n & 1) * 2 + e];  // P^T of elements 2 e, 2 e + 1
            dp[mt][n][2 * e] = to_f32<kBf16>(w & 0xffffu) * (dp[mt][n][2 * e] - dlv[0]);
            dp[mt][n][2 * e + 1] = to_f32<kBf16>(w >> 16) * (dp[mt][n][2 * e + 1] - dlv[1]);
          }
      }
      // dK += dS^T Q (k = the kBq queries of the tile); dS^T to shared memory for dQ.
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk) {
        uint32_t da[kMk][4];
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt) {
          da[mt][0] = pack2<kBf16>(dp[mt][2 * kk][0], dp[mt][2 * kk][1]);
          da[mt][1] = pack2<kBf16>(dp[mt][2 * kk][2], dp[mt][2 * kk][3]);
          da[mt][2] = pack2<kBf16>(dp[mt][2 * kk + 1][0], dp[mt][2 * kk + 1][1]);
          da[mt][3] = pack2<kBf16>(dp[mt][2 * kk + 1][2], dp[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int np = 0; np < kD / 16; ++np) {
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(sq + swz_at<kChunks>(lo_t, kk * 16, np * 2), b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dk[mt][2 * np], da[mt], b0, b1);
            mma16816<kBf16>(dk[mt][2 * np + 1], da[mt], b2, b3);
          }
        }
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt) {
          const int r0 = wk0 + mt * 16 + g;
#pragma unroll
          for (int x = 0; x < 4; ++x)
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(
                             sds + swz_ds<kDsChunks>(r0 + 8 * (x & 1), 2 * kk + (x >> 1)) + 4 * tq),
                         "r"(da[mt][x]));
        }
      }
    } else {  // mask / dropout, or KILN_FLASH_BWD_PHASED=0: P^T and dS^T together
      float st[kMk][kN][4], dp[kMk][kN][4];
#pragma unroll
      for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
        for (int n = 0; n < kN; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) st[mt][n][r] = dp[mt][n][r] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        uint32_t ka[kMk][4], va[kMk][4];
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt) {
          const uint32_t off = swz_at<kChunks>(lo_a, wk0 + mt * 16, kk * 2);
          ldsm_x4(sk + off, ka[mt][0], ka[mt][1], ka[mt][2], ka[mt][3]);
          ldsm_x4(sv + off, va[mt][0], va[mt][1], va[mt][2], va[mt][3]);
        }
#pragma unroll
        for (int np = 0; np < kBq / 16; ++np) {
          const uint32_t off = swz_at<kChunks>(lo_b, np * 16, kk * 2);
          uint32_t b0, b1, b2, b3;
          ldsm_x4(sq + off, b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(st[mt][2 * np], ka[mt], b0, b1);
            mma16816<kBf16>(st[mt][2 * np + 1], ka[mt], b2, b3);
          }
          ldsm_x4(sdo + off, b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dp[mt][2 * np], va[mt], b0, b1);
            mma16816<kBf16>(dp[mt][2 * np + 1], va[mt], b2, b3);
          }
        }
      }
      // P^T, Z P^T (into st) and dS^T (into dp). Fragment element r of st[mt][n] is key
      // wk0 + mt 16 + g + 8 (r >> 1), query n 8 + 2 tq + (r & 1) of the tile.
      const bool edge = j0 + kBwdBk > lk || (p.causal && i0 < j0 + kBwdBk - 1) || mask != nullptr;
      const int qrel = static_cast<int>(i0 - j0);
#pragma unroll
      for (int n = 0; n < kN; ++n) {
        float l2v[2], dlv[2];
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                     : "=f"(l2v[0]), "=f"(l2v[1])
                     : "r"(sl + (n * 8 + 2 * tq) * 4));
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                     : "=f"(dlv[0]), "=f"(dlv[1])
                     : "r"(sdl + (n * 8 + 2 * tq) * 4));
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int qi = n * 8 + 2 * tq + c;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int r = 2 * e + c, kl = wk0 + mt * 16 + g + 8 * e;
              float x = fmaf(st[mt][n][r], sl2, -l2v[c]);  // l2 = +inf: rows without weights
              if constexpr (kGen) {
                const int64_t i = i0 + qi, j = j0 + kl;
                bool ok = true;
                if (edge) {
                  ok = i < lq && j < lk && !(p.causal && j > i);
                  if (ok && mask) x += mask[p.mask_at(b, h, i, j)] * kLog2eF;
                }
                const float pr = ok ? fast_exp2(x) : 0.0f;
                float z = 1.0f;
                if (p.p_drop > 0.0f)
                  z = (ok && keep_element(p.seed, p.offset, drop_index(p, b, h, i, j), p.p_drop))
                          ? p.rp_drop
                          : 0.0f;
                dp[mt][n][r] = pr * (dp[mt][n][r] * z - dlv[c]);
                st[mt][n][r] = pr * z;
              } else {
                if (edge && (kl >= klim || (p.causal && kl > qrel + qi))) x = mma_neg_inf();
                const float pr = fast_exp2(x);
                dp[mt][n][r] = pr * (dp[mt][n][r] - dlv[c]);
                st[mt][n][r] = pr;
              }
            }
          }
      }
      // dV += (Z P)^T dO, dK += dS^T Q (k = the kBq queries of the tile).
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk) {
        uint32_t pa[kMk][4], da[kMk][4];
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt) {
          pa[mt][0] = pack2<kBf16>(st[mt][2 * kk][0], st[mt][2 * kk][1]);
          pa[mt][1] = pack2<kBf16>(st[mt][2 * kk][2], st[mt][2 * kk][3]);
          pa[mt][2] = pack2<kBf16>(st[mt][2 * kk + 1][0], st[mt][2 * kk + 1][1]);
          pa[mt][3] = pack2<kBf16>(st[mt][2 * kk + 1][2], st[mt][2 * kk + 1][3]);
          da[mt][0] = pack2<kBf16>(dp[mt][2 * kk][0], dp[mt][2 * kk][1]);
          da[mt][1] = pack2<kBf16>(dp[mt][2 * kk][2], dp[mt][2 * kk][3]);
          da[mt][2] = pack2<kBf16>(dp[mt][2 * kk + 1][0], dp[mt][2 * kk + 1][1]);
          da[mt][3] = pack2<kBf16>(dp[mt][2 * kk + 1][2], dp[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int np = 0; np < kD / 16; ++np) {
          const uint32_t off = swz_at<kChunks>(lo_t, kk * 16, np * 2);
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(sdo + off, b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dv[mt][2 * np], pa[mt], b0, b1);
            mma16816<kBf16>(dv[mt][2 * np + 1], pa[mt], b2, b3);
          }
          ldsm_x4_t(sq + off, b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < kMk; ++mt) {
            mma16816<kBf16>(dk[mt][2 * np], da[mt], b0, b1);
            mma16816<kBf16>(dk[mt][2 * np + 1], da[mt], b2, b3);
          }
        }
        // dS^T rows of this warp, queries kk * 16 .. + 16, to shared memory.
#pragma unroll
        for (int mt = 0; mt < kMk; ++mt) {
          const int r0 = wk0 + mt * 16 + g;
#pragma unroll
          for (int x = 0; x < 4; ++x)
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(
                             sds + swz_ds<kDsChunks>(r0 + 8 * (x & 1), 2 * kk + (x >> 1)) + 4 * tq),
                         "r"(da[mt][x]));
        }
      }
    }
  }
  if (p.dq_acc && ntiles > 0) {
    __syncthreads();
    dq_tile(sds0 + ((ntiles - 1) & 1) * kDsBytes, istart + static_cast<int64_t>(ntiles - 1) * kBq);
  }
  cp_async_wait_all();  // nothing may be in flight at exit
  const int hw = p.dkv_f32 ? h : hk;
#pragma unroll
  for (int mt = 0; mt < kMk; ++mt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int64_t key = j0 + wk0 + mt * 16 + g + 8 * e;
      if (key >= lk) continue;
      const int64_t off = p.dk_row0(b) + hw * p.dk_sh + key * p.dk_sr;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const int d = n * 8 + 2 * tq;
        const float k0 = dk[mt][n][2 * e] * p.scale, k1 = dk[mt][n][2 * e + 1] * p.scale;
        const float v0 = dv[mt][n][2 * e], v1 = dv[mt][n][2 * e + 1];
        if (p.dkv_f32) {
          *reinterpret_cast<float2*>(static_cast<float*>(p.dk) + off + d) = make_float2(k0, k1);
          *reinterpret_cast<float2*>(static_cast<float*>(p.dv) + off + d) = make_float2(v0, v1);
        } else {
          *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(p.dk) + off + d) =
              pack2<kBf16>(k0, k1);
          *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(p.dv) + off + d) =
              pack2<kBf16>(v0, v1);
        }
      }
    }
}

// dq = the float accumulator (contiguous, q's shape) cast to the input dtype through dq's strides,
// 8 elements a thread (d % 8 == 0): one 16-byte store when dq's rows are 16-byte aligned
// (kVec), else 8 scalar stores. Rows are numbered in the accumulator's order: (b, h, i) for dense
// calls (n1 = Hq, n2 = Tq; dq strides s0, s1, s2 = sb, sh, sr) and (row, h) for variable-length
// ones (n0 = 1, n1 = N, n2 = Hq; strides 0, sr, sh). kSame: dq in the accumulator's layout, element
// e to dst + e, no 64-bit divisions (H100: D128 177.5 us against 188.0, D64 36.3 against 36.7).
template <bool kBf16, bool kVec, bool kSame = false>
__global__ void mma_dq_cast_kernel(const float* src, uint16_t* dst, int64_t n8, int d8, int64_t n1,
                                   int64_t n2, int64_t s0, int64_t s1, int64_t s2) {
  pdl_launch_dependents();  // a programmatic next kernel (the sm90 forward) may start its blocks
  pdl_wait();               // launched early after the sm90 backward (mma_dq_cast's pdl)
  // Backwards through the accumulator: the backward kernels end on its last (batch, head) pairs,
  // whose rows are still in L2.
  const int64_t i = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n8) return;
  const float4 a = reinterpret_cast<const float4*>(src)[2 * i];
  const float4 c = reinterpret_cast<const float4*>(src)[2 * i + 1];
  uint16_t* out = dst + i * 8;
  if constexpr (!kSame) {
    const int64_t row = i / d8, i2 = row % n2, r1 = row / n2;
    out = dst + (r1 / n1) * s0 + (r1 % n1) * s1 + i2 * s2 + (i - row * d8) * 8;
  }
  const uint32_t w[4] = {pack2<kBf16>(a.x, a.y), pack2<kBf16>(a.z, a.w), pack2<kBf16>(c.x, c.y),
                         pack2<kBf16>(c.z, c.w)};
  if constexpr (kVec) {
    *reinterpret_cast<uint4*>(out) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      out[2 * e] = static_cast<uint16_t>(w[e] & 0xffffu);
      out[2 * e + 1] = static_cast<uint16_t>(w[e] >> 16);
    }
  }
}

template <class T>
bool mma_backward_supported(const FlashParams& p) {
  return mma_forward_supported<T>(p) && rows_aligned16(p.dout, p.do_sb, p.do_sh, p.do_sr) &&
         (p.dkv_f32 || (rows_aligned16(p.dk, p.dk_sb, p.dk_sh, p.dk_sr) &&
                        rows_aligned16(p.dv, p.dk_sb, p.dk_sh, p.dk_sr)));
}

// Query rows per backward tile: KILN_FLASH_BWD_BQ=16 (4 warps of 32 keys, head dim 64 only), 32
// or 64 (8 warps of 16 keys), read once, overrides the default, for tuning runs and so the tests
// can cover every shape. Defaults measured on an H200 (causal bf16 forward+backward,
// bench/run_attention_bench.sh, TFLOP/s): D 64, B16 H12 T1024: Bq 16 148.8, 32 148.7, 64 145.7;
// D 128, B4 H32 T4096: Bq 32 211.5, 64 216.9. With the phased order: D 64 Bq 16 157.4, 32 156.8
// (within run-to-run noise: 32 kept); D 128 Bq 32 223.9, 64 231.6.
constexpr int kBwdBqD64 = 32, kBwdBqD128 = 64;
inline int mma_backward_bq(int d) {
  static const int forced = [] {
    const char* e = std::getenv("KILN_FLASH_BWD_BQ");
    const int v = e ? std::atoi(e) : 0;
    return v == 16 || v == 32 || v == 64 ? v : 0;
  }();
  if (forced) return forced;
  return d == 64 ? kBwdBqD64 : kBwdBqD128;
}

// Order of the plain backward kernel's per-tile work: phased (Note [Flash mma backward phases])
// unless KILN_FLASH_BWD_PHASED=0 (P^T and dS^T computed together, as the mask / dropout kernel
// does), read once; a tuning knob the tests also run under.
constexpr bool kBwdPhased = true;
inline bool mma_backward_phased() {
  static const bool v = [] {
    const char* e = std::getenv("KILN_FLASH_BWD_PHASED");
    return e && (e[0] == '0' || e[0] == '1') ? e[0] == '1' : kBwdPhased;
  }();
  return v;
}

// The pre-pass (Note [Flash mma backward pre-pass]) into l2buf / dlbuf ([B, Hq, pad] floats each).
template <class T>
void mma_backward_prep(const FlashParams& p, float* l2buf, float* dlbuf, int64_t pad,
                       gpuStream_t stream) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    const int rows = 256 / (p.d / 8);
    const dim3 grid(static_cast<unsigned>((pad + rows - 1) / rows), static_cast<unsigned>(p.hq),
                    static_cast<unsigned>(p.b));
    if (p.d == 64)
      mma_bwd_prep_kernel<kBf16, 64><<<grid, 256, 0, stream>>>(p, l2buf, dlbuf, pad);
    else
      mma_bwd_prep_kernel<kBf16, 128><<<grid, 256, 0, stream>>>(p, l2buf, dlbuf, pad);
  }
}

template <bool kBf16, int kD, int kBq, bool kGen, int kMk, bool kPhased = false>
void mma_backward_launch(const FlashParams& p, const float* l2buf, const float* dlbuf, int64_t pad,
                         gpuStream_t stream) {
  constexpr int kSmem = bwd_smem_bytes<kD, kBq>();
  static const bool attr_set = [] {
    return gpuFuncSetAttribute(reinterpret_cast<const void*>(
                                   &mma_backward_kv_kernel<kBf16, kD, kBq, kGen, kMk, kPhased>),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) == gpuSuccess;
  }();
  (void)attr_set;
  const dim3 grid(static_cast<unsigned>((p.tk + kBwdBk - 1) / kBwdBk), static_cast<unsigned>(p.hq),
                  static_cast<unsigned>(p.b));
  mma_backward_kv_kernel<kBf16, kD, kBq, kGen, kMk, kPhased>
      <<<grid, kLanes * 8 / kMk, kSmem, stream>>>(p, l2buf, dlbuf, pad);
}

// The plain (no mask, no dropout) kernels by query tile.
template <bool kBf16, int kD, bool kPhased>
void mma_backward_plain(const FlashParams& p, const float* l2buf, const float* dlbuf, int64_t pad,
                        int bq, gpuStream_t stream) {
  if (kD == 64 && bq == 16)  // (32 keys a warp do not fit the registers at head dim 128)
    mma_backward_launch<kBf16, 64, 16, false, 2, kPhased>(p, l2buf, dlbuf, pad, stream);
  else if (bq == 64)
    mma_backward_launch<kBf16, kD, 64, false, 1, kPhased>(p, l2buf, dlbuf, pad, stream);
  else
    mma_backward_launch<kBf16, kD, 32, false, 1, kPhased>(p, l2buf, dlbuf, pad, stream);
}

template <bool kBf16, int kD>
void mma_backward_dispatch(const FlashParams& p, const float* l2buf, const float* dlbuf,
                           int64_t pad, gpuStream_t stream) {
  const bool gen = p.mask != nullptr || p.p_drop > 0.0f;
  const int bq = mma_backward_bq(kD);
  if (gen)  // the rare cases take one shape only
    mma_backward_launch<kBf16, kD, 32, true, 1>(p, l2buf, dlbuf, pad, stream);
  else if (mma_backward_phased())
    mma_backward_plain<kBf16, kD, true>(p, l2buf, dlbuf, pad, bq, stream);
  else
    mma_backward_plain<kBf16, kD, false>(p, l2buf, dlbuf, pad, bq, stream);
}

// dk, dv (and dq into p.dq_acc when it is set) by the tensor-core kernel, after the pre-pass.
template <class T>
void mma_backward_kv(const FlashParams& p, const float* l2buf, const float* dlbuf, int64_t pad,
                     gpuStream_t stream) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    if (p.d == 64)
      mma_backward_dispatch<kBf16, 64>(p, l2buf, dlbuf, pad, stream);
    else
      mma_backward_dispatch<kBf16, 128>(p, l2buf, dlbuf, pad, stream);
  }
}

// dq from the float accumulator p.dq_acc (mma_dq_cast_kernel), through p.dq's strides.
// Note [Flash sm90 backward dq cast]: measured and not kept (H100, head dim 64 B16 H12 T1024 causal
// forward+backward, us a step). Session 13 (331-334 with this cast): the cast fused into the sm90
// backward; idle producer warps issued the dQ reduce-adds, awaited them, counted each query tile's
// contributors (acquire / release adds in a per-stream counter array), and the last one cast the
// tile. Reduce-adds by warp 1 alone (no counts, no casts, no cast kernel) 309, the gain in reach;
// with the counts 357; with both 462 (L2 prefetched into L1 first 461; in one warp with the
// reduce-adds 521; B1 H24 T2048 329 against 172): a block cannot end before its last count and
// cast, and the per-tile adds and fences held the warp longer than a tile takes. Session 14, group
// by group (2 B Hq + 1 counters after dq_acc, zeroed by the pre-pass): each consumer leader counted
// its group once its reduce-adds completed, and an idle producer warp of a later block claimed
// 64-row tiles of the lowest complete group while its consumers had R or more tiles left (TMA load,
// cast in shared memory, TMA store); this cast skipped them. It reached all groups but the last
// (2816 of 3072 tiles; B8 H16 T2048 3840 of 4096), but the step went 333-341 -> 345-351 (R 1-10):
// the main kernel 204 -> 218-222 (Note [Flash sm90 backward L2]) while this cast's exposed time
// fell 27 -> 21. The counts alone cost 3-4.
template <class T>
void mma_dq_cast(const FlashParams& p, int64_t rows, gpuStream_t stream, bool pdl = false) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  const bool varlen = p.cu_q != nullptr;
  const int d8 = p.d / 8;
  const int64_t n8 = rows * d8;
  const int64_t n1 = varlen ? rows / p.hq : p.hq, n2 = varlen ? p.hq : p.tq;
  const int64_t s0 = varlen ? 0 : p.dq_sb, s1 = varlen ? p.dq_sr : p.dq_sh;
  const int64_t s2 = varlen ? p.dq_sh : p.dq_sr;
  const dim3 grid(static_cast<unsigned>((n8 + 255) / 256));
  uint16_t* dst = static_cast<uint16_t*>(p.dq);
  // pdl: the blocks may start while the previous kernel (the sm90 backward) ends; they wait.
  const PdlConfig c(grid, dim3(256), 0, stream, pdl);
  const float* src = p.dq_acc;
  // dq in the accumulator's layout: rows d apart in the order above (one outer index: any s0).
  const bool same = s2 == p.d && s1 == n2 * p.d && (rows <= n1 * n2 || s0 == n1 * n2 * p.d);
  if (same && reinterpret_cast<uintptr_t>(dst) % 16 == 0)
    pdl_launch(c, mma_dq_cast_kernel<kBf16, true, true>, src, dst, n8, d8, n1, n2, s0, s1, s2);
  else if (rows_aligned16(p.dq, p.dq_sb, p.dq_sh, p.dq_sr))
    pdl_launch(c, mma_dq_cast_kernel<kBf16, true>, src, dst, n8, d8, n1, n2, s0, s1, s2);
  else
    pdl_launch(c, mma_dq_cast_kernel<kBf16, false>, src, dst, n8, d8, n1, n2, s0, s1, s2);
}

#else  // portable build (HIP): no tensor-core kernels here

inline int64_t bwd_pad_rows(int64_t tq) { return tq; }
template <class T>
bool mma_backward_supported(const FlashParams&) {
  return false;
}
template <class T>
void mma_backward_prep(const FlashParams&, float*, float*, int64_t, gpuStream_t) {}
template <class T>
void mma_backward_kv(const FlashParams&, const float*, const float*, int64_t, gpuStream_t) {}
template <class T>
void mma_dq_cast(const FlashParams&, int64_t, gpuStream_t, bool = false) {}

#endif

}  // namespace kiln::gpu::flash
