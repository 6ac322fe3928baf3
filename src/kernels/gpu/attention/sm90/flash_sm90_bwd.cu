// Hopper (sm_90a) fused-attention backward (head dims 64, 128), dK / dV kernel: a producer warp
// streams Q / dO by TMA (K / V resident), consumer warpgroups run S^T, dP^T, dV, dK, dQ on wgmma;
// dQ leaves by TMA reduce-add into the pre-pass's zeroed accumulator (flash_mma_bwd.cuh
// before/after).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/pdl.cuh"
#include "kernels/gpu/attention/sm90/flash_sm90.h"
#include "kernels/gpu/attention/sm90/flash_sm90_bwd_cfg.cuh"
#include "kernels/gpu/attention/sm90/sm90_ptx.cuh"
#include "kernels/gpu/attention/sm90/sm90_tma.cuh"

namespace kiln::gpu::flash {
namespace {

using detail::FlashParams;
using namespace sm90;

// Note [Flash sm90 backward]: a block owns kBk = 64 kC keys of one (batch, head) and walks the
// query tiles of kBq = 64 rows that see them (causal: from the block's first key on; causal is
// top-left aligned, key j seen by query i iff j <= i, as in flash_mma_bwd.cuh). Warpgroup 0 is the
// producer (one thread: K and V once, then Q, dO and the pre-pass rows l2 = lse log2(e),
// dl = rowsum(dO O) of each tile into stage t % kStages by TMA / bulk copies on a "full" mbarrier;
// the consumers release the stage on its "empty" one). Each consumer warpgroup (64 keys, 16 a
// warp) per tile:
//   S^T = K Q^T, dP^T = V dO^T     wgmma m64n64k16, both operands K-major in shared memory;
//   P^T = exp2(S^T scale log2(e) - l2), dS^T = P^T (dP^T - dl)   in registers (the pre-pass made
//                                  l2 = +inf, dl = 0 for rows past the sequence: P^T = 0 there);
//   dV += P^T dO, dK += dS^T Q     A from registers (accumulator -> A-fragment layout, as the
//                                  forward's P), B = dO / Q read MN-major;
//   dQ = dS K                      dS^T stored 16-bit into a 128-byte-swizzled tile, read back as
//                                  an MN-major A (transpose bit), B = K MN-major (with kC = 2 each
//                                  warpgroup takes 32 of the 64 columns over all 128 keys);
// then dQ scale goes to a shared staging tile and one thread adds it to p.dq_acc with TMA
// reduce-add stores (cp.reduce.async.bulk.tensor .add, whole 128-byte lines), overlapping the next
// tile. dK scale and dV leave through p.dk_* strides at the end.
//
// Measured on an H200, causal bf16 forward+backward TFLOP/s at B16 H12 T1024 D64 (GPT-2's shape,
// bench/run_attention_bench.sh; PyTorch / cuDNN 208-244 in the same runs, flash_mma's backward
// 175-176): dQ by red.global.add.v2.f32 from registers (16 a thread and tile): kC 1 210-212,
// kC 2 216-218; dQ by TMA reduce-add: kC 1, 2 blocks/SM 241-243 (3 Q / dO stages 243), kC 2
// (1 block/SM) 219-227. Issuing dV += P^T dO before dS^T and the next tile's S^T / dP^T before
// staging dQ: 236 (waiting for the last dQ product alone while S^T / dP^T run would make ptxas
// serialize every wgmma, C7514: it reads a wgmma's accumulator inside another's pipeline stage).
// ptxas: no spills; 128 registers at entry (kC 1), consumers raised to 232.
//
// Head dim 128 (Note [Flash sm90 backward D128]): the same walk with every 64-column half of a
// K / V / Q / dO tile in its own 128-byte-swizzled box (TMA boxes are 64 elements wide); dK / dV
// accumulators are 64 x 128 (64 registers a thread each), dV += P^T dO and dK += dS^T Q are
// m64n128 with B read MN-major across the two boxes (leading byte offset = one box), and dQ is
// made 64 columns at a time (m64n64, 32 registers reused) and staged before the reduce-adds.
// Measured on an H200, causal bf16 forward+backward at B4 H32 T4096 D128 (PyTorch 496 TFLOP/s):
// flash_mma's backward 270, two consumer warpgroups of 64 keys (1 block/SM) 428-431 with 2
// Q / dO stages, 422-426 with 3; one warpgroup (2 blocks/SM, 1 stage, dQ in two halves)
// 366-372. ptxas: no spills, no wgmma serialization; consumers at 240 registers.
//

// Note [Flash sm90 backward PDL]: the kernel is a programmatic dependent launch (pdl.cuh) after the
// pre-pass: its blocks start while the pre-pass ends and load K / V before pdl_wait (the producer,
// before the first l2 / dl rows; the consumers, before their first dq reduce-add). The dq cast is
// launched the same way after it. H100, causal bf16 forward+backward (bench/
// run_attention_bench.sh, three interleaved passes): B16 H12 T1024 D64 256.8-257.8 -> 258.6-259.6
// TFLOP/s, B4 H32 T4096 D128 467.5-473.7 -> 471.3-491.4. KILN_FLASH_SM90_PDL=0 turns it off.
// Launching the forward and the pre-pass the same way too measured slower at head dim 128 (469.8-
// 474.0 against 477.1-483.8 with no programmatic launch; head dim 64 unchanged): not kept.
//
// Note [Flash sm90 backward grid order]: block w of the 1-d grid takes key tile *jt of (batch,
// head) *b, *h. The (batch, head) pairs go in groups of grp (about one wave of blocks; one group
// for a call of at most three: each group restarts the long blocks, B1 H24 T2048 D64 causal
// forward+backward 160.1-162.7 -> 143.6-146.1 us, H100), and inside a group key tile 0 of every
// pair comes first, then key tile 1, ...: under causal masking key tile j sees tq - j kBk query
// rows, so the hardware's block scheduler starts the long blocks first and ends the launch on short
// ones, while the blocks in flight share the Q / dO / dq rows of a few heads in L2. grp = 1 is the
// plain (key tile, head, batch) order.
__device__ inline void work_tile(int w, int nkt, int nhb, int grp, int hq, int* jt, int* h,
                                 int* b) {
  const int g = w / (grp * nkt);
  const int r = w - g * grp * nkt;
  const int gsz = min(grp, nhb - g * grp);
  *jt = r / gsz;
  const int hb = g * grp + r % gsz;
  *h = hb % hq;
  *b = hb / hq;
}

template <bool kBf16, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    sm90_bwd_kernel(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mdo,
                    const __grid_constant__ CUtensorMap mdq,
                    const __grid_constant__ CUtensorMap mdk,
                    const __grid_constant__ CUtensorMap mdv, const FlashParams p,
                    const float* l2buf, const float* dlbuf, int64_t pad, int nkt, int grp,
                    bool tma_out) {
  constexpr int kBk = C::kBk, kStages = C::kStages, kC = C::kC, kDqN = C::kDqN;
  constexpr int kD = C::kD, kBoxes = C::kBoxes, kRows64 = C::kRows64, kDqW = C::kDqW;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sk = base + C::kSk, sv = base + C::kSv, sds = base + C::kSds, bar = base + C::kBar;
  const uint32_t kv_full = bar;
  auto full = [&](int s) { return bar + 8 + 8 * s; };
  auto empty = [&](int s) { return bar + 8 + 8 * (kStages + s); };
  auto q_buf = [&](int s) { return base + C::kSq + s * kRows64; };
  auto do_buf = [&](int s) { return base + C::kSdo + s * kRows64; };
  auto l_buf = [&](int s) { return base + C::kSl + s * 2 * kRowBytes; };

  int h, b, jt;
  work_tile(static_cast<int>(blockIdx.x), nkt, p.hq * p.b, grp, p.hq, &jt, &h, &b);
  const int64_t lq = p.tq, lk = p.tk;
  const int j0 = jt * kBk;
  const int istart = p.causal ? j0 : 0;  // causal: earlier queries see none of these keys
  const int ntiles = istart < lq ? static_cast<int>((lq - istart + kBq - 1) / kBq) : 0;
  const int64_t prow = (static_cast<int64_t>(b) * p.hq + h) * pad;
  const int warp = threadIdx.x / kWarpThreads, lane = threadIdx.x % kWarpThreads;

  pdl_launch_dependents();  // the dq cast may launch (it waits for this grid to finish)
  if (threadIdx.x == 0) {
    mbar_init(kv_full, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), 4 * kC);  // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp < 4) {  // producer warpgroup
    regs_dealloc<C::kProducerRegs>();
    if (warp == 0 && lane == 0 && ntiles > 0) {
      tma_prefetch_map(&mq);
      tma_prefetch_map(&mdo);
      mbar_arrive_expect_tx(kv_full, 2 * C::kKv);
      for (int c = 0; c < kC; ++c)
        for (int x = 0; x < kBoxes; ++x) {
          tma_load_4d_once(sk + c * kRows64 + x * kTile, &mk, kv_full, 64 * x, j0 + 64 * c, h, b);
          tma_load_4d_once(sv + c * kRows64 + x * kTile, &mv, kv_full, 64 * x, j0 + 64 * c, h, b);
        }
      pdl_wait();  // the pre-pass's l2 / dl rows and zeroed dq (programmatic launch)
      for (int t = 0; t < ntiles; ++t) {
        const int s = t % kStages, u = t / kStages;
        const int i0 = istart + t * kBq;  // i0 + kBq <= pad
        if (t >= kStages) mbar_wait(empty(s), (u - 1) & 1);
        mbar_arrive_expect_tx(full(s), 2 * kRows64 + 2 * kRowBytes);
        for (int x = 0; x < kBoxes; ++x) {
          tma_load_4d(q_buf(s) + x * kTile, &mq, full(s), 64 * x, i0, h, b);
          tma_load_4d(do_buf(s) + x * kTile, &mdo, full(s), 64 * x, i0, h, b);
        }
        bulk_load(l_buf(s), l2buf + prow + i0, kRowBytes, full(s));
        bulk_load(l_buf(s) + kRowBytes, dlbuf + prow + i0, kRowBytes, full(s));
      }
    }
    return;
  }
  regs_alloc<C::kConsumerRegs>();
  // One consumer warpgroup: cw is 0 at compile time, so the descriptors built from it stay in
  // uniform registers (no per-wgmma moves into them).
  const int cw = kC == 1 ? 0 : warp / 4 - 1, wi = warp % 4, g = lane >> 2, tq4 = lane & 3;
  const int kw = cw * 64 + wi * 16;  // this warp's first key in the block
  const uint32_t sk_w = sk + cw * kRows64, sv_w = sv + cw * kRows64;
  const bool leader = threadIdx.x % 128 == 0;  // issues the warpgroup's dQ reduce-adds
  constexpr float kLog2e = 1.4426950408889634f;
  const float sl2 = p.scale * kLog2e;
  const int klim = lk - j0 < kBk ? static_cast<int>(lk - j0) : kBk;

