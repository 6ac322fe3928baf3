// The sm90 backward's kernel shapes (BwdCfg) and small device helpers, with the Notes on what
// was measured for them (flash_sm90_bwd.cu holds the kernel).
#pragma once

#include <cstdint>

#include "kernels/gpu/attention/sm90/sm90_ptx.cuh"

namespace kiln::gpu::flash::sm90 {

// Note [Flash sm90 backward order]: since session 6 the products run in order 2 by default (BwdCfg
// kOrder): S^T, dP^T | P^T, dS^T | dQ, dV, dK, and dQ is staged while dV and dK still run (the
// stage of tile t's Q / dO is released in tile t + 1, after its S^T, as dK reads Q; at head dim
// 128 tile t + 1 also waits for tile t's dK / dV before issuing S^T / dP^T, else the registers in
// flight are more than ptxas keeps in the wgmma pipeline: C7512 serialization). Measured on an
// H100 (ncu, main kernel, us; same runs): head dim 128 (B4 H32 T4096) order 0 3010, order 1 (dV
// issued before dS^T is made) 2820, order 2 2650; three Q / dO stages with order 2 2680, two dS^T
// tiles (no barrier before writing the next) 2690. Head dim 64 (B16 H12 T1024): order 0 237,
// order 1 240, order 2 233, same with 3 stages or 2 dS^T tiles 231-234. Descriptors built once and
// advanced by adds (desc_add) instead of rebuilt per wgmma: head dim 128 2650 -> 2520 (cuDNN's
// bprop 2510 on the same GPU model), head dim 64 ~229. The grid order (Note [Flash sm90 backward
// grid order]): 246 -> 237 us at head dim 64, 3020 -> 3010 at 128. dK / dV through shared memory
// and TMA stores (whole lines; the column-pair stores from registers wrote half sectors and held
// the SM at each block's end) instead of st.global from registers: head dim 64 227 -> 208 us,
// head dim 128 2640 -> 2510-2540 (same run).
//
// Tried in session 7 and not kept (H100, B16 H12 T1024 D64 / B4 H32 T4096 D128 causal forward +
// backward TFLOP/s, three interleaved passes against this kernel; ncu main-kernel times): (1) no
// zeroed dq accumulator: per (query tile, warpgroup) claim words, the first writer TMA-stores its
// dQ share and releases the word once the store completes, later writers wait for it and add; the
// pre-pass drops from 33 to 22.5 us at D64 (its zeroing). Issued from a writer warp of the
// producer warpgroup (mbarrier hand-off): 251-253 / 475-480 against 252-254 / 471-474 (the
// hand-off alone, claims off, costs 3-4% at D64); issued by the consumer leader: the claim code
// in the loop changes ptxas's schedule (HGMMA issue spread, 615 -> 797 instructions a tile), 242-
// 244 / 435-453 even with claims off. (2) The pre-pass inside this kernel (the producer warpgroup
// of the first block to claim a tile fills its l2 / dl rows and zeroes its dq rows; others wait):
// main kernel 210 -> 290 us at D64 (a state round trip per tile before each l2 / dl copy, the
// 24-register pre-pass code spills), 222 / 420-433. (3) ptxas waits for dP^T before making P^T
// and then makes P^T and dS^T in one pass; forcing P^T above that wait (a branch on its packed
// words) so its exponentials overlap dP^T: main kernel 207 -> 218 us (D64), 2.45 -> 2.66 ms
// (D128), 247-249 / 454-458 against 255-256 / 470-480.
//
// Tried in session 8 and not kept (H100, ncu main-kernel times against this kernel in the same
// device call): (4) persistent blocks (one wave; work items from an atomic counter the pre-pass
// zeroed; a K / V "empty" barrier so the next item's K / V and first Q / dO tiles load while dK /
// dV are staged in the warpgroup's dQ boxes plus 32 KiB more and stored): D128 2.49-2.54 ms
// against 2.45-2.48 (4.42M against 4.30M active SM cycles; the same code launched one block per
// item also 4.46M), D64 unchanged; this kernel's SMs sit idle between blocks for only 1.4% of the
// cycles. (5) dl made here instead of by the pre-pass (the producer loads each tile's O, idle
// producer warps sum rows of dO O into the stage): pre-pass 181 -> 93 us (D128), 33 -> 19 us
// (D64), but the main kernel 2.48 -> 2.89 ms and 208 -> 235 us at best (lane-per-row sums,
// waited right before dS^T); CUDA-core row sums redone by every key tile cost more than the
// DRAM pass they save.
//
// Session 20, block timelines (a temporary build wrote %globaltimer and %smid at each block's start
// and end, the 20th of a run of forward + backward calls, H100): B4 H32 T4096 D128 causal, main
// kernel 2496 us, the SMs' block slots busy 98.4% of it; a block of n query tiles took about 4.7 +
// 2.24 n us (9.2 at n = 2, 134.8 at n = 58), the SMs waited 0.64 us between blocks (20 us an SM)
// and ended from 2434 to 2496 us. So each block's fixed cost (K / V in, dK / dV out, the pipeline's
// fill and drain) is about 6% of the kernel, the most a persistent kernel could hide ((4) above
// lost up to 2% at head dim 128). B16 H12 T1024 D64 causal: 194 us, 93.7% busy, ends from 179 to
// 194 us (the last group's 128 blocks, about one wave, start together, 5-26 us long); a
// list-scheduling model puts the end 1.5% sooner with the last two groups' blocks ordered as one
// group (longest first). Measured so (forward + backward, us, three interleaved passes, merged
// against not): B16 H12 T1024 D64 causal 310.7-313.8 against 313.2-315.5, B8 H16 T2048 D64
// 651.8-654.0 against 652.2-657.1, B4 H16 T1024 D64 non-causal 169.8-171.6 against 167.6-173.1, B4
// H32 T4096 D128 3732-3765 against 3737-3741, B2 H16 T2048 D128 264.5-268.1 against 267.9-274.5:
// within 1%, not kept.
constexpr int kBq = 64;
constexpr int kTile = 64 * 64 * 2;  // one 64-row x 64-column 16-bit box (8 KiB)
constexpr int kRowBytes = kBq * 4;  // kBq floats

// One kernel shape: kC consumer warpgroups of 64 keys (kBk = 64 kC keys a block, sharing each
// Q / dO tile; with kC = 2 each warpgroup computes half of dQ's columns over all kBk keys),
// kStages Q / dO buffers, kMinBlocks blocks per SM.
template <int kD_, int kC_, int kStages_, int kMinBlocks_, int kOrder_ = 0, bool kLate_ = false,
          int kDqBufs_ = 1, int kAReg_ = 0>
struct BwdCfg {
  static constexpr int kD = kD_, kC = kC_, kStages = kStages_, kMinBlocks = kMinBlocks_;
  // kAReg (head dim 64): S^T = K Q^T (bit 0) and dP^T = V dO^T (bit 1) read K / V as A fragments
  // loaded into registers once, not from shared memory.
  static constexpr int kAReg = kAReg_;
  static_assert(kAReg == 0 || kD == 64, "A fragments in registers at head dim 64 only");
  // kLate: tile t's dQ reduce-add (with its proxy fence and warpgroup barrier) is issued after
  // tile t + 1's S^T / dP^T, so the fence's wait for the staging stores runs under those products;
  // kDqBufs 2: two dQ staging buffers, so the next staging need not wait for that reduce-add.
  static constexpr bool kLate = kLate_;
  static constexpr int kDqBufs = kDqBufs_;
  // Product order: 0 S^T, dP^T | dV, dK, dQ, all done before dQ is staged; 1 S^T, dP^T, dV (while
  // dS^T is made) | dQ, dK; 2 S^T, dP^T | dQ, dV, dK; in 1 and 2 dQ is staged while dK (and dV)
  // run, and tile t's Q / dO stage is released in tile t + 1 (after its S^T).
  static constexpr int kOrder = kOrder_;
  static constexpr int kDqBytes = kBq * kD * 4;
  static constexpr int kBoxF = 32;  // columns (floats) of one 128-byte-wide dQ staging box
  static constexpr int kBk = 64 * kC, kThreads = 128 * (kC + 1);
  static constexpr int kBoxes = kD / 64;       // 64-column boxes of a row
  static constexpr int kRows64 = 64 * kD * 2;  // 64 rows of K / V / Q / dO (kBoxes boxes)
  static constexpr int kKv = kBk * kD * 2;     // one K or V tile
  static constexpr int kSk = 0, kSv = kKv, kSq = 2 * kKv;
  static constexpr int kSdo = kSq + kStages * kRows64;
  static constexpr int kSds = kSdo + kStages * kRows64;  // dS^T [kBk keys][kBq queries]
  // dQ staging: [kD / 32 column boxes][kBq rows][32 floats], 128-byte swizzle
  static constexpr int kSdq = kSds + kBk * kBq * 2;
  static constexpr int kSl = kSdq + kDqBufs * kDqBytes;  // per stage: l2 [kBq], then dl [kBq]
  static constexpr int kBar = kSl + kStages * 2 * kRowBytes;
  static constexpr int kSmem = kBar + 8 * (1 + 2 * kStages) + 1024;
  static_assert(kSmem * kMinBlocks <= 232448, "shared memory");
  static constexpr int kLaunchRegs = 65536 / (kThreads * kMinBlocks) / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kSpare = (kThreads * kLaunchRegs - 128 * kProducerRegs) / (128 * kC);
  static constexpr int kConsumerRegs = kSpare / 8 * 8 > 240 ? 240 : kSpare / 8 * 8;
  static constexpr int kDqN = kD / kC;                // dQ columns per warpgroup
  static constexpr int kDqW = kDqN < 64 ? kDqN : 64;  // columns of one dQ product
  static_assert(kD == 64 || kD == 128, "head dim");
  static_assert(kC <= kStages, "dK / dV leave through the Q / dO stages");
  static_assert(kOrder == 0 || kStages >= 2, "orders 1, 2 release a stage one tile late");
  static_assert(!kLate || kOrder != 0, "kLate releases a stage in the next tile");
  static_assert(kDqBufs == 1 || (kDqBufs == 2 && kLate), "dQ staging buffers");
};

// *a = v when pred (a predicate in the asm, no branch).
__device__ inline void st_u32_if(bool pred, void* a, uint32_t v) {
  asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %2, 0;\n@q st.global.u32 [%0], %1;\n}\n" ::"l"(a),
               "r"(v), "r"(static_cast<int>(pred))
               : "memory");
}

