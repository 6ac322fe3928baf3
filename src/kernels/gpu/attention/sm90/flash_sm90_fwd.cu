// Hopper (sm_90a) fused-attention forward, FlashAttention-3 style: a producer warp streams Q/K/V
// tiles by TMA into 128-byte-swizzled shared memory (mbarrier pipeline), consumer warpgroups run
// S = Q K^T and O += P V on wgmma, one warpgroup's softmax overlapping another's products.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "backend/gpu/vendor.h"
#include "backend/gpu/work_counter.h"
#include "kernels/gpu/attention/pdl.cuh"
#include "kernels/gpu/attention/sm90/flash_sm90.h"
#include "kernels/gpu/attention/sm90/flash_sm90_fwd_kernel.cuh"
#include "kernels/gpu/attention/sm90/sm90_tma.cuh"

namespace kiln::gpu::flash {
namespace {

using detail::FlashParams;
using namespace sm90;

std::atomic<bool> g_enabled{[] {
  const char* e = std::getenv("KILN_FLASH_SM90");
  return !(e && e[0] == '0' && e[1] == 0);
}()};

// Kernel shapes (KILN_FLASH_SM90_CFG=0..99 or sm90_set_forward_cfg picks one for tuning runs and
// tests; default kDefaultCfg*), measured in docs/notes/flash_sm90_forward.md: FwdCfg<kD, kBk,
// kStages, kConsumers, kMinBlocks, kPingPong, kPersist, kQBufs, kQReg, kLazy, kEarly, kDeferO,
// kChain, kQEarly, kTmaO>. Defaults (index 0): D64 1 consumer, 3 blocks/SM, persistent, Q in
// registers, lazy rescale, early barrier tests, deferred O rescale, chained work tiles, O by TMA;
// D128 2 consumers ping-pong, persistent, 2 stages, the same plus the early Q load. Index 1: the
// non-persistent shape of the earlier sessions; 2: the defaults of session 6; then the steps
// between; 5 (D64) and 6 (D128): the defaults of sessions 7-11 (no kTmaO). D64 index 6: the
// default's features at 2 blocks an SM and 4 stages, which small calls take (fwd_two_blocks).
using D64Cfgs =
    std::tuple<FwdCfg<64, 64, 3, 1, 3, false, true, 2, true, true, true, true, true, false, true>,
               FwdCfg<64, 64, 3, 1, 3, false>,
               FwdCfg<64, 64, 3, 1, 3, false, true, 2, true, true, true>,
               FwdCfg<64, 64, 3, 1, 3, false, true, 2, true, true, true, true>,
               FwdCfg<64, 64, 3, 1, 3, false, true, 2, true, true, true, true, true, true>,
               FwdCfg<64, 64, 3, 1, 3, false, true, 2, true, true, true, true, true>,
               FwdCfg<64, 64, 4, 1, 2, false, true, 2, true, true, true, true, true, false, true>>;
constexpr int kD64TwoBlocks = 6;
using D128Cfgs =
    std::tuple<FwdCfg<128, 128, 2, 2, 1, true, true, 2, true, true, true, true, true, true, true>,
               FwdCfg<128, 128, 3, 2, 1, true>,
               FwdCfg<128, 128, 2, 2, 1, true, true, 2, false, false, true>,
               FwdCfg<128, 128, 2, 2, 1, true, true, 2, false, false, true, true>,
               FwdCfg<128, 128, 2, 2, 1, true, true, 2, false, true, true, true, true, true>,
               FwdCfg<128, 128, 2, 2, 1, true, true, 2, true, false, true, true>,
               FwdCfg<128, 128, 2, 2, 1, true, true, 2, true, true, true, true, true, true>>;
constexpr int kDefaultCfgD64 = 0, kDefaultCfgD128 = 0;

// Note [Flash sm90 forward PDL]: the forward is a programmatic dependent launch (pdl.cuh) and lets
// the next one start early (as does the backward's dq cast, so a training step's next forward
// starts as the cast ends): the producer waits (pdl_wait) before its first load, the consumers
// before anything else. H100, three interleaved passes of bench/run_attention_bench.sh's program,
// on / off: B16 H12 T1024 D64 forward 313.5-315.5 / 307.0-313.3 TFLOP/s, forward+backward
// 266.0-266.8 / 261.0-265.7; B4 H32 T4096 D128 unchanged (603-609, 481-487). In the kernel timeline
// (KILN_BENCH_TRACE=1) the head-dim-64 training step went from 337.4 to 335.7 us. The pre-pass
// launched this way too (waiting at its start) is worse: its blocks fit beside the forward's and
// start 82 us early, the forward slows (84.7 -> 86.7 us) and the step goes from 337.5 to 340.6 us
// (forward+backward 266.0-266.4 -> 264.1-264.6 TFLOP/s; session 8 saw the same at head dim 128).
// KILN_FLASH_SM90_FWD_PDL=0 turns it off.
bool fwd_pdl() {
  static const bool on = pdl_env_on("KILN_FLASH_SM90_FWD_PDL");
  return on;
}

// Work counter (Note [Flash sm90 forward schedule]) unless KILN_FLASH_SM90_DYNAMIC=0.
std::atomic<bool> g_dynamic{pdl_env_on("KILN_FLASH_SM90_DYNAMIC")};

std::atomic<int> g_cfg{[] {
  const char* e = std::getenv("KILN_FLASH_SM90_CFG");
  if (!e || e[0] < '0' || e[0] > '9') return -1;
  if (e[1] == 0) return e[0] - '0';
  return e[1] >= '0' && e[1] <= '9' && e[2] == 0 ? 10 * (e[0] - '0') + (e[1] - '0') : -1;
}()};

// Blocks of one kernel shape resident on one SM of `device` times its SM count (cached).
template <class C>
int resident_blocks(const void* kernel, int device) {
  static std::atomic<int> per_sm{0};
  int n = per_sm.load(std::memory_order_relaxed);
  if (n == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, C::kThreads, C::kSmem) !=
            cudaSuccess ||
        n < 1)
      n = 1;
    per_sm.store(n, std::memory_order_relaxed);
  }
  return n * sm_count(device);
}