  float dk[kD / 2], dv[kD / 2], dq[kDqW / 2];
#pragma unroll
  for (int i = 0; i < kD / 2; ++i) dk[i] = dv[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < kDqW / 2; ++i) dq[i] = 0.0f;
  uint32_t pa[kBq / 16][4], da[kBq / 16][4];
  // Shared-memory descriptors, built once and advanced by constants (desc_add): K / V of this
  // warpgroup and stage 0's Q / dO K-major (S^T, dP^T), stage 0's Q / dO MN-major (dK, dV), the
  // dS^T tile (dQ's A) and K MN-major at each of this warpgroup's dQ column blocks (dQ's B).
  const uint64_t k_kd = make_desc_sw128(sk_w, 16, 1024), v_kd = make_desc_sw128(sv_w, 16, 1024);
  const uint64_t q_kd0 = make_desc_sw128(q_buf(0), 16, 1024);
  const uint64_t do_kd0 = make_desc_sw128(do_buf(0), 16, 1024);
  const uint64_t q_md0 = make_desc_sw128(q_buf(0), kTile, 1024);
  const uint64_t do_md0 = make_desc_sw128(do_buf(0), kTile, 1024);
  const uint64_t ds_md = make_desc_sw128(sds, kTile, 1024);
  uint64_t k_md[kDqN / kDqW];
#pragma unroll
  for (int w = 0; w < kDqN / kDqW; ++w) {
    const int c0 = cw * kDqN + w * kDqW;
    k_md[w] = make_desc_sw128(sk + (c0 / 64) * kTile + (c0 % 64) * 2, kTile, 1024);
  }