// The descriptor make_desc_sw128(addr + bytes, ...) from d = make_desc_sw128(addr, ...): the
// start-address field (addr >> 4, bits 0-13) never carries into the fields above it, as
// shared-memory addresses are below 2^18. (A plain add. Tried and slower at head dim 128, ncu on
// an H100, same run: the add on the low word in inline asm, S^T / dP^T without clearing their
// registers first ("=f" outputs), a mask-free copy of the P^T code for tiles off the edges, the
// warp index made uniform by a shuffle: 2.62-2.75 ms against 2.52 for none of them; head dim 64
// within 1%.)
__device__ inline uint64_t desc_add(uint64_t d, uint32_t bytes) { return d + (bytes >> 4); }
// Note [Flash sm90 backward L2]: ncu of the head-dim-64 default (H100, B16 H12 T1024 causal, main
// kernel 199 us, session 14): L2 throughput 88.9% of peak, tensor pipe 37%, issue slots 34%, 0.50
// eligible warps a scheduler; the consumers' largest stall is the wait for the block's K / V at its
// start (10% of the samples). Yet L2 traffic does not bound it: with half the dQ reduce-adds left
// out the step took 301.8-304.2 us against 299.8-302.8, and with the Q / dO loads after the first
// three tiles left out as well 297.9-300.7 (bench/gpu_attention_shapes fwdbwd, wrong results, 3
// passes, on an H100 where this step runs 300 us; on others the same binary runs 326-330, the
// main kernel 198-204 us against 170, while PyTorch's kernels and this forward time the same on
// both). Shared-memory savings buy little too: K and V as register A fragments (kAReg, shape 8,
// the S^T / dP^T products read only Q / dO from shared memory), 3 interleaved passes against shape
// 5 (us): B16 H12 T1024 D64 causal 326.7-328.5 against 327.4-329.3 (300.0-302.1 against
// 308.6-310.2 on the faster H100), B8 H16 T2048 causal 673.8-677.1 against 675.2-676.8, B1 H24
// T2048 causal 146.4-147.4 against 150.1-152.3, B4 H16 T1024 non-causal 173.2-174.7 against
// 176.5-180.6; K alone (shape 7) in between. Producer and scheduler barrier waits with a
// suspend-time hint (try_wait sleeps until the phase completes; the plain loops were 30% of the
// forward's executed warp instructions): no change, forward 77.2-78.8 / 77.8-78.5 (all waits)
// against 77.0-78.3 us, forward + backward 328.0-328.7 / 326.4-328.4 against 325.4-327.2, and
// sustained (KILN_BENCH_WARMUP_S=1) forward 282.0-294.0 / 276.9-282.4 against 288.2-293.3 TFLOP/s.
// Session 15, the same half of the reduce-adds left out on an H100 of the slower kind (forward +
// backward, us, 3 interleaved passes): B16 H12 T1024 D64 300.6-310.4 against 327.7-330.0, B8 H16
// T2048 D64 633.5-637.2 against 674.7-678.6, B4 H32 T4096 D128 3709-3745 against 3821-3883. There
// the dQ reduce-adds bound the kernel (on the faster kind, above, they do not). Two dQ staging
// buffers (shape 6) change nothing (327.5-329.2), nor does the older two-warpgroup shape 4, which
// halves them (347.4-348.8: order 0, no kLate / kAReg); see the next Note.
//
// Note [Flash sm90 backward two warpgroups]: at head dim 64 the default (shape 12, session 15) is
// a block of two consumer warpgroups of 64 keys sharing each Q / dO tile (kC 2, one block an SM),
// each making half of dQ's columns over the block's 128 keys, so one reduce-add covers 128 keys
// (half the reduce-adds of one warpgroup a block, 2 blocks an SM, shape 8). H100 of the slower
// kind, forward + backward us, 3 interleaved passes, shapes 8 / 10 / 12 (10: three stages; 11,
// two dQ staging buffers, lost 1-3%): B16 H12 T1024 causal 328.0-329.1 / 320.7-322.0 / 318.7-321.3,
// B8 H16 T2048 causal 674.2-679.2 / 663.0-672.1 / 658.1-669.4, B1 H24 T2048 causal 144.9-150.1 /
// 146.4-150.3 / 144.7-148.3, B4 H16 T1024 non-causal 174.4-175.4 / 169.7-171.4 / 167.2-172.7, B2
// H8 T4096 causal 323.7-326.3 / 308.7-312.5 / 311.0-313.2. Not measured on the faster kind, where
// the reduce-adds do not bound shape 8.
//
// Session 16, tried and not kept: clusters of two blocks (adjacent 128-key blocks of one (batch,
// head)) summing dQ before one reduce-add per 256 keys. Each block kept half of dQ's columns: its
// other warpgroup sent its half to the peer by a bulk copy into the peer's shared memory
// (cp.async.bulk shared::cluster, completing on the peer's mbarrier), and the receiving warpgroup
// added it before its reduce-add; rank 0 walked the query tiles both blocks see first and its own
// causal ones after. Correct (the shape tests), but slower: forward + backward us, 3 interleaved
// passes against shapes 12 / 6, B16 H12 T1024 D64 causal 393-397 against 320-323, B4 H16 T1024 D64
// non-causal 208-214 against 170-175, B4 H32 T4096 D128 causal 4405-4572 against 3718-3811. The
// same kernel in clusters with the pairing off took 348-351 / 180 us: cluster launches alone cost
// more than the saved reduce-adds. A first version with cluster-scope release / acquire per thread
// (remote mbarrier arrives, ld.shared::cluster) compiled to a GPU-wide MEMBAR per arrive and an L1
// invalidation per wait, and ran 551 us.
//
// Session 17, ncu source counters (H100): each st.shared.v2.f32 of stage_dq takes 4 wavefronts
// against 2 (rows r and r ^ 1 of the 128-byte swizzle share a 32-byte bank group, and a
// half-warp writes rows g = 0..3), 8.6% of the kernel's shared-memory wavefronts at head dim 128.
// Not worth a fix: with the staging stores left out altogether (timing only, 3 interleaved
// passes, forward + backward us) B16 H12 T1024 D64 causal ran 312.6-313.1 against 311.7-314.6,
// B4 H32 T4096 D128 causal 3767-3844 against 3822-3904.

}  // namespace kiln::gpu::flash::sm90