template <bool kBf16, class C>
bool launch(const FlashParams& p, int device, cudaStream_t stream) {
  CUtensorMap mq, mk, mv, mo;
  if (!make_map(&mq, p.q, kBf16, p.d, p.tq, p.hq, p.b, p.q_sr, p.q_sh, p.q_sb, C::kBq) ||
      !make_map(&mk, p.k, kBf16, p.d, p.tk, p.hk, p.b, p.k_sr, p.k_sh, p.k_sb, C::kBk) ||
      !make_map(&mv, p.v, kBf16, p.d, p.tk, p.hk, p.b, p.v_sr, p.v_sh, p.v_sb, C::kBk))
    return false;
  // O by TMA stores (kTmaO) where its layout allows a tensor map, else from the threads.
  const bool tma_o =
      C::kTmaO && make_map(&mo, p.o, kBf16, p.d, p.tq, p.hq, p.b, p.o_sr, p.o_sh, p.o_sb, 64);
  if (!tma_o) mo = mq;  // unused
  constexpr auto kernel = &sm90_fwd_kernel<kBf16, C>;
  if (!smem_limit_set<kernel>(C::kSmem)) return false;
  // Work tiles in equal groups of about two resident waves; a causal call whose K / V fit in half
  // the L2 in one group (Note [Flash sm90 forward schedule]).
  const int64_t nq = (p.tq + C::kBq - 1) / C::kBq, nbh = p.hq * p.b, items = nq * nbh;
  if (items > INT_MAX / 2) return false;
  const int resident = resident_blocks<C>(reinterpret_cast<const void*>(kernel), device);
  const int64_t wave = std::max<int64_t>(1, (resident + nq - 1) / nq);  // heads a wave
  int64_t groups = std::max<int64_t>(1, (nbh + wave) / (2 * wave));
  if (p.causal && int64_t{p.b} * p.hk * p.tk * p.d * 4 <= l2_bytes(device) / 2) groups = 1;
  FwdSched sc{static_cast<int>(nq), static_cast<int>(nbh),
              static_cast<int>((nbh + groups - 1) / groups), static_cast<int>(items), nullptr};
  const int64_t grid = C::kPersist ? std::min<int64_t>(items, resident) : items;
  sc.ctr = grid < items && g_dynamic.load(std::memory_order_relaxed) ? work_counter(device, stream)
                                                                     : nullptr;
  // A programmatic dependent launch (pdl.cuh, Note [Flash sm90 forward PDL]): the blocks start as
  // the previous kernel's blocks end and wait for it before their first load or store. A launch
  // error stays pending for the caller's check, as with <<< >>>.
  const PdlConfig c(dim3(static_cast<unsigned>(grid)), dim3(C::kThreads), C::kSmem, stream,
                    fwd_pdl());
  pdl_launch(c, kernel, mq, mk, mv, mo, p, sc, tma_o);
  return true;
}