  // This warpgroup's dQ staging boxes (columns cw kDqN ..).
  constexpr int kBoxF = C::kBoxF;
  const uint32_t sdq0 = base + C::kSdq + cw * (kDqN / kBoxF) * (kBq * 128);
  auto sdq_of = [&](int u) { return sdq0 + (C::kDqBufs == 2 ? (u & 1) * C::kDqBytes : 0); };
  // After a dQ product has completed: dQ scale of columns kDqW w .. of this warpgroup's share
  // into its staging boxes at sdq.
  auto stage_dq = [&](int w, uint32_t sdq) {
    if constexpr (C::kOrder == 0) {
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) {
        reg_fence(dk[i]);
        reg_fence(dv[i]);
      }
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          reg_fence(pa[kk][r]);
          reg_fence(da[kk][r]);
        }
    }  // order 1, 2: dK (order 2: and dV) still run: touch none of their registers
#pragma unroll
    for (int i = 0; i < kDqW / 2; ++i) reg_fence(dq[i]);
#pragma unroll
    for (int n = 0; n < kDqW / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = wi * 16 + g + 8 * e, col = w * kDqW + n * 8 + 2 * tq4;  // in the share
        const int c16 = (col % kBoxF) / 4;                                      // 16-byte chunk
        const uint32_t a = sdq + (col / kBoxF) * (kBq * 128) + row * 128 +
                           ((c16 ^ (row % 8)) * 16) + (col % 4) * 4;
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(a),
                     "f"(dq[4 * n + 2 * e] * p.scale), "f"(dq[4 * n + 2 * e + 1] * p.scale)
                     : "memory");
      }
  };
  // After the whole of tile u's dQ is staged: one reduce-add per box, and (order 0) the release
  // of u's Q / dO stage (orders 1, 2 release it in tile u + 1, once dK, which reads Q, is done).
  auto finish = [&](int u) {
    const uint32_t sdq = sdq_of(u);
    fence_proxy_async();
    cw == 0 ? named_sync<2, 128>() : named_sync<3, 128>();
    if (leader) {
#pragma unroll
      for (int c = 0; c < kDqN / kBoxF; ++c)
        tma_reduce_add_4d(&mdq, sdq + c * (kBq * 128), cw * kDqN + c * kBoxF, istart + u * kBq, h,
                          b);
      bulk_commit();
    }
    if constexpr (C::kOrder == 0) {
      __syncwarp();
      if (lane == 0) mbar_arrive(empty(u % kStages));  // Q / dO of tile u are read
    }
  };
  // acc += A B over the tile's kBq queries: dV += P^T dO (a = pa), dK += dS^T Q (a = da).
  auto issue_kv_grad = [&](float(&acc)[kD / 2], const uint32_t(&a)[kBq / 16][4],
                           const uint64_t md) {
#pragma unroll
    for (int kk = 0; kk < kBq / 16; ++kk) {
      if constexpr (kD == 64)
        wgmma_rs_n64<kBf16>(acc, a[kk], desc_add(md, kk * 2048), 1);
      else
        wgmma_rs_n128<kBf16>(acc, a[kk], desc_add(md, kk * 2048), 1);
    }
  };
  auto issue_dv = [&](const uint64_t do_md) { issue_kv_grad(dv, pa, do_md); };
  auto issue_dk = [&](const uint64_t q_md) { issue_kv_grad(dk, da, q_md); };
  // dQ [kBq, this warpgroup's kDqN columns] = dS K over all kBk keys, columns kDqW w ..;
  // B = K MN-major: keys kk 16 .. of key tile kk / 4, column c in box c / 64.
  auto issue_dq = [&](int w) {
#pragma unroll
    for (int kk = 0; kk < kBk / 16; ++kk) {
      const uint64_t dsa = desc_add(ds_md, kk * 2048);
      const uint64_t kb = desc_add(k_md[w], (kk / 4) * kRows64 + (kk % 4) * 2048);
      if constexpr (kDqW == 64)
        wgmma_ss_n64_tt<kBf16>(dq, dsa, kb, kk > 0 ? 1 : 0);
      else
        wgmma_ss_n32_tt<kBf16>(dq, dsa, kb, kk > 0 ? 1 : 0);
    }
  };

  pdl_wait();  // dq is zeroed before this warpgroup's reduce-adds
  if (ntiles > 0) mbar_wait(kv_full, 0);
  // kAReg: this warp's 16 keys of K / V as the A fragments of the 4 k16 steps.
  uint32_t ka[C::kAReg & 1 ? 4 : 1][4], va[C::kAReg & 2 ? 4 : 1][4];
  if (C::kAReg != 0 && ntiles > 0) {  // (K / V landed: kv_full)
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      if constexpr (C::kAReg & 1) ldsm_a_sw128(sk_w, wi * 16, kk, kTile, lane, ka[kk]);
      if constexpr (C::kAReg & 2) ldsm_a_sw128(sv_w, wi * 16, kk, kTile, lane, va[kk]);
    }
  }
  for (int t = 0; t < ntiles; ++t) {
    const int s = t % kStages;
    const int i0 = istart + t * kBq;
    const uint32_t sl = l_buf(s);
    const uint64_t q_kd = desc_add(q_kd0, s * kRows64), do_kd = desc_add(do_kd0, s * kRows64);
    const uint64_t q_md = desc_add(q_md0, s * kRows64), do_md = desc_add(do_md0, s * kRows64);
    mbar_wait(full(s), (t / kStages) & 1);
    // Orders 1, 2 at head dim 128: the last tile's dK / dV end before S^T / dP^T start (their
    // registers and those of S^T / dP^T in flight at once are more than the wgmma pipeline keeps).
    if constexpr (C::kOrder != 0 && kD == 128) wgmma_wait<0>();
    float st[32], dp[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) st[i] = dp[i] = 0.0f;
    // acc = A B^T over the head dim, both K-major (S^T = K Q^T, dP^T = V dO^T), one commit group.
    // kReg: A from the fragments ar (kAReg) instead of a_kd.
    auto issue_kmajor = [&]<bool kReg>(float(&acc)[32], const uint64_t a_kd,
                                       const uint32_t(&ar)[kReg ? 4 : 1][4], const uint64_t b_kd) {
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t off = (kk / 4) * kTile + (kk % 4) * 32;
        if constexpr (kReg)
          wgmma_rs_n64<kBf16, 0>(acc, ar[kk], desc_add(b_kd, off), kk > 0 ? 1 : 0);
        else
          wgmma_ss_n64<kBf16>(acc, desc_add(a_kd, off), desc_add(b_kd, off), kk > 0 ? 1 : 0);
      }
      wgmma_commit();
    };
    wgmma_fence();
    issue_kmajor.template operator()<(C::kAReg & 1) != 0>(st, k_kd, ka, q_kd);
    issue_kmajor.template operator()<(C::kAReg & 2) != 0>(dp, v_kd, va, do_kd);
    if constexpr (C::kLate) {
      if (t > 0) finish(t - 1);  // the last tile's dQ, while S^T / dP^T run
    }
    wgmma_wait<1>();  // S^T (orders 1, 2: and the last tile's dK / dV)
