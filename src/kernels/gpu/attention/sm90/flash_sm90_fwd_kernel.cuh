// The sm90 forward kernel (Note [Flash sm90 forward]) and its shapes (FwdCfg); the host side,
// the shape tables and their Notes are in flash_sm90_fwd.cu, the one file that includes this.
#pragma once

#include <cstdint>

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/flash_params.h"
#include "kernels/gpu/attention/pdl.cuh"
#include "kernels/gpu/attention/sm90/flash_sm90_sched.cuh"
#include "kernels/gpu/attention/sm90/sm90_ptx.cuh"
#include "kernels/gpu/attention/sm90/sm90_tma.cuh"
#include "kernels/gpu/warp.cuh"

namespace kiln::gpu::flash::sm90 {

using detail::FlashParams;

// Note [Flash sm90 forward]: a block owns kBq = 64 kConsumers query rows of one (batch, head) at a
// time (a work tile; persistent blocks loop over several, Note [Flash sm90 forward schedule]): a
// producer warpgroup (registers given up by setmaxnreg; one thread issues every TMA copy) and
// kConsumers consumer warpgroups of 64 rows. Per work tile the producer loads K and V of each key
// tile of kBk keys into the next of kStages stages (a stage counter runs on across work tiles),
// each on its own "full" mbarrier (S can start before V lands), and the tile's Q (after its first
// K) into one of kQBufs Q buffers; K and V each have an "empty" barrier the consumer warps arrive
// on once their products have read the buffer (K right after S_t, V after P V), Q one they arrive
// on after the epilogue, so the next loads (the next work tile's included) start early. Per key
// tile t a consumer warpgroup issues S_t = Q K_t^T (wgmma m64nKk16, both operands K-major in
// shared memory, or Q from registers with kQReg), then O += P_{t-1} V_{t-1} (m64nDk16, P from
// registers in the A-fragment layout, V read N-major), waits for S_t alone and runs the online
// softmax of tile t, rescales O and packs P_t. ptxas puts the wait for P_{t-1} V_{t-1} at the top
// of its basic block (the softmax after the mask branch), so P V overlaps the softmax of the other
// warpgroup (kPingPong: turns by named barriers 2 and 3) or other blocks, not its own (session 15).
// Shared tiles are [D / 64][rows][64 elements] with TMA's 128-byte swizzle (16-byte chunk c of row
// r at c ^ (r % 8)), the layout wgmma's SW128 descriptors read: K-major operands step 32 bytes per
// k16 inside a 64-element chunk (stride between 8-row groups 1024 bytes); V (N-major) steps 16 rows
// = 2048 bytes per k16, its 64-column chunks kBk 128 bytes apart (the leading byte offset). The
// output is normalized (rcp.approx; lse by lg2.approx), staged in shared memory by stmatrix and
// leaves by TMA (kTmaO) or as 16-byte row chunks. Causal calls stop at the block's diagonal and
// mask only tiles that cross it. Softmax runs in the log2 domain with the scale folded into the
// exponent (scale > 0 only). Semantics match flash_mma.cuh: causal is top-left aligned (key j seen
// by row i iff j <= i), rows without keys give 0 and lse = -inf.
//
// Measured shapes and features, kept and not, session by session: docs/notes/flash_sm90_forward.md.
//
// One kernel shape: key tile kBk, kStages K/V buffers, kConsumers consumer warpgroups of 64 query
// rows, kMinBlocks blocks per SM (several blocks let one block's start and end overlap another's
// work; the register split follows), kPingPong (2 consumers): the consumer warpgroups take turns
// issuing their MMAs (named barriers), so one's softmax overlaps the other's products. kPersist:
// one wave of blocks, each looping over work tiles (Note [Flash sm90 forward schedule]), with
// kQBufs Q buffers (2: the next tile's Q loads during this one). kQReg (kBk 64 or 128): Q's
// fragments are loaded into registers once per tile, and S = Q K^T reads only K from shared memory.
// kLazy: the running max moves only when it grows by more than 8 (log2), so most key tiles skip the
// O rescale. kEarly: the next key tile's barriers are tested before the softmax, waited on if not.
// kDeferO: O is rescaled for tile t - 1 after S_t is issued (it runs meanwhile) and before P_{t-1}
// V_{t-1} (FlashAttention-3's order), not between the wait for P V and the next issue. kChain (2 Q
// buffers): the next work tile's S_0 is issued with the last P V of this one (without ping-pong
// after it, once the next Q's fragments are loaded) and runs during the epilogue. kQEarly (2 Q
// buffers): the producer loads the next work tile's Q right after this one's last K, not after the
// next one's first K (kChain needs it then). kTmaO: above.
template <int kD_, int kBk_, int kStages_, int kConsumers_, int kMinBlocks_, bool kPingPong_,
          bool kPersist_ = false, int kQBufs_ = 1, bool kQReg_ = false, bool kLazy_ = false,
          bool kEarly_ = false, bool kDeferO_ = false, bool kChain_ = false, bool kQEarly_ = false,
          bool kTmaO_ = false>
struct FwdCfg {
  static constexpr int kD = kD_, kBk = kBk_, kStages = kStages_, kConsumers = kConsumers_;
  static constexpr int kMinBlocks = kMinBlocks_, kQBufs = kQBufs_;
  static constexpr bool kPingPong = kPingPong_ && kConsumers == 2, kPersist = kPersist_;
  static constexpr bool kQReg = kQReg_ && (kBk == 64 || kBk == 128), kLazy = kLazy_;
  static constexpr bool kEarly = kEarly_, kDeferO = kDeferO_;
  static constexpr bool kChain = kChain_ && kQBufs_ == 2, kQEarly = kQEarly_ && kQBufs_ == 2;
  static constexpr int kBq = 64 * kConsumers, kThreads = 128 * (kConsumers + 1);
  static constexpr int kChunks = kD / 64;
  static constexpr int kQBytes = kBq * kD * 2;
  static constexpr int kTileBytes = kBk * kD * 2;
  static constexpr int kK = kQBufs * kQBytes;           // K stages
  static constexpr int kV = kK + kStages * kTileBytes;  // V stages
  static constexpr bool kTmaO = kTmaO_;  // O staged in its own buffer, out by TMA stores
  static constexpr int kOst = kV + kStages * kTileBytes;             // O staging
  static constexpr int kBar = kOst + (kTmaO ? kQBytes : 0);          // mbarriers
  static constexpr int kSmem = kBar + 8 * (4 + 4 * kStages) + 1024;  // + alignment slack
  static_assert(kSmem * kMinBlocks <= 232448, "shared memory");
  static_assert(kQBufs == 1 || kQBufs == 2, "Q buffers");
  // setmaxnreg: the producer keeps 24 registers; the consumers take what the block's share (the
  // launch bound's cap, a multiple of 8) leaves, at most 240.
  static constexpr int kLaunchRegs = 65536 / (kThreads * kMinBlocks) / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kSpare = (kThreads * kLaunchRegs - 128 * kProducerRegs) / (128 * kConsumers);
  static constexpr int kConsumerRegs = kSpare / 8 * 8 > 240 ? 240 : kSpare / 8 * 8;
};

// A K / V stage and the parity of its barriers' current phase, advanced tile by tile.
template <int kStages>
struct StageSlot {
  int s;
  uint32_t ph;
  __device__ void next() {
    if (++s == kStages) {
      s = 0;
      ph ^= 1u;
    }
  }
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

// The causal mask of a 64 x 64 tile on the diagonal (key j0 = the warpgroup's first row) for warp
// kW (rows 16 kW + 8 e + g): column block n is all seen for n < 2 kW + e, none for n > 2 kW + e,
// and columns 2 tq4 + b of n = 2 kW + e are seen for 2 tq4 + b <= g (kW fixed: no compares for
// the whole blocks).
template <int kW>
__device__ inline void mask_diag64(float (&s)[32], int g, int tq4) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int nd = 2 * kW + r / 2;
      if (n > nd || (n == nd && 2 * tq4 + (r & 1) > g)) s[4 * n + r] = neg_inf();
    }
}

