// The work-tile schedule of the persistent sm90 forward (Note [Flash sm90 forward schedule]).
#pragma once

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/sm90/sm90_ptx.cuh"

namespace kiln::gpu::flash {

// Note [Flash sm90 forward schedule]: the work tiles (query tile, batch x head) are numbered in
// groups of hg (batch, head) pairs, so the blocks running at once share a few heads' K / V in L2;
// inside a group the heaviest query tiles (causal: the last) come first. The groups have equal
// sizes near two resident waves of tiles, one group where the call has under three waves: a group
// boundary restarts the heavy tiles, and a small last group ends the call on a tail. Block k of a
// grid of G starts on tile k. With a work counter (ctr, Note [Work counter]) each block then takes
// the next tile in that order shortly before it can start it (greedy, heaviest first: the blocks
// end together whatever the tiles cost); without one (graph capture) tiles 2G - 1 - k, 2G + k, ...
// (a snake over rounds of G, heavy and light tiles alternating). A non-persistent grid has one tile
// per block (G = the tile count, no counter). In the block a scheduler thread takes the tiles (the
// counter's latency off the producer's path) and hands each to the producer through `next`: the
// producer asks for it one key tile before the current tile's last K load (fwd_sched_ask; it runs
// kStages key tiles ahead of the consumers) and takes it at that load. The producer tells the
// consumers each round's tile, decoded, with its Q (q_tile, per Q buffer). Until session 20 the
// scheduler took round r + 1's tile as soon as the producer had taken round r's, a whole work tile
// early: blocks held heavy tiles they could not start while others ran out of work, and a causal
// call ended over 12 us of blocks finishing one by one (block timelines from %globaltimer: ends at
// 57-72 us of a 72 us B16 H12 T1024 D64 call, 92% of the block slots busy; asking late, 65-67 us of
// 67, 98%). H100, interleaved passes (two before, three after), us, before -> after: causal B16 H12
// T1024 D64 73.9-74.2 -> 69.8-70.4, B8 H16 T2048 D64 167.6-168.6 -> 159.0-159.8, B2 H32 T4096 D64
// 312.1-316.2 -> 295.3-296.1, B4 H12 T2048 D64 65.3-66.5 -> 62.4-63.1, B4 H32 T4096 D128 879-885 ->
// 819-865, B2 H16 T2048 D128 71.7-71.9 -> 63.0-64.4; non-causal B16 H12 T1024 D64 unchanged
// (122.2-122.4 -> 120.7-122.4). Asking zero, two or three key tiles before the last load measured
// the same as one. Before, H100, bench/gpu_attention_shapes, three passes interleaved with
// KILN_FLASH_SM90_DYNAMIC=0 (the snake), causal bf16 forward: B16 H12 T1024 D64 81.95-82.33 ->
// 80.14-80.61 us, B4 H32 T4096 D128 898.9-934.0 -> 871.2-900.4; forward + backward 332.4-333.5 ->
// 331.8-332.3 and 3837-3848 -> 3820-3825. A list-scheduling model of the D64 tiles (3 warpgroups an
// SM sharing it) had put the snake's cost at 7%: blocks that share an SM absorb most of an
// imbalance between them. Then groups of two waves, equal in size, instead of one wave (the last
// group the remainder), three passes (us, causal forward, old -> new): B16 H12 T1024 D64 79.5-81.4
// -> 78.2-78.6, B8 H16 T2048 D64 179.7-181.9 -> 175.2-176.2, B1 H24 T2048 D64 59.1-59.7 ->
// 45.2-46.4, B4 H32 T4096 D128 866-892 -> 851-869, B2 H16 T2048 D128 81.7-83.6 -> 74.6-74.7, B1 H8
// T4096 D128 97.0-97.4 -> 74.4-75.0; non-causal unchanged (D64 B16 H12 T1024 123.9-124.9 ->
// 124.3-124.5). Whole-call groups at B16 H12 T1024 D64: 95 us (L2 misses). The producer thread (24
// registers) now spills a few words a key tile; the spills sit between its barrier waits.
// Session 19, H100 (50 MiB L2), bench/gpu_attention_shapes fwd, us. Causal groups of as many
// heads as half the L2 holds the K / V of (fewer group boundaries), three interleaved passes, two
// waves -> half the L2: D64 B16 H12 T1024 73.1-74.3 -> 71.4-72.7, B8 H16 T2048 167.4-168.0 ->
// 160.7-161.8, B2 H32 T4096 311.4-313.3 -> 298.6-301.5, B4 H12 T2048 76.9-78.0 -> 65.4-66.3; D128
// unchanged. But after a second of calls (KILN_BENCH_WARMUP_S=1, the clocks under the power cap),
// two passes: 84.0-86.2 -> 89.1-90.1, 187.1-189.6 -> 200.6-201.6, 360.5-362.4 -> 369.6-406.5, and
// only B4 H12 T2048 gains, 83.0-83.7 -> 74.4-75.7 (forward + backward 287.1-289.4 -> 277.4-280.0):
// the larger groups cost DRAM traffic, which the power cap turns into lower clocks. Kept: a causal
// call whose K / V fit in half the L2 runs as one group (there the large group costs no traffic;
// B4 H12 T2048 above). Non-causal calls (equal tiles) lose with larger groups even unsustained:
// B16 H12 T1024 D64 121.5-122.4 us with two waves, 122.6-130.0 three, 128.6-129.2 four, 183.9-184.7
// one group (50 MiB). The backward's groups (Note [Flash sm90 backward grid order]) at two and
// three times one wave: no change.
struct FwdSched {
  int nq;     // query tiles per (batch, head)
  int nbh;    // batch x heads
  int hg;     // (batch, head) pairs per group
  int items;  // nq * nbh
  int* ctr;   // [tiles handed out past the first G, blocks done], or null: the snake
};
// The query tile and (batch, head) pair of work tile w.
__device__ inline void fwd_decode(const FwdSched& sc, int w, int& qt, int& bh) {
  const int per = sc.hg * sc.nq, gi = w / per, g0 = gi * sc.hg;
  const int gs = min(sc.hg, sc.nbh - g0), in = w - gi * per;
  qt = sc.nq - 1 - in / gs;
  bh = g0 + in % gs;
}
// This block's work tile of round r (>= sc.items: none, nor in any later round). With a counter,
// called once per round in order, by one thread (after the programmatic launch's wait).
__device__ inline int fwd_item(const FwdSched& sc, int r) {
  const int g = static_cast<int>(gridDim.x), k = static_cast<int>(blockIdx.x);
  if (sc.ctr != nullptr && r > 0) return g + atomicAdd(sc.ctr, 1);
  return r * g + ((r & 1) ? g - 1 - k : k);
}
// After the block's last fwd_item: the last block to get here zeroes the counter for the next
// kernel of the stream.
__device__ inline void fwd_sched_done(const FwdSched& sc) {
  if (sc.ctr == nullptr) return;
  __threadfence();
  if (atomicAdd(sc.ctr + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(sc.ctr, 0);
    atomicExch(sc.ctr + 1, 0);
  }
}

// The block's scheduling state in shared memory.
template <int kQBufs>
struct FwdSchedSmem {
  uint64_t full, ask;  // mbarriers of `next`: filled, asked for (one arrival each)
  int next;            // the next round's work tile, from the scheduler thread
  // Per Q buffer, from the producer: its round's work tile w, decoded (query tile, head, batch),
  // so the consumers' path between two work tiles has no divisions.
  int4 q_tile[kQBufs];
  // Round r's tile in its Q buffer's slot (asm: other threads read it after a barrier).
  __device__ void set_q_tile(int r, int4 t) {
    asm volatile(
        "st.shared.v4.s32 [%0], {%1, %2, %3, %4};\n" ::"r"(sm90::smem_u32(&q_tile[r % kQBufs])),
        "r"(t.x), "r"(t.y), "r"(t.z), "r"(t.w)
        : "memory");
  }
  __device__ int4 q_tile_of(int r) {
    int4 t;
    asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(t.x), "=r"(t.y), "=r"(t.z), "=r"(t.w)
                 : "r"(sm90::smem_u32(&q_tile[r % kQBufs]))
                 : "memory");
    return t;
  }
};
// The scheduler thread: the work tile of round r = 1, 2, ... into ss.next, each once the producer
// asks for it (fwd_sched_ask); ends after the first past the last.
template <class S>
__device__ inline void fwd_sched_run(const FwdSched& sc, S& ss) {
  for (int r = 1;; ++r) {
    sm90::mbar_wait(sm90::smem_u32(&ss.ask), (r - 1) & 1);
    const int w = fwd_item(sc, r);
    *static_cast<volatile int*>(&ss.next) = w;
    sm90::mbar_arrive(sm90::smem_u32(&ss.full));
    if (w >= sc.items) break;
  }
  fwd_sched_done(sc);
}
// The producer, loading key tile t of the nt of round r: asks for round r + 1's work tile one key
// tile before its last K load (once a round; round r's was taken before).
template <class S>
__device__ inline void fwd_sched_ask(S& ss, int t, int nt) {
  if (t == max(0, nt - 2)) sm90::mbar_arrive(sm90::smem_u32(&ss.ask));
}
// The producer: the work tile of round r + 1 (asked for in round r).
template <class S>
__device__ inline int fwd_sched_take(S& ss, int r) {
  sm90::mbar_wait(sm90::smem_u32(&ss.full), r & 1);
  return *static_cast<volatile int*>(&ss.next);
}

}  // namespace kiln::gpu::flash