// Note [Flash sm90 forward small calls]: a head-dim-64 call with few work tiles runs faster at two
// blocks an SM (index kD64TwoBlocks: each warpgroup shares its SM with one other, not two) than at
// the default's three: causal calls up to one and a half waves of the default's blocks (the
// heaviest tiles, which bound such a call, run sooner), non-causal ones (equal tiles) when two
// blocks an SM need no more waves than three. Session 20 (the late tile requests of Note [Flash
// sm90 forward schedule]; H100, 132 SMs: 396 blocks at three an SM; bench/gpu_attention_shapes,
// three interleaved passes, us, three blocks / two, work tiles in brackets): causal B1 H4 T1024
// (64) 11.6-11.8 / 11.7-11.8, B1 H12 T1024 (192) 13.5-13.9 / 12.9-13.3, B1 H8 T2048 (256)
// 23.8-24.4 / 22.0-22.4, B2 H8 T1024 (256) 14.6-15.4 / 13.4-13.7, B2 H12 T1536 (576) 23.3-23.5 /
// 22.7-23.0; B4 H12 T1024 (768) 20.7-21.0 / 22.4-22.6, B1 H12 T4096 (768) 60.5-61.3 / 65.3-65.7,
// B1 H24 T2048 (768) 33.9-34.5 / 35.8-36.6, B1 H6 T8192 (768) 114.6-115.6 / 124.6-128.0, B1 H16
// T8192 (2048) 284.2-284.4 / 302.0-302.5. Until then (tiles requested a whole work tile early)
// causal calls up to two waves took two blocks an SM: B1 H12 T4096 85.7 -> 68.5, B1 H24 T2048
// 41.9 -> 38.0, B4 H12 T1024 24.5 -> 23.2, B16 H12 T1024 (3072) 72.1 -> 77.0 (session 18).
// Non-causal (session 18; two passes in session 20 agree): B2 H16 T1024 (512) 34.0 -> 25.8 (27.7-
// 27.9 / 25.4-25.7), B1 H16 T2048 (512) 61.8 -> 43.6; B1 H24 T1024 (384: one wave against two)
// 19.8 -> 24.9, B3 H16 T1024 (768) 34.9 -> 36.5 (34.2-34.3 / 36.1 and an outlier of 71.5), B4 H8
// T2048 (1024) 77.7 -> 82.8.
bool fwd_two_blocks(int64_t items, bool causal, int64_t res3, int64_t res2) {
  if (causal) return 2 * items <= 3 * res3;
  return (items + res2 - 1) / res2 <= (items + res3 - 1) / res3;
}

// The D64Cfgs index of a call with the default shapes.
template <bool kBf16>
int d64_default_cfg(const FlashParams& p, int device) {
  using C3 = std::tuple_element_t<kDefaultCfgD64, D64Cfgs>;
  using C2 = std::tuple_element_t<kD64TwoBlocks, D64Cfgs>;
  constexpr auto k3 = &sm90_fwd_kernel<kBf16, C3>;
  constexpr auto k2 = &sm90_fwd_kernel<kBf16, C2>;
  if (!smem_limit_set<k3>(C3::kSmem) || !smem_limit_set<k2>(C2::kSmem)) return kDefaultCfgD64;
  const int64_t items = (p.tq + C3::kBq - 1) / C3::kBq * p.hq * p.b;
  const int64_t res3 = resident_blocks<C3>(reinterpret_cast<const void*>(k3), device);
  const int64_t res2 = resident_blocks<C2>(reinterpret_cast<const void*>(k2), device);
  return fwd_two_blocks(items, p.causal, res3, res2) ? kD64TwoBlocks : kDefaultCfgD64;
}

template <bool kBf16, class Cfgs, int kDefault>
bool launch_cfg(int cfg, const FlashParams& p, int device, cudaStream_t stream) {
  constexpr int n = static_cast<int>(std::tuple_size_v<Cfgs>);
  if (cfg < 0 || cfg >= n) cfg = kDefault;
  bool ok = false;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((static_cast<int>(I) == cfg
          ? (ok = launch<kBf16, std::tuple_element_t<I, Cfgs>>(p, device, stream), 0)
          : 0),
     ...);
  }
  (std::make_index_sequence<std::tuple_size_v<Cfgs>>{});
  return ok;
}

}  // namespace

void sm90_set_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

bool sm90_enabled() { return g_enabled.load(std::memory_order_relaxed); }

// Forces forward kernel shape `cfg` (index into D64Cfgs / D128Cfgs, bfloat16 only; -1: the
// defaults), as KILN_FLASH_SM90_CFG does, and turns the work counter on or off, so tests cover
// every shape and both schedules. Not in flash_sm90.h: tests declare them themselves.
void sm90_set_forward_cfg(int cfg) { g_cfg.store(cfg, std::memory_order_relaxed); }
void sm90_set_forward_dynamic(bool on) { g_dynamic.store(on, std::memory_order_relaxed); }
// The D64Cfgs index a bfloat16 call of this shape takes with the default shapes (tests).
int sm90_forward_default_cfg64(int64_t b, int64_t hq, int64_t tq, bool causal, int device) {
  detail::FlashParams p{};
  p.b = static_cast<int>(b);
  p.hq = static_cast<int>(hq);
  p.tq = tq;
  p.causal = causal;
  return d64_default_cfg<true>(p, device);
}

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
  const int c = g_cfg.load(std::memory_order_relaxed);
  if (p.d == 64) {
    const int c64 = c >= 0 ? c
                    : bf16 ? d64_default_cfg<true>(p, device)
                           : d64_default_cfg<false>(p, device);
    return bf16 ? launch_cfg<true, D64Cfgs, kDefaultCfgD64>(c64, p, device, s)
                : launch_cfg<false, D64Cfgs, kDefaultCfgD64>(c64, p, device, s);
  }
  return bf16 ? launch_cfg<true, D128Cfgs, kDefaultCfgD128>(c, p, device, s)
              : launch_cfg<false, D128Cfgs, kDefaultCfgD128>(c, p, device, s);
}

}  // namespace kiln::gpu::flash