#pragma unroll
    for (int i = 0; i < 32; ++i) reg_fence(st[i]);
    if constexpr (C::kOrder != 0) {
#pragma unroll
      for (int kk = 0; kk < kBq / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          reg_fence(pa[kk][r]);
          reg_fence(da[kk][r]);
        }
      if (t > 0) {
        __syncwarp();
        if (lane == 0) mbar_arrive(empty((t - 1) % kStages));  // Q / dO of tile t - 1 are read
      }
    }
    // P^T: element r of column group n is key kw + g + 8 (r >> 1), query n 8 + 2 tq4 + (r & 1).
    const bool edge = j0 + kBk > lk || (p.causal && i0 < j0 + kBk - 1);
    const int qrel = i0 - j0;  // causal: key kl is seen by query qi iff kl <= qrel + qi
    // Key kl is masked for query qi iff kl > min(kmax, base + qi - 2 tq4) (both huge off the
    // edges): per-thread limits, one compare a value. Two other codings of the same mask (removed
    // in session 7) gave different ptxas schedules, measured with ncu on an H100 in session 6: a
    // predicated loop 2.66-2.69 ms / 228.3-228.7 us (head dim 128 / 64), the same loop in a generic
    // lambda 2.54-2.56 ms / 230.6-230.8 us, this one 2.61-2.64 ms / 226.8-226.9 us; back to back in
    // a training step, where the H100 lowers its clocks under its power cap, this one is the faster
    // at head dim 128 too: forward+backward 467.2 / 470.1 TFLOP/s against 455.4 / 458.1 (lambda).
    const int kmax = edge ? klim - 1 : INT_MAX;
    const int base = edge && p.causal ? qrel + 2 * tq4 : INT_MAX / 2;
    const int kl0 = kw + g, kl1 = kw + g + 8;
#pragma unroll
    for (int n = 0; n < kBq / 8; ++n) {
      float l2v[2];
      asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                   : "=f"(l2v[0]), "=f"(l2v[1])
                   : "r"(sl + (n * 8 + 2 * tq4) * 4));
      const int lim0 = min(kmax, base + n * 8), lim1 = min(kmax, base + n * 8 + 1);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        float x = fmaf(st[4 * n + r], sl2, -l2v[r & 1]);
        const int kl = (r >> 1) ? kl1 : kl0, lim = (r & 1) ? lim1 : lim0;
        x = kl > lim ? neg_inf() : x;
        st[4 * n + r] = exp2_approx(x);
      }
    }
    acc_to_a<kBf16, kBq>(st, pa);
    if constexpr (C::kOrder == 1) {  // dV += P^T dO runs while dS^T is made
      wgmma_fence();
      issue_dv(do_md);
      wgmma_commit();
      wgmma_wait<1>();  // dP^T
    } else {
      wgmma_wait<0>();
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) reg_fence(dp[i]);
    // Every warp's part of the last dQ product has read the dS^T tile.
    if (t > 0) named_sync<1, 128 * kC>();