template <bool kBf16, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    sm90_fwd_kernel(const __grid_constant__ CUtensorMap mq, const __grid_constant__ CUtensorMap mk,
                    const __grid_constant__ CUtensorMap mv, const __grid_constant__ CUtensorMap mo,
                    const FlashParams p, const FwdSched sc, bool tma_o) {
  constexpr int kD = C::kD, kBk = C::kBk, kStages = C::kStages, kChunks = C::kChunks;
  constexpr int kBq = C::kBq;
  using Slot = StageSlot<kStages>;
  extern __shared__ unsigned char smem_raw[];
  __shared__ FwdSchedSmem<C::kQBufs> ss;  // Note [Flash sm90 forward schedule]
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t bar = base + C::kBar;
  auto q_buf = [&](int qb) { return base + qb * C::kQBytes; };
  auto q_full = [&](int qb) { return bar + 8 * qb; };
  auto q_empty = [&](int qb) { return bar + 16 + 8 * qb; };
  auto k_full = [&](int s) { return bar + 32 + 8 * s; };
  auto v_full = [&](int s) { return bar + 32 + 8 * (kStages + s); };
  auto k_empty = [&](int s) { return bar + 32 + 8 * (2 * kStages + s); };
  auto v_empty = [&](int s) { return bar + 32 + 8 * (3 * kStages + s); };
  auto k_buf = [&](int s) { return base + C::kK + s * C::kTileBytes; };
  auto v_buf = [&](int s) { return base + C::kV + s * C::kTileBytes; };

  const int64_t lq = p.tq, lk = p.tk;
  const int hpk = p.hq / p.hk;
  // Key tiles of the query tile starting at row i0.
  auto tiles_of = [&](int64_t i0) {
    int64_t kend = lk;
    if (p.causal && i0 + kBq < kend) kend = i0 + kBq;
    return static_cast<int>((kend + kBk - 1) / kBk);
  };
  const int warp = threadIdx.x / kWarpThreads, lane = threadIdx.x % kWarpThreads;
  pdl_launch_dependents();  // a programmatic next kernel may start its blocks as these end

  if (threadIdx.x == 0) {
    for (int qb = 0; qb < C::kQBufs; ++qb) {
      mbar_init(q_full(qb), 1);
      mbar_init(q_empty(qb), 4 * C::kConsumers);
    }
    for (int s = 0; s < kStages; ++s) {
      mbar_init(k_full(s), 1);
      mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), 4 * C::kConsumers);  // one arrival per consumer warp
      mbar_init(v_empty(s), 4 * C::kConsumers);
    }
    mbar_init(smem_u32(&ss.full), 1);
    mbar_init(smem_u32(&ss.ask), 1);
    mbar_init_fence();
  }
  __syncthreads();

  if (warp < 4) {  // producer warpgroup
    regs_dealloc<C::kProducerRegs>();
    if (warp == 1 && lane == 0) {
      pdl_wait();  // the work counter's last kernel has ended
      fwd_sched_run(sc, ss);
    }
    if (warp == 0 && lane == 0) {
      tma_prefetch_map(&mq);
      tma_prefetch_map(&mk);
      tma_prefetch_map(&mv);
      pdl_wait();  // a programmatic launch: the previous kernel's q / k / v are visible
      int it = 0;  // key tiles loaded so far (all work tiles): stage it % kStages
      // Work tile w decoded once: {w, query tile, head, batch} (w >= sc.items: none).
      auto decode = [&](int w) {
        if (w >= sc.items) return make_int4(w, 0, 0, 0);
        int qt, bh;
        fwd_decode(sc, w, qt, bh);
        return make_int4(w, qt, bh % p.hq, bh / p.hq);
      };
      // Round rq's Q and work tile wt (in ss.q_tile; none: the consumers stop).
      auto load_q = [&](int rq, int4 wt) {
        const int qb = rq % C::kQBufs, qu = rq / C::kQBufs;
        if (qu > 0) mbar_wait(q_empty(qb), (qu - 1) & 1);
        ss.set_q_tile(rq, wt);
        if (wt.x >= sc.items) {
          mbar_arrive(q_full(qb));
          return;
        }
        mbar_arrive_expect_tx(q_full(qb), C::kQBytes);
        for (int c = 0; c < kChunks; ++c)
          tma_load_4d_once(q_buf(qb) + c * kBq * 128, &mq, q_full(qb), c * 64, wt.y * kBq, wt.z,
                           wt.w);
      };
      int4 wt = decode(fwd_item(sc, 0));
      for (int r = 0;; ++r) {
        if (wt.x >= sc.items) {
          if (!C::kQEarly || r == 0) load_q(r, wt);
          break;
        }
        const int h = wt.z, b = wt.w, hk = h / hpk, i0 = wt.y * kBq;
        const int nt = tiles_of(i0);
        for (int t = 0; t < nt; ++t, ++it) {
          const int s = it % kStages, u = it / kStages;
          if (it >= kStages) mbar_wait(k_empty(s), (u - 1) & 1);
          fwd_sched_ask(ss, t, nt);
          mbar_arrive_expect_tx(k_full(s), C::kTileBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(k_buf(s) + c * kBk * 128, &mk, k_full(s), c * 64, t * kBk, hk, b);
          // Q after the first K (a single Q buffer waits for the last epilogue); kQEarly: the next
          // work tile's Q after this one's last K (its buffer is free once the work tile before
          // this one is done).
          if (t == 0 && (!C::kQEarly || r == 0)) load_q(r, wt);
          if (C::kQEarly && t == nt - 1) load_q(r + 1, decode(fwd_sched_take(ss, r)));
          if (it >= kStages) mbar_wait(v_empty(s), (u - 1) & 1);
          mbar_arrive_expect_tx(v_full(s), C::kTileBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(v_buf(s) + c * kBk * 128, &mv, v_full(s), c * 64, t * kBk, hk, b);
        }
        wt = C::kQEarly ? ss.q_tile_of(r + 1) : decode(fwd_sched_take(ss, r));
      }
    }
  } else {
    regs_alloc<C::kConsumerRegs>();
    pdl_wait();  // nothing the previous kernel reads or writes is written before it has ended

    const int cw = warp / 4 - 1, wi = warp % 4;
    const int g = lane >> 2, tq4 = lane & 3;
    constexpr float kLog2e = 1.4426950408889634f;
    const float sl2 = p.scale * kLog2e;
    const bool staged = (reinterpret_cast<uintptr_t>(p.o) & 15) == 0 && (p.o_sr & 7) == 0 &&
                        (p.o_sh & 7) == 0 && (p.o_sb & 7) == 0;

    // Per work tile: its first row, this thread's rows (row0, row0 + 8), the warpgroup's first row,
    // the warpgroup's Q rows in shared memory, the index of its first key tile among all loaded.
    int i0 = 0, row0 = 0, wg_row = 0;
    Slot cur{0, 0};  // the stage and phase of the next key tile (counted over all work tiles)
    uint32_t q_wg = 0;
    float o[kD / 2];
    float s[kBk / 2];
#pragma unroll
    for (int i = 0; i < kBk / 2; ++i) s[i] = 0.0f;
    uint32_t pa[kBk / 16][4];
    uint32_t qa[C::kQReg ? kD / 16 : 1][4];
    float m[2] = {0.0f, 0.0f}, l[2] = {0.0f, 0.0f};

    // Descriptors are linear in the address (bits 0-13: address / 16), so the stage and k16
    // offsets are added to ones made once (with a stage counter in place of divisions).
    const uint64_t k_desc0 = make_desc_sw128(k_buf(0), 16, 1024);
    const uint64_t v_desc0 = make_desc_sw128(v_buf(0), kBk * 128, 1024);
    uint64_t q_desc = 0;
    auto issue_s = [&](const Slot& sl, float(&sx)[kBk / 2]) {
      const uint64_t kd = k_desc0 + static_cast<uint64_t>(sl.s * (C::kTileBytes >> 4));
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t off = ((kk / 4) * kBk * 128 + (kk % 4) * 32) >> 4;  // k16 step
        if constexpr (C::kQReg) {
          if constexpr (kBk == 64)
            wgmma_rs_n64<kBf16, 0>(sx, qa[kk], kd + off, kk > 0 ? 1 : 0);
          else
            wgmma_rs_n128<kBf16, 0>(sx, qa[kk], kd + off, kk > 0 ? 1 : 0);
        } else {
          const uint32_t qoff = ((kk / 4) * kBq * 128 + (kk % 4) * 32) >> 4;
          wgmma_s<kBf16, kBk>(sx, q_desc + qoff, kd + off, kk > 0 ? 1 : 0);
        }
      }
      wgmma_commit();
    };
    auto issue_pv = [&](const Slot& sl) {
      const uint64_t vd = v_desc0 + static_cast<uint64_t>(sl.s * (C::kTileBytes >> 4));
#pragma unroll
      for (int kk = 0; kk < kBk / 16; ++kk) wgmma_pv<kBf16, kD>(o, pa[kk], vd + kk * (2048 >> 4));
      wgmma_commit();
    };
    auto wait_k = [&](const Slot& sl) { mbar_wait(k_full(sl.s), sl.ph); };
    auto wait_v = [&](const Slot& sl) { mbar_wait(v_full(sl.s), sl.ph); };
    // Masks (when tile t crosses the key end or the causal diagonal) and exponentiates s in place
    // against the updated running max; returns the factors that rescale the old O rows.
    auto softmax = [&](float(&s)[kBk / 2], int t, float(&al)[2]) {
      const int j0 = t * kBk;
      if (kBk == 64 && C::kConsumers == 1 && p.causal && j0 == wg_row && j0 + kBk <= lk) {
        if constexpr (kBk == 64) {  // the diagonal tile: warp-uniform block masks
          switch (wi) {
            case 0:
              mask_diag64<0>(s, g, tq4);
              break;
            case 1:
              mask_diag64<1>(s, g, tq4);
              break;
            case 2:
              mask_diag64<2>(s, g, tq4);
              break;
            default:
              mask_diag64<3>(s, g, tq4);
          }
        }
      } else if (j0 + kBk > lk || (p.causal && j0 + kBk - 1 > wg_row)) {
        // Column n * 8 + 2 tq4 + (r & 1) of row half r / 2 is masked from lim[r / 2] on (key end;
        // causal: past the row).
        const int klim = lk - j0 < kBk ? static_cast<int>(lk - j0) : kBk;
        int lim[2];
#pragma unroll
        for (int e = 0; e < 2; ++e)
          lim[e] = (p.causal ? min(klim, row0 + 8 * e - j0 + 1) : klim) - 2 * tq4;
#pragma unroll
        for (int n = 0; n < kBk / 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r)
            if (n * 8 + (r & 1) >= lim[r / 2]) s[4 * n + r] = neg_inf();
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
        // kLazy: the running max moves only when it grows by more than 8 (log2 units), so most
        // tiles leave O alone (al = 1); P stays <= 256 and O / l use the same max (exact).
        bool keep = false;
        if constexpr (C::kLazy) {
          keep = !(mx > m[e] + 8.0f);
          if (keep) mx = m[e];
        }
        const float mu = mx == neg_inf() ? 0.0f : mx;
        al[e] = keep ? 1.0f : exp2_approx(m[e] - mu);
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
    auto pack_p = [&](const float(&s)[kBk / 2]) { acc_to_a<kBf16, kBk>(s, pa); };
    auto fence_s = [&](float(&s)[kBk / 2]) {
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
    auto release = [&](uint32_t empty_bar) {
      __syncwarp();
      if (lane == 0) mbar_arrive(empty_bar);
    };
    // Ping-pong: warpgroup cw issues its MMAs after bar.sync on barrier 2 + cw, which the other
    // warpgroup arrives on once it has issued its own (warpgroup 0 goes first). Both warpgroups
    // issue equally often per work tile, so the turns run on across tiles.
    auto turn_wait = [&]() {
      if constexpr (C::kPingPong) cw == 0 ? named_sync<2, 256>() : named_sync<3, 256>();
    };
    auto wg_sync = [&]() { cw == 0 ? named_sync<4, 128>() : named_sync<5, 128>(); };
    auto turn_pass = [&]() {
      if constexpr (C::kPingPong) cw == 0 ? named_arrive<3, 256>() : named_arrive<2, 256>();
    };

    // A work tile: its (batch, head), first row, key tiles, Q buffer and round.
    struct Tile {
      int h, b, i0, ntiles, qb, r;
    };
    auto load_tile = [&](int rr, Tile& tl) {  // waits for round rr's Q and its work tile
      mbar_wait(q_full(rr % C::kQBufs), (rr / C::kQBufs) & 1);
      const int4 qt = ss.q_tile_of(rr);  // {w, query tile, head, batch}
      if (qt.x >= sc.items) return false;
      tl = Tile{qt.z, qt.w, qt.y * kBq, tiles_of(qt.y * kBq), rr % C::kQBufs, rr};
      return true;
    };
    // What issue_s reads of tile tl's Q (landed: load_tile), descriptor or kQReg fragments.
    auto open_q = [&](const Tile& tl) {
      q_wg = q_buf(tl.qb) + cw * 64 * 128;
      q_desc = make_desc_sw128(q_wg, 16, 1024);
      if constexpr (C::kQReg) {
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk) {
          ldsm_a_sw128(q_wg, wi * 16, kk, kBq * 128, lane, qa[kk]);
        }
      }
    };
    float al[2] = {1.0f, 1.0f};
    auto rescale_o = [&]() {
      // kLazy: most tiles keep the max; the warp skips the rescale when all its rows do.
      if (!C::kLazy || __any_sync(0xffffffffu, al[0] != 1.0f || al[1] != 1.0f)) {
#pragma unroll
        for (int n = 0; n < kD / 8; ++n) {
          o[4 * n + 0] *= al[0];
          o[4 * n + 1] *= al[0];
          o[4 * n + 2] *= al[1];
          o[4 * n + 3] *= al[1];
        }
      }
    };
    // kEarly: the next iteration's K / V barriers are tested (not waited on) before the softmax,
    // so the test's latency overlaps it; a barrier found incomplete is waited on as before.
    bool rk = false, rv = false;  // K of tile cur / V of tile prev known to have landed
    auto test_next = [&]() {
      if constexpr (C::kEarly) {
        Slot nk = cur;
        nk.next();
        rk = mbar_test(k_full(nk.s), nk.ph);
        rv = mbar_test(v_full(cur.s), cur.ph);
      }
    };

    auto issue_s0 = [&](const Tile& t0) {  // S_0 of work tile t0
      open_q(t0);
      wait_k(cur);
      turn_wait();
      wgmma_fence();
      issue_s(cur, s);
      turn_pass();
    };
    if (cw == 1) turn_pass();
    Tile tl;
    load_tile(0, tl);  // every block has a first work tile (grid <= work tiles)
    if constexpr (C::kChain) issue_s0(tl);
    for (;;) {
      i0 = tl.i0;
      row0 = i0 + cw * 64 + wi * 16 + g;
      wg_row = i0 + cw * 64;
      const int ntiles = tl.ntiles, qb = tl.qb;
#pragma unroll
      for (int i = 0; i < kD / 2; ++i) o[i] = 0.0f;
      m[0] = m[1] = neg_inf();
      l[0] = l[1] = 0.0f;
      al[0] = al[1] = 1.0f;
      if constexpr (!C::kChain) issue_s0(tl);
      Slot prev = cur;  // tile t - 1
      wgmma_wait<0>();
      fence_s(s);
      release(k_empty(cur.s));
      test_next();
      softmax(s, 0, al);
      pack_p(s);
      cur.next();
      for (int t = 1; t < ntiles; ++t) {
        if (!rk) wait_k(cur);
        if (!rv) wait_v(prev);
        turn_wait();
        wgmma_fence();
        issue_s(cur, s);
        if constexpr (C::kDeferO) {  // O *= al of tile t - 1 while S_t runs, before P V adds to it
          rescale_o();
          wgmma_fence();
        }
        issue_pv(prev);
        turn_pass();
        wgmma_wait<1>();  // S_t has landed; P_{t-1} V_{t-1} may still run
        fence_s(s);
        release(k_empty(cur.s));
        test_next();
        softmax(s, t, al);
        wgmma_wait<0>();
        fence_o_pa();
        release(v_empty(prev.s));
        if constexpr (!C::kDeferO) rescale_o();
        pack_p(s);
        prev = cur;
        cur.next();
      }
      // kChain: the next work tile's S_0 goes out with this one's last P V, so it runs during
      // the epilogue (the next tile's Q is in the other buffer). After the last work tile it is
      // issued all the same (on stale K and Q, its result dropped): wgmma under a branch would
      // be serialized by ptxas.
      // Without ping-pong the last P V goes out first: the next tile's Q loads while it runs.
      constexpr bool kPvFirst = C::kChain && !C::kPingPong;
      Tile nx;
      bool more = false;
      auto next_q = [&]() {
        more = load_tile(tl.r + 1, nx);
        if (more) {
          open_q(nx);
          if (!rk) wait_k(cur);
        }
      };
      if constexpr (C::kChain && !kPvFirst) next_q();
      if (!rv) wait_v(prev);
      turn_wait();
      if constexpr (C::kDeferO) rescale_o();
      wgmma_fence();
      issue_pv(prev);
      if constexpr (kPvFirst) {
        next_q();
        wgmma_fence();  // the Q fragments
      }
      if constexpr (C::kChain) issue_s(cur, s);
      turn_pass();
      if constexpr (C::kChain)
        wgmma_wait<1>();
      else
        wgmma_wait<0>();
      fence_o_pa();
      release(v_empty(prev.s));

      // Row sums across the quad, then out = o / l and lse = (m + log2 l) ln 2. kTmaO: the
      // warpgroup stages its 64 output rows in the O buffer (once the last tile's stores have read
      // it) and one thread stores them by TMA. Else, with 16-byte aligned rows, in its (no longer
      // read) rows of the Q buffer, same swizzle, stored as 16-byte row chunks; else column pairs
      // go straight out. The Q buffer is released once every warp is done with it.
      uint16_t* out = static_cast<uint16_t*>(p.o) + p.o_row0(tl.b) + tl.h * p.o_sh;
      float* lse = static_cast<float*>(p.lse) + p.lse_row0(tl.b, tl.h);
      const bool by_tma = C::kTmaO && tma_o;
      const uint32_t sq = by_tma ? base + C::kOst : q_buf(qb);
      if (by_tma) {  // the last tile's stores have read the staging rows
        if (threadIdx.x % 128 == 0) bulk_wait_read<0>();
        wg_sync();
      }
      float inv[2], lv[2];  // 1 / l; lse, stored last (a proxy fence waits for earlier stores)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float ll = l[e];
        ll += warp_shfl_xor(ll, 1);
        ll += warp_shfl_xor(ll, 2);
        inv[e] = ll > 0.0f ? rcp_approx(ll) : 0.0f;
        lv[e] = ll > 0.0f ? (m[e] + log2_approx(ll)) * 0.6931471805599453f : neg_inf();
      }
      auto o_pair = [&](int n, int e) {
        return pack2<kBf16>(o[4 * n + 2 * e] * inv[e], o[4 * n + 2 * e + 1] * inv[e]);
      };
      if (staged || by_tma) {
        // stmatrix call c: matrix j is column chunk n = 2 c + j / 2 of row half j % 2; lanes 8 j
        // .. 8 j + 7 give its rows (rb: in the block).
        const int j = lane >> 3, rb = cw * 64 + wi * 16 + 8 * (j & 1) + (lane & 7);
#pragma unroll
        for (int c = 0; c < kD / 16; ++c) {
          const uint32_t r[4] = {o_pair(2 * c, 0), o_pair(2 * c, 1), o_pair(2 * c + 1, 0),
                                 o_pair(2 * c + 1, 1)};
          const int n = 2 * c + (j >> 1);
          stsm_x4(sq + (n / 8) * kBq * 128 + rb * 128 + (((n % 8) ^ (rb & 7)) * 16), r);
        }
      } else {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int row = row0 + 8 * e;
          if (row >= lq) continue;
          uint16_t* orow = out + row * p.o_sr;
#pragma unroll
          for (int n = 0; n < kD / 8; ++n)
            *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tq4) = o_pair(n, e);
        }
      }
      if (by_tma) {
        fence_proxy_async();  // the staged rows, for the TMA unit's reads
        wg_sync();
        if (threadIdx.x % 128 == 0) {
          for (int c = 0; c < kChunks; ++c)
            tma_store_4d(&mo, sq + c * kBq * 128 + cw * 64 * 128, c * 64, wg_row, tl.h, tl.b);
          bulk_commit();
        }
      } else if (staged) {
        wg_sync();
        constexpr int kRowChunks = kD / 8;
        const int tw = threadIdx.x % 128;
#pragma unroll
        for (int it = 0; it < 64 * kRowChunks / 128; ++it) {
          const int idx = it * 128 + tw, rr = idx / kRowChunks, c16 = idx % kRowChunks;
          const int row = wg_row + rr;
          const uint32_t a =
              sq + (c16 / 8) * kBq * 128 + (cw * 64 + rr) * 128 + (((c16 % 8) ^ (rr % 8)) * 16);
          uint4 v;
          asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                       : "r"(a)
                       : "memory");
          if (row < lq) *reinterpret_cast<uint4*>(out + row * p.o_sr + c16 * 8) = v;
        }
      }
      // The Q buffer's last generic accesses (kQReg's fragment loads; else staging) before the
      // next TMA write of the buffer: with kTmaO the fence above has ordered them.
      if (!by_tma) fence_proxy_async();
      release(q_empty(qb));
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (tq4 == 0 && row0 + 8 * e < lq) lse[row0 + 8 * e] = lv[e];
      if constexpr (!C::kChain) more = load_tile(tl.r + 1, nx);
      if (!more) break;
      tl = nx;
    }
    if constexpr (C::kChain) wgmma_wait<0>();                              // the dropped S
    if (C::kTmaO && tma_o && threadIdx.x % 128 == 0) bulk_wait_read<0>();  // before the block ends
    if (cw == 0) turn_wait();  // the other warpgroup's last arrival
  }                            // consumers
}

}  // namespace kiln::gpu::flash::sm90