#pragma unroll
    for (int n = 0; n < kBq / 8; ++n) {
      float dlv[2];
      asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
                   : "=f"(dlv[0]), "=f"(dlv[1])
                   : "r"(sl + kRowBytes + (n * 8 + 2 * tq4) * 4));
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float d0 = st[4 * n + 2 * e] * (dp[4 * n + 2 * e] - dlv[0]);
        const float d1 = st[4 * n + 2 * e + 1] * (dp[4 * n + 2 * e + 1] - dlv[1]);
        const uint32_t w = pack2<kBf16>(d0, d1);
        da[n / 2][(n & 1) * 2 + e] = w;
      }
    }
    {  // dS^T by stmatrix: da[m] holds its 8 x 8 blocks (n, e) = (2 m + j / 2, j % 2), rows (keys)
       // kw + 8 e .., 16-byte chunk n (queries n 8 ..) at n ^ (row % 8) (128-byte swizzle)
      const int r8 = lane % 8, j = lane / 8, row = kw + r8 + 8 * (j & 1);
#pragma unroll
      for (int m = 0; m < kBq / 16; ++m)
        stsm_x4(sds + row * 128 + (((2 * m + (j >> 1)) ^ r8) * 16), da[m]);
    }
    // The staging buffer stage_dq writes next has been read by its last reduce-add (kDqBufs 2:
    // the one before the newest).
    if (leader) bulk_wait_read<C::kDqBufs - 1>();
    fence_proxy_async();
    named_sync<1, 128 * kC>();  // the whole dS^T tile is in shared memory
    wgmma_fence();
    if constexpr (C::kOrder != 0) {
      static_assert(kDqN == kDqW, "orders 1, 2 make dQ in one product");
      issue_dq(0);
      wgmma_commit();
      if constexpr (C::kOrder == 2) issue_dv(do_md);
      issue_dk(q_md);
      wgmma_commit();
      wgmma_wait<1>();  // dQ (dK, order 2: and dV run on)
      stage_dq(0, sdq_of(t));
    } else {
      issue_dv(do_md);
      issue_dk(q_md);
      wgmma_commit();
#pragma unroll
      for (int w = 0; w < kDqN / kDqW; ++w) {
        if (w > 0) wgmma_fence();  // stage_dq read the accumulator
        issue_dq(w);
        wgmma_commit();
        wgmma_wait<0>();
        stage_dq(w, sdq_of(t));
      }
    }
    if constexpr (!C::kLate) finish(t);
  }
  if constexpr (C::kLate) {
    if (ntiles > 0) finish(ntiles - 1);
  }
  if constexpr (C::kOrder != 0) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < kD / 2; ++i) {
      reg_fence(dk[i]);
      reg_fence(dv[i]);
    }
  }
  if (tma_out) {
    // dK scale and dV through shared memory (the Q / dO stages, free once every consumer
    // warpgroup is past its last product) and TMA stores through dk_* strides, which drop the
    // rows past the sequence.
    named_sync<1, 128 * kC>();
    const uint32_t ok = base + C::kSq + cw * 2 * kRows64, ov = ok + kRows64;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int row = wi * 16 + g + 8 * e;  // row % 8 == g
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        const uint32_t a = (n / 8) * kTile + row * 128 + (((n % 8) ^ g) * 16) + tq4 * 4;
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ok + a),
                     "r"(pack2<kBf16>(dk[4 * n + 2 * e] * p.scale, dk[4 * n + 2 * e + 1] * p.scale))
                     : "memory");
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ov + a),
                     "r"(pack2<kBf16>(dv[4 * n + 2 * e], dv[4 * n + 2 * e + 1]))
                     : "memory");
      }
    }
    fence_proxy_async();
    cw == 0 ? named_sync<2, 128>() : named_sync<3, 128>();
    if (leader) {
      if (j0 + 64 * cw < lk) {
#pragma unroll
        for (int x = 0; x < kBoxes; ++x) {
          tma_store_4d_once(&mdk, ok + x * kTile, 64 * x, j0 + 64 * cw, h, b);
          tma_store_4d_once(&mdv, ov + x * kTile, 64 * x, j0 + 64 * cw, h, b);
        }
        bulk_commit();
      }
      bulk_wait_read<0>();  // the reduce-adds and stores have read shared memory before exit
    }
    return;
  }
  if (ntiles > 0 && leader) bulk_wait_read<0>();  // the reduce-adds have read shared memory

  // dK scale and dV, column pairs through dk_* strides (keys past the sequence are not written).
  uint16_t* dkp = static_cast<uint16_t*>(p.dk) + p.dk_row0(b) + h * p.dk_sh;
  uint16_t* dvp = static_cast<uint16_t*>(p.dv) + p.dk_row0(b) + h * p.dk_sh;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int64_t key = j0 + kw + g + 8 * e;
    const bool in = key < lk;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      const int64_t off = (in ? key : 0) * p.dk_sr + n * 8 + 2 * tq4;
      st_u32_if(in, dkp + off,
                pack2<kBf16>(dk[4 * n + 2 * e] * p.scale, dk[4 * n + 2 * e + 1] * p.scale));
      st_u32_if(in, dvp + off, pack2<kBf16>(dv[4 * n + 2 * e], dv[4 * n + 2 * e + 1]));
    }
  }
}

// ---- host side ----

// Default of the backward switch; KILN_FLASH_SM90_BWD=0 / 1 in the environment overrides it.
constexpr bool kBwdDefaultOn = true;
std::atomic<bool> g_bwd_enabled{[] {
  const char* e = std::getenv("KILN_FLASH_SM90_BWD");
  if (e && (e[0] == '0' || e[0] == '1') && e[1] == 0) return e[0] == '1';
  return kBwdDefaultOn;
}()};

// Head dim 128: on by default (KILN_FLASH_SM90_BWD128=0 turns it off; it also follows the
// switches above).
constexpr bool kBwd128DefaultOn = true;
std::atomic<bool> g_bwd128_enabled{[] {
  const char* e = std::getenv("KILN_FLASH_SM90_BWD128");
  if (e && (e[0] == '0' || e[0] == '1') && e[1] == 0) return e[0] == '1';
  return kBwd128DefaultOn;
}()};

// Kernel shapes, KILN_FLASH_SM90_BWD_CFG (head dim 64) / KILN_FLASH_SM90_BWD128_CFG (128) = n
// picks one for tuning runs (defaults kDefaultCfg64 = 12, kDefaultCfg128 = 6): 0 two Q / dO stages,
// product order 2, 1 product order 0, 2 three stages, 3 product order 1, 5 the late dQ reduce-add
// (kLate; three stages at head dim 64, two at 128), 6 the same with two dQ staging buffers, 7 and
// 8 shape 5 with K (7) or K and V (8) as register A fragments (kAReg; head dim 64, else shape 5);
// head dim 64 only: 4 two consumer warpgroups (one block an SM, order 0), 9 the same with order 2
// and kLate, 10 shape 9 with kAReg, 11 shape 10 with two dQ staging buffers, 12 shape 10 with four
// Q / dO stages.
template <int kD, int kC, int kMinBlocks, int kLateStages>
struct Shapes {
  using S0 = BwdCfg<kD, kC, 2, kMinBlocks, 2>;
  using S1 = BwdCfg<kD, kC, 2, kMinBlocks, 0>;
  using S2 = BwdCfg<kD, kC, 3, kMinBlocks, 2>;
  using S3 = BwdCfg<kD, kC, 2, kMinBlocks, 1>;
  using S5 = BwdCfg<kD, kC, kLateStages, kMinBlocks, 2, true, 1>;
  using S6 = BwdCfg<kD, kC, kLateStages, kMinBlocks, 2, true, 2>;
  using S7 = BwdCfg<kD, kC, kLateStages, kMinBlocks, 2, true, 1, kD == 64 ? 1 : 0>;
  using S8 = BwdCfg<kD, kC, kLateStages, kMinBlocks, 2, true, 1, kD == 64 ? 3 : 0>;
};
// Shapes 0-8: at D64 one consumer warpgroup of 64 keys, 2 blocks an SM; at D128 two sharing
// Q / dO, 1 block an SM. Shapes 4, 9-12 (D64 only): two warpgroups, 1 block an SM.
using Shapes64 = Shapes<64, 1, 2, 3>;
using Shapes128 = Shapes<128, 2, 1, 2>;
struct Two64 {
  using S4 = BwdCfg<64, 2, 3, 1>;
  using S9 = BwdCfg<64, 2, 3, 1, 2, true, 1>;
  using S10 = BwdCfg<64, 2, 3, 1, 2, true, 1, 3>;
  using S11 = BwdCfg<64, 2, 3, 1, 2, true, 2, 3>;
  using S12 = BwdCfg<64, 2, 4, 1, 2, true, 1, 3>;
};

int env_digit(const char* name, int fallback, int max) {
  const char* e = std::getenv(name);
  if (e == nullptr || e[0] < '0' || e[0] > '9') return fallback;
  const int v = std::atoi(e);
  return v <= max ? v : fallback;
}
// Note [Flash sm90 backward late dQ]: kLate moves tile t's proxy fence, warpgroup barrier and dQ
// reduce-add behind tile t + 1's S^T / dP^T issue. Source-level ncu of the session 8 default at
// head dim 64 put 10% of the kernel's stall samples on that fence (waiting for the staging
// stores) and barrier. H100, ncu main kernel, same device call: head dim 64 208.1-211.6 us ->
// 203.2-206.4 (one staging buffer), 205.5-207.1 (two); head dim 128 2.44-2.45 ms -> 2.48 (one),
// 2.42-2.43 (two; a second call: 2.46-2.47 -> 2.44-2.45). With the head-dim-64 warpgroup index
// known at compile time (uniform descriptors): 205.2-207.7 -> 199.7-202.3. Also measured: a
// mask-free copy of the P^T code for tiles off the edges, slower again (204.9-208.1 us, 2.53
// ms); two consumer warpgroups at head dim 64 with kLate 207.5-210.9; the softmax scale folded
// into dS^T (dP^T scale - dl scale by FFMA, no scaling of dQ / dK) 199.7-203.0 against 199.8-
// 203.2 (head dim 64; 8 bytes spilled at 128). The block's last wait on its bulk stores and
// reduce-adds is on their shared-memory reads only (completion is part of the grid's): head dim
// 128 2.44-2.45 -> 2.40-2.41 ms, 64 unchanged. Not kept either: an L2 prefetch (cp.async.bulk.
// prefetch) of the first K / V / Q / dO / l2 / dl loads of block blockIdx + one wave, issued with
// the last tile's loads (the consumers of a new block wait on those loads for 12% of the stall
// samples at head dim 64): 201.0-203.6 -> 204.7-207.2 us, forward+backward 263.7-264.9 -> 258.3-
// 258.9 TFLOP/s; head dim 128 unchanged. In-stream forward+backward
// (bench/run_attention_bench.sh, three interleaved passes) at head dim 64: 261.0-261.6 TFLOP/s ->
// 263.8-264.4; with the compile-time index in both, 262.8-263.7 (index 2) against 263.5-264.1;
// head dim 128 within the run-to-run spread (460-481 for every variant).
// Session 12 (bench/gpu_attention_shapes fwdbwd, H100, 3 interleaved passes, us a step; D64 is B16
// H12 T1024): dS^T by stmatrix B4 H32 T4096 D128 3865-3875 against 3914-3946, B2 H16 T2048 D128
// 286.1-295.3 against 296.4-306.8, D64 unchanged; then L2 hints: dQ reduce-adds evict-last, D64
// 332.4-334.7 against 336.1-337.9, B1 H24 T2048 D64 152.1-153.8 against 153.3-155.2; K / V (and
// the forward's Q) loaded evict-first, D64 330.9-331.2 against 331.4-333.7, B2 H16 T2048 D128
// 283.8-289.7 against 286.8-295.3; dK / dV stored evict-first, D64 331.8-332.2 against 332.2-
// 334.1, B2 H16 T2048 D128 287.8-296.8 against 299.1-299.8 (Q / dO and the forward's K / V
// evict-last: 333.7-335.6 against 330.6-331.2, not kept). Left out of the D64 default (336.4-
// 337.3): the dQ reduce-adds 314.0-317.0 (plain TMA stores 321.2-324.7); with gradients left to
// accumulate (408.4-411.6) the masks 408.6-411.4, the dQ product and staging 405.4-407.5, the
// staging's wait for the last reduce-add's reads (timing only) 409.4-411.7.
constexpr int kDefaultCfg128 = 6;
constexpr int kMaxCfg = 12;
// Shapes forced by sm90_set_backward_cfg (-1: the environment's, else the defaults).
std::atomic<int> g_cfg64{-1}, g_cfg128{-1};
int bwd128_cfg() {
  static const int env = env_digit("KILN_FLASH_SM90_BWD128_CFG", kDefaultCfg128, kMaxCfg);
  const int f = g_cfg128.load(std::memory_order_relaxed);
  const int c = f >= 0 ? f : env;
  return c == 4 || c > 8 ? kDefaultCfg128 : c;  // 4, 9-12: head dim 64 only
}
// Head dim 64: two consumer warpgroups of 64 keys sharing each Q / dO tile, so one dQ reduce-add
// covers 128 keys (Note [Flash sm90 backward two warpgroups]), with the late dQ reduce-add (Note
// [Flash sm90 backward late dQ]), K and V as register A fragments (Note [Flash sm90 backward L2])
// and four Q / dO stages. Before session 15: index 8, one warpgroup, 2 blocks an SM.
constexpr int kDefaultCfg64 = 12;
int bwd_cfg() {
  static const int env = env_digit("KILN_FLASH_SM90_BWD_CFG", kDefaultCfg64, kMaxCfg);
  const int f = g_cfg64.load(std::memory_order_relaxed);
  return f >= 0 ? f : env;
}
// dK / dV leave by TMA stores (KILN_FLASH_SM90_BWD_TMA_OUT=0 / 1; default kTmaOutDefault).
constexpr bool kTmaOutDefault = true;
bool bwd_tma_out() {
  static const bool on = env_digit("KILN_FLASH_SM90_BWD_TMA_OUT", kTmaOutDefault ? 1 : 0, 1) == 1;
  return on;
}
// Programmatic dependent launch of this kernel after the pre-pass and of the dq cast after it
// (sm90_backward_pdl), unless KILN_FLASH_SM90_PDL=0.
bool bwd_pdl() {
  static const bool on = pdl_env_on("KILN_FLASH_SM90_PDL");
  return on;
}
// (Batch, head) pairs per group of the grid order (Note [Flash sm90 backward grid order]):
// KILN_FLASH_SM90_BWD_GROUP=n (1 .. 999) in the environment, else 0: the default.
int bwd_group_env() {
  static const int g = env_digit("KILN_FLASH_SM90_BWD_GROUP", 0, 999);
  return g;
}

template <bool kBf16, class C>
bool launch(const FlashParams& p, cudaStream_t stream, const float* l2, const float* dl,
            int64_t pad, int device) {
  CUtensorMap mq, mk, mv, mdo, mdq{}, mdk{}, mdv{};
  if (!make_map(&mq, p.q, kBf16, p.d, p.tq, p.hq, p.b, p.q_sr, p.q_sh, p.q_sb, kBq) ||
      !make_map(&mdo, p.dout, kBf16, p.d, p.tq, p.hq, p.b, p.do_sr, p.do_sh, p.do_sb, kBq) ||
      !make_map(&mk, p.k, kBf16, p.d, p.tk, p.hk, p.b, p.k_sr, p.k_sh, p.k_sb, 64) ||
      !make_map(&mv, p.v, kBf16, p.d, p.tk, p.hk, p.b, p.v_sr, p.v_sh, p.v_sb, 64))
    return false;
  if (!make_map_f32(&mdq, p.dq_acc, p.d, p.tq, p.hq, p.b, p.acc_sr, p.acc_sh, p.acc_sb, kBq))
    return false;
  // dK / dV by TMA stores where their strides allow (else column pairs from registers).
  const bool tma_out =
      bwd_tma_out() &&
      make_map(&mdk, p.dk, kBf16, p.d, p.tk, p.hk, p.b, p.dk_sr, p.dk_sh, p.dk_sb, 64) &&
      make_map(&mdv, p.dv, kBf16, p.d, p.tk, p.hk, p.b, p.dk_sr, p.dk_sh, p.dk_sb, 64);
  constexpr auto kernel = &sm90_bwd_kernel<kBf16, C>;
  if (!smem_limit_set<kernel>(C::kSmem)) return false;
  // One block per (key tile, batch, head), in the order of Note [Flash sm90 backward grid order].
  const int64_t nkt = (p.tk + C::kBk - 1) / C::kBk, nhb = static_cast<int64_t>(p.hq) * p.b;
  if (nkt * nhb > INT_MAX) return false;
  int grp = bwd_group_env();
  if (grp == 0) {
    grp = std::max(1, sm_count(device) * C::kMinBlocks / static_cast<int>(nkt));
    if (nhb <= 3 * static_cast<int64_t>(grp)) grp = static_cast<int>(nhb);
  }
  grp = static_cast<int>(std::min<int64_t>(grp, nhb));
  // Programmatic launch: the blocks load K / V while the pre-pass ends (pdl_wait in the kernel).
  const PdlConfig c(dim3(static_cast<unsigned>(nkt * nhb)), dim3(C::kThreads), C::kSmem, stream,
                    bwd_pdl());
  // A launch error stays pending for the caller's check (check_launch), as with <<< >>>.
  pdl_launch(c, kernel, mq, mk, mv, mdo, mdq, mdk, mdv, p, l2, dl, pad, static_cast<int>(nkt), grp,
             tma_out);
  return true;
}

template <bool kBf16, class Sh>
bool launch_shape(int cfg, const FlashParams& p, cudaStream_t stream, const float* l2,
                  const float* dl, int64_t pad, int dev) {
  switch (cfg) {
    case 1:
      return launch<kBf16, typename Sh::S1>(p, stream, l2, dl, pad, dev);
    case 2:
      return launch<kBf16, typename Sh::S2>(p, stream, l2, dl, pad, dev);
    case 3:
      return launch<kBf16, typename Sh::S3>(p, stream, l2, dl, pad, dev);
    case 5:
      return launch<kBf16, typename Sh::S5>(p, stream, l2, dl, pad, dev);
    case 6:
      return launch<kBf16, typename Sh::S6>(p, stream, l2, dl, pad, dev);
    case 7:
      return launch<kBf16, typename Sh::S7>(p, stream, l2, dl, pad, dev);
    case 8:
      return launch<kBf16, typename Sh::S8>(p, stream, l2, dl, pad, dev);
    default:
      return launch<kBf16, typename Sh::S0>(p, stream, l2, dl, pad, dev);
  }
}

template <bool kBf16>
bool launch_cfg(const FlashParams& p, cudaStream_t stream, const float* l2, const float* dl,
                int64_t pad, int dev) {
  if (p.d == 128) return launch_shape<kBf16, Shapes128>(bwd128_cfg(), p, stream, l2, dl, pad, dev);
  const int cfg = bwd_cfg();
  switch (cfg) {
    case 4:
      return launch<kBf16, Two64::S4>(p, stream, l2, dl, pad, dev);
    case 9:
      return launch<kBf16, Two64::S9>(p, stream, l2, dl, pad, dev);
    case 10:
      return launch<kBf16, Two64::S10>(p, stream, l2, dl, pad, dev);
    case 11:
      return launch<kBf16, Two64::S11>(p, stream, l2, dl, pad, dev);
    case 12:
      return launch<kBf16, Two64::S12>(p, stream, l2, dl, pad, dev);
    default:
      return launch_shape<kBf16, Shapes64>(cfg, p, stream, l2, dl, pad, dev);
  }
}

}  // namespace

bool sm90_backward_pdl() { return bwd_pdl(); }

// Forces backward kernel shapes (indices as KILN_FLASH_SM90_BWD_CFG / _BWD128_CFG; -1 or out of
// range: the environment's or the defaults), so tests cover every shape. Not in flash_sm90.h:
// tests declare it themselves.
void sm90_set_backward_cfg(int cfg64, int cfg128) {
  g_cfg64.store(cfg64 >= 0 && cfg64 <= kMaxCfg ? cfg64 : -1, std::memory_order_relaxed);
  g_cfg128.store(cfg128 >= 0 && cfg128 <= kMaxCfg ? cfg128 : -1, std::memory_order_relaxed);
}

void sm90_set_backward_enabled(bool on) { g_bwd_enabled.store(on, std::memory_order_relaxed); }
void sm90_set_backward128_enabled(bool on) {
  g_bwd128_enabled.store(on, std::memory_order_relaxed);
}

bool sm90_backward(const detail::FlashParams& p, DType dtype, int device, gpuStream_t stream,
                   const float* l2, const float* dl, int64_t pad) {
  if (!g_bwd_enabled.load(std::memory_order_relaxed) || !sm90_enabled()) return false;
  const bool bf16 = dtype == DType::BFloat16;
  if (!bf16 && dtype != DType::Float16) return false;
  if (p.d != 64 && (p.d != 128 || !g_bwd128_enabled.load(std::memory_order_relaxed))) return false;
  if (p.hq != p.hk || p.dkv_f32 || p.dq_acc == nullptr) return false;
  if (p.mask != nullptr || p.p_drop > 0.0f || p.cu_q != nullptr || p.cu_k != nullptr) return false;
  if (p.tq <= 0 || p.tk <= 0 || p.tq > INT_MAX / 2 || p.tk > INT_MAX / 2) return false;
  if (p.hq > 65535 || p.b > 65535) return false;
  if (pad < (p.tq + kBq - 1) / kBq * kBq) return false;  // every tile read lies inside
  // The pre-pass rows are read by 16-byte bulk copies of kBq floats.
  if (reinterpret_cast<uintptr_t>(l2) % 16 != 0 || reinterpret_cast<uintptr_t>(dl) % 16 != 0 ||
      pad % 4 != 0)
    return false;
  // dK / dV: 4-byte stores of column pairs (strides of size-1 dimensions are never used).
  for (const void* ptr : {p.dk, p.dv})
    if (reinterpret_cast<uintptr_t>(ptr) % 4 != 0) return false;
  if ((p.tk > 1 && p.dk_sr % 2 != 0) || (p.hq > 1 && p.dk_sh % 2 != 0) ||
      (p.b > 1 && p.dk_sb % 2 != 0))
    return false;
  if (!is_sm90(device)) return false;
  const cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
  return bf16 ? launch_cfg<true>(p, s, l2, dl, pad, device)
              : launch_cfg<false>(p, s, l2, dl, pad, device);
}

}  // namespace kiln::gpu::flash
