// GPU tests of the Hopper attention kernels (src/kernels/gpu/attention/sm90/): forward output /
// log-sum-exp and backward gradients against the float64 CPU kernel on small shapes and against the
// sm_80 tensor-core kernels (flash_mma) on large ones; causal / not, odd lengths, tq != tk, GQA,
// q/k/v as strided views of one packed tensor. Skip without a compute-capability 9.0 GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/ops/determinism.h"

namespace kiln::gpu::flash {
// Defined only when the sm90 kernels are built (weak: null elsewhere).
__attribute__((weak)) void sm90_set_enabled(bool on);
__attribute__((weak)) void sm90_set_backward_enabled(bool on);
__attribute__((weak)) void sm90_set_backward128_enabled(bool on);
}  // namespace kiln::gpu::flash

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

const Device kGpu(kCUDA, 0);
const Device kCpuDev(kCPU);

// Empty when the sm90 forward can run here, else why not.
std::string skip_reason() {
  if (!cuda::is_available()) return "no GPU";
  if (gpu::flash::sm90_set_enabled == nullptr) return "kiln built without the sm90 kernels";
  const auto cc = cuda::get_device_capability(0);
  if (cc.first != 9 || cc.second != 0)
    return "device 0 has compute capability " + std::to_string(cc.first) + "." +
           std::to_string(cc.second) + ", not 9.0";
  return "";
}
#define KILN_NEED_SM90()                            \
  do {                                              \
    const std::string why = skip_reason();          \
    if (!why.empty()) GTEST_SKIP() << why;          \
    gpu::flash::sm90_set_enabled(true);             \
    gpu::flash::sm90_set_backward_enabled(true);    \
    gpu::flash::sm90_set_backward128_enabled(true); \
  } while (0)

Tensor rnd(IntArrayRef s, uint64_t seed) {
  manual_seed(seed);
  return randn(s, TensorOptions(kFloat64));
}
Tensor cpu64(const Tensor& t) { return t.detach().to(kCpuDev).to(kFloat64); }
double rel(const Tensor& a, const Tensor& b) {
  Tensor d = cpu64(a) - cpu64(b);
  const double nb = cpu64(b).pow(2).sum().item<double>();
  return std::sqrt(d.pow(2).sum().item<double>() / (nb > 0 ? nb : 1.0));
}
// Largest |a - b| over the entries where b is finite; false when a and b disagree on which
// entries are finite.
bool lse_close(const Tensor& a, const Tensor& b, double tol, double* worst) {
  Tensor x = cpu64(a), y = cpu64(b), fin = kiln::isfinite(y);
  if (!(kiln::isfinite(x) == fin).all().item<bool>()) return false;
  *worst = (kiln::where(fin, x, Scalar(0.0)) - kiln::where(fin, y, Scalar(0.0)))
               .abs()
               .max()
               .item<double>();
  return *worst < tol;
}

struct Case {
  int64_t b, hq, hk, tq, tk;
  bool causal;
};
std::string name(const Case& c, int64_t d, DType dt) {
  return std::string(dtype_name(dt)) + " b" + std::to_string(c.b) + " hq" + std::to_string(c.hq) +
         " hk" + std::to_string(c.hk) + " tq" + std::to_string(c.tq) + " tk" +
         std::to_string(c.tk) + " d" + std::to_string(d) + (c.causal ? " causal" : "");
}

// Output and lse of the fused op for GPU tensors q, k, v.
std::tuple<Tensor, Tensor> fused(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  return F::_scaled_dot_product_flash_attention(q, k, v, {}, 0.0, causal, std::nullopt,
                                                q.size(1) != k.size(1));
}

TEST(FlashAttentionSm90, ForwardMatchesFloat64) {
  KILN_NEED_SM90();
  const Case cases[] = {
      {2, 3, 3, 1, 1, false},      {1, 2, 2, 17, 17, true},     {2, 2, 1, 129, 129, true},
      {1, 2, 2, 129, 77, false},   {1, 2, 2, 77, 200, true},    {1, 2, 2, 200, 77, true},
      {1, 1, 1, 1000, 1000, true}, {2, 4, 2, 300, 1000, false}, {1, 2, 2, 1, 129, false},
      {3, 2, 2, 256, 256, true},
  };
  uint64_t seed = 1;
  for (DType dt : {kBFloat16, kFloat16})
    for (int64_t d : {64, 128})
      for (const Case& c : cases) {
        seed += 10;
        Tensor q = rnd({c.b, c.hq, c.tq, d}, seed), k = rnd({c.b, c.hk, c.tk, d}, seed + 1),
               v = rnd({c.b, c.hk, c.tk, d}, seed + 2);
        auto [o, lse] = fused(q.to(kGpu, dt), k.to(kGpu, dt), v.to(kGpu, dt), c.causal);
        const std::string what = name(c, d, dt);
        EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
        // Reference: float64 CPU kernel on the dtype-rounded inputs.
        auto [ro, rl] =
            fused(q.to(dt).to(kFloat64), k.to(dt).to(kFloat64), v.to(dt).to(kFloat64), c.causal);
        EXPECT_TRUE(kiln::isfinite(cpu64(o)).all().item<bool>()) << what;
        EXPECT_LT(rel(o, ro), dt == kBFloat16 ? 1.2e-2 : 3e-3) << what;
        double worst = 0.0;
        EXPECT_TRUE(lse_close(lse, rl, 2e-3, &worst)) << what << " lse off by " << worst;
      }
}

// q, k, v as [B, H, T, D] views of one [B, T, 3, H, D] tensor (GPT-2's layout), the output
// compared with the same call on contiguous copies through the float64 CPU kernel.
TEST(FlashAttentionSm90, StridedPackedQkv) {
  KILN_NEED_SM90();
  for (int64_t d : {64, 128})
    for (bool causal : {true, false}) {
      const int64_t b = 2, t = 333, h = 3;
      Tensor qkv = rnd({b, t, 3, h, d}, 50 + d).to(kGpu, kBFloat16);
      Tensor q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2),
             v = qkv.select(2, 2).transpose(1, 2);
      auto [o, lse] = fused(q, k, v, causal);
      const std::string what = "packed d" + std::to_string(d) + (causal ? " causal" : "");
      EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
      auto [ro, rl] =
          fused(cpu64(q).contiguous(), cpu64(k).contiguous(), cpu64(v).contiguous(), causal);
      EXPECT_LT(rel(o, ro), 1.2e-2) << what;
      double worst = 0.0;
      EXPECT_TRUE(lse_close(lse, rl, 2e-3, &worst)) << what << " lse off by " << worst;
    }
}

// The sm90 forward's output and lse against flash_mma's on the same bf16 inputs (seeds seed ..
// seed + 2; both round P to bf16 before P V, so they differ by a few bf16 roundings); `tag` ends
// the failure messages.
void expect_forward_matches_mma(const Case& c, int64_t d, uint64_t seed, const std::string& tag) {
  Tensor q = rnd({c.b, c.hq, c.tq, d}, seed).to(kGpu, kBFloat16),
         k = rnd({c.b, c.hk, c.tk, d}, seed + 1).to(kGpu, kBFloat16),
         v = rnd({c.b, c.hk, c.tk, d}, seed + 2).to(kGpu, kBFloat16);
  const std::string what = name(c, d, kBFloat16) + tag;
  auto [o, lse] = fused(q, k, v, c.causal);
  EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
  gpu::flash::sm90_set_enabled(false);
  auto [mo, ml] = fused(q, k, v, c.causal);
  gpu::flash::sm90_set_enabled(true);
  EXPECT_STREQ(nn::attention_backend(), "flash_mma") << what;
  EXPECT_LT(rel(o, mo), 1e-2) << what;
  double worst = 0.0;
  EXPECT_TRUE(lse_close(lse, ml, 2e-3, &worst)) << what << " lse off by " << worst;
}

// Large shapes: the sm90 kernel against flash_mma (the sm_80 kernel, itself tested against the
// float64 path in attention_gpu_test.cpp) on the same bf16 inputs.
TEST(FlashAttentionSm90, LargeShapesMatchFlashMma) {
  KILN_NEED_SM90();
  const Case cases[] = {{2, 4, 4, 2048, 2048, true}, {1, 8, 2, 1536, 1100, false}};
  for (int64_t d : {64, 128})
    for (const Case& c : cases) expect_forward_matches_mma(c, d, 7, "");
}

// Calls the kernel declines go elsewhere: float32, head dim 256, masks, dropout.
TEST(FlashAttentionSm90, DeclinedCallsFallBack) {
  KILN_NEED_SM90();
  Tensor q = rnd({1, 2, 40, 64}, 3).to(kGpu, kFloat32);
  fused(q, q, q, true);
  EXPECT_STRNE(nn::attention_backend(), "flash_sm90");
  Tensor q256 = rnd({1, 2, 40, 256}, 3).to(kGpu, kBFloat16);
  fused(q256, q256, q256, true);
  EXPECT_STRNE(nn::attention_backend(), "flash_sm90");
  Tensor qb = rnd({1, 2, 40, 64}, 3).to(kGpu, kBFloat16);
  Tensor mask = (rnd({40, 40}, 4) > 0.0).to(kGpu);
  F::_scaled_dot_product_flash_attention(qb, qb, qb, mask);
  EXPECT_STREQ(nn::attention_backend(), "flash_mma");
}

}  // namespace
}  // namespace kiln

namespace kiln::gpu::flash {
// Forces a forward kernel shape (flash_sm90_fwd.cu; -1: the defaults); weak like the others.
__attribute__((weak)) void sm90_set_forward_cfg(int cfg);
// Forces backward kernel shapes (flash_sm90_bwd.cu; -1: the defaults); weak like the others.
__attribute__((weak)) void sm90_set_backward_cfg(int cfg64, int cfg128);
// The forward's work counter on or off (flash_sm90_fwd.cu); weak like the others.
__attribute__((weak)) void sm90_set_forward_dynamic(bool on);
// The head-dim-64 forward shape a call takes by default (flash_sm90_fwd.cu); weak like the others.
__attribute__((weak)) int sm90_forward_default_cfg64(int64_t b, int64_t hq, int64_t tq, bool causal,
                                                     int device);
}  // namespace kiln::gpu::flash
namespace kiln::gpu {
// backend/gpu/work_counter.h, weak: GPU builds only.
__attribute__((weak)) int* work_counter(int device, void* stream);
}  // namespace kiln::gpu

namespace kiln {
namespace {

// Every forward kernel shape (D64Cfgs 0..6, D128Cfgs 0..6 in flash_sm90_fwd.cu, the persistent,
// chained and TMA-store ones included) against the float64 CPU kernel on small shapes (bf16, fp16)
// and against flash_mma on shapes with more work tiles than resident blocks (several rounds per
// persistent block, batch x heads a multiple of nothing, tq != tk, GQA).
TEST(FlashAttentionSm90, ForwardEveryShape) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_set_forward_cfg, nullptr);
  const Case small[] = {{1, 2, 2, 17, 17, true},
                        {1, 2, 1, 77, 200, true},
                        {1, 2, 2, 200, 77, true},
                        {2, 2, 2, 129, 77, false},
                        {1, 1, 1, 1, 300, true}};
  const Case large[] = {{3, 13, 13, 1000, 1000, true},
                        {2, 6, 3, 300, 1100, false},
                        {5, 7, 7, 77, 129, true},
                        {2, 9, 3, 1100, 1100, true},
                        {1, 5, 5, 1300, 700, true}};
  for (int64_t d : {64, 128})
    for (int cfg = 0; cfg < 7; ++cfg) {
      gpu::flash::sm90_set_forward_cfg(cfg);
      uint64_t seed = 300;
      for (DType dt : {kBFloat16, kFloat16})
        for (const Case& c : small) {
          seed += 10;
          Tensor q = rnd({c.b, c.hq, c.tq, d}, seed), k = rnd({c.b, c.hk, c.tk, d}, seed + 1),
                 v = rnd({c.b, c.hk, c.tk, d}, seed + 2);
          const std::string what = name(c, d, dt) + " cfg " + std::to_string(cfg);
          auto [o, lse] = fused(q.to(kGpu, dt), k.to(kGpu, dt), v.to(kGpu, dt), c.causal);
          EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
          auto [ro, rl] =
              fused(q.to(dt).to(kFloat64), k.to(dt).to(kFloat64), v.to(dt).to(kFloat64), c.causal);
          EXPECT_LT(rel(o, ro), dt == kBFloat16 ? 1.2e-2 : 3e-3) << what;
          double worst = 0.0;
          EXPECT_TRUE(lse_close(lse, rl, 2e-3, &worst)) << what << " lse off by " << worst;
        }
      for (const Case& c : large) {
        seed += 10;
        expect_forward_matches_mma(c, d, seed, " cfg " + std::to_string(cfg));
      }
    }
  gpu::flash::sm90_set_forward_cfg(-1);
}

// The work tiles' groups (Note [Flash sm90 forward schedule]) on an H100 (50 MiB L2): causal
// calls of several groups of two waves, the last one partial (D64 46 + 46 + 46 + 45 heads, D128
// 27 x 3 + 24), and one whose K / V fit in half the L2 (one group, not two); lengths that are not
// multiples of the tiles; against flash_mma.
TEST(FlashAttentionSm90, ForwardCausalGroups) {
  KILN_NEED_SM90();
  expect_forward_matches_mma({3, 61, 61, 1100, 1100, true}, 64, 610, " groups");
  expect_forward_matches_mma({3, 35, 35, 1100, 1100, true}, 128, 620, " groups");
  expect_forward_matches_mma({4, 11, 11, 2000, 2000, true}, 64, 630, " one group");
}

// Which head-dim-64 shape a call takes by default (Note [Flash sm90 forward small calls]): two
// blocks an SM (index 6) for causal calls of up to one and a half waves of the default's
// three-an-SM blocks, and for non-causal calls that need no more waves at two blocks an SM than at
// three; else the default (0). Tiles of 64 rows: hq heads of tq 64 are hq tiles.
// ForwardEveryShape checks both shapes' results.
TEST(FlashAttentionSm90, ForwardSmallCallShape) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_forward_default_cfg64, nullptr);
  const int64_t sms = cuda::get_device_properties(0).multi_processor_count;
  auto pick = [](int64_t b, int64_t hq, int64_t tq, bool causal) {
    return gpu::flash::sm90_forward_default_cfg64(b, hq, tq, causal, 0);
  };
  const int64_t edge = 9 * sms / 2;           // one and a half waves of three blocks an SM
  EXPECT_EQ(pick(1, 2, 1024, true), 6);       // 32 tiles
  EXPECT_EQ(pick(1, edge, 64, true), 6);      // up to the edge
  EXPECT_EQ(pick(1, edge + 1, 64, true), 0);  // past it
  EXPECT_EQ(pick(16, 12, 1024, true), 3072 <= edge ? 6 : 0);
  EXPECT_EQ(pick(1, 2 * sms, 64, false), 6);   // one wave either way
  EXPECT_EQ(pick(1, 3 * sms, 64, false), 0);   // one wave against two
  EXPECT_EQ(pick(1, 4 * sms, 64, false), 6);   // two waves either way
  EXPECT_EQ(pick(2, 3 * sms, 128, false), 0);  // four waves against six
}

// Scores that jump between key tiles: keys scaled by block of 64 (0.05, 2, 0.5, 12, 1, 14 times
// a direction u that the queries follow or oppose), so a row's running max grows by 8 to 100
// (log2 units) at some tiles and by over 128 at others, where exponentials against a stale max
// would overflow (kLazy's rescale; docs/notes/flash_sm90_forward.md, session 17). Every forward
// shape, bf16 and fp16, causal or not, against the float64 CPU kernel.
TEST(FlashAttentionSm90, ForwardScoreJumps) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_set_forward_cfg, nullptr);
  const double mults[] = {0.05, 2.0, 0.5, 12.0, 1.0, 14.0};
  const int64_t t = 384, h = 2;
  std::vector<double> km(t), qs(t);
  for (int64_t i = 0; i < t; ++i) {
    km[i] = mults[i / 64];
    qs[i] = i % 3 == 2 ? -1.0 : 1.0;
  }
  for (int64_t d : {64, 128}) {
    Tensor u = rnd({1, 1, 1, d}, 900 + d);
    Tensor q = from_vector(qs).reshape({1, 1, t, 1}) * u + rnd({1, h, t, d}, 901) * 0.1;
    Tensor k = from_vector(km).reshape({1, 1, t, 1}) * u + rnd({1, h, t, d}, 902) * 0.1;
    Tensor v = rnd({1, h, t, d}, 903);
    for (int cfg = 0; cfg < 7; ++cfg) {
      gpu::flash::sm90_set_forward_cfg(cfg);
      for (DType dt : {kBFloat16, kFloat16})
        for (bool causal : {true, false}) {
          const std::string what = std::string(dtype_name(dt)) + " d" + std::to_string(d) +
                                   " cfg " + std::to_string(cfg) + (causal ? " causal" : "");
          auto [o, lse] = fused(q.to(kGpu, dt), k.to(kGpu, dt), v.to(kGpu, dt), causal);
          EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
          auto [ro, rl] =
              fused(q.to(dt).to(kFloat64), k.to(dt).to(kFloat64), v.to(dt).to(kFloat64), causal);
          EXPECT_TRUE(kiln::isfinite(cpu64(o)).all().item<bool>()) << what;
          EXPECT_LT(rel(o, ro), dt == kBFloat16 ? 1.2e-2 : 3e-3) << what;
          double worst = 0.0;
          EXPECT_TRUE(lse_close(lse, rl, 2e-3, &worst)) << what << " lse off by " << worst;
        }
    }
  }
  gpu::flash::sm90_set_forward_cfg(-1);
}

// Many short work tiles (one or two key tiles each, more work tiles than resident blocks): the
// persistent blocks run several rounds and the chained shapes issue each next work tile's first
// product during the epilogue, across (batch, head) boundaries, GQA and single query rows
// included. Every forward shape against flash_mma.
TEST(FlashAttentionSm90, ForwardManyShortWorkTiles) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_set_forward_cfg, nullptr);
  const Case cases[] = {
      {40, 8, 8, 70, 70, true}, {33, 12, 4, 1, 300, false}, {9, 40, 8, 130, 60, true}};
  for (int64_t d : {64, 128})
    for (int cfg = 0; cfg < 7; ++cfg) {
      gpu::flash::sm90_set_forward_cfg(cfg);
      uint64_t seed = 900;
      for (const Case& c : cases) {
        seed += 10;
        expect_forward_matches_mma(c, d, seed, " cfg " + std::to_string(cfg));
      }
    }
  gpu::flash::sm90_set_forward_cfg(-1);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  return x.sizes() == y.sizes() && x.nbytes() == y.nbytes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

// The persistent forward hands out work tiles from a per-stream work counter, or (off, and under
// graph capture) in a static order. A work tile's result does not depend on the block that runs
// it, so both schedules give the same bits, also for forwards queued back to back on two streams
// at once and for a captured forward replayed; every counter is back at zero afterwards.
TEST(FlashAttentionSm90, ForwardSchedulesAgree) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_set_forward_dynamic, nullptr);
  ASSERT_NE(gpu::work_counter, nullptr);
  for (int64_t d : {64, 128})
    for (bool causal : {true, false}) {
      const std::string what = "d" + std::to_string(d) + (causal ? " causal" : "");
      Tensor q = rnd({5, 9, 1100, d}, 70 + d).to(kGpu, kBFloat16),
             k = rnd({5, 9, 1100, d}, 71 + d).to(kGpu, kBFloat16),
             v = rnd({5, 9, 1100, d}, 72 + d).to(kGpu, kBFloat16);
      gpu::flash::sm90_set_forward_dynamic(false);
      auto [os, ls] = fused(q, k, v, causal);
      gpu::flash::sm90_set_forward_dynamic(true);
      auto [od, ld] = fused(q, k, v, causal);
      EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
      EXPECT_TRUE(same_bits(os, od)) << what;
      EXPECT_TRUE(same_bits(ls, ld)) << what;
      cuda::Stream s1, s2;
      std::vector<Tensor> outs;
      for (int i = 0; i < 6; ++i)
        for (cuda::Stream* s : {&s1, &s2}) {
          cuda::StreamGuard g(*s);
          outs.push_back(std::get<0>(fused(q, k, v, causal)));
        }
      cuda::synchronize();
      for (size_t i = 0; i < outs.size(); ++i) EXPECT_TRUE(same_bits(outs[i], os)) << what << i;
      for (cuda::Stream* s : {&s1, &s2}) {
        int* ctr = gpu::work_counter(0, reinterpret_cast<void*>(s->handle()));
        ASSERT_NE(ctr, nullptr);
        Tensor c = from_blob(ctr, {2}, TensorOptions(kInt32).device(kGpu)).cpu();
        EXPECT_EQ(c.data_ptr<int32_t>()[0], 0) << what;
        EXPECT_EQ(c.data_ptr<int32_t>()[1], 0) << what;
      }
      cuda::CUDAGraph graph;
      Tensor og;
      cuda::graph(graph, [&] { og = std::get<0>(fused(q, k, v, causal)); });
      og.zero_();
      cuda::synchronize();
      graph.replay();
      cuda::synchronize();
      EXPECT_TRUE(same_bits(og, os)) << what << " graph";
    }
}

// Gradients (dq, dk, dv) of the fused op for q, k, v (leaf tensors on any device) and dout go.
std::vector<Tensor> grads(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& go,
                          bool causal) {
  std::vector<Tensor> x = {q.detach().requires_grad_(), k.detach().requires_grad_(),
                           v.detach().requires_grad_()};
  Tensor o = std::get<0>(fused(x[0], x[1], x[2], causal));
  return autograd::grad({o}, x, {go});
}

// The sm90 backward (head dims 64 and 128) against the float64 CPU backward on the dtype-rounded
// inputs.
TEST(FlashAttentionSm90, BackwardMatchesFloat64) {
  KILN_NEED_SM90();
  const Case cases[] = {
      {2, 3, 3, 1, 1, false},     {2, 3, 3, 1, 1, true},     {1, 2, 2, 17, 17, true},
      {2, 2, 2, 17, 17, false},   {1, 3, 3, 77, 77, true},   {2, 2, 2, 129, 129, true},
      {1, 2, 2, 129, 129, false}, {2, 2, 2, 300, 300, true}, {1, 3, 3, 300, 300, false},
      {1, 2, 2, 77, 200, true},   {1, 2, 2, 200, 77, true},  {2, 2, 2, 129, 300, false},
      {1, 2, 2, 1, 129, false},   {1, 2, 2, 129, 1, true},
  };
  uint64_t seed = 500;
  for (DType dt : {kBFloat16, kFloat16})
    for (int64_t d : {64, 128})
      for (const Case& c : cases) {
        seed += 10;
        Tensor q = rnd({c.b, c.hq, c.tq, d}, seed), k = rnd({c.b, c.hk, c.tk, d}, seed + 1),
               v = rnd({c.b, c.hk, c.tk, d}, seed + 2), go = rnd({c.b, c.hq, c.tq, d}, seed + 3);
        const std::string what = name(c, d, dt);
        auto g = grads(q.to(kGpu, dt), k.to(kGpu, dt), v.to(kGpu, dt), go.to(kGpu, dt), c.causal);
        EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
        auto r = grads(q.to(dt).to(kFloat64), k.to(dt).to(kFloat64), v.to(dt).to(kFloat64),
                       go.to(dt).to(kFloat64), c.causal);
        const double tol = dt == kBFloat16 ? 2e-2 : 5e-3;
        for (int i = 0; i < 3; ++i) {
          EXPECT_TRUE(kiln::isfinite(cpu64(g[i])).all().item<bool>()) << what << " grad " << i;
          EXPECT_LT(rel(g[i], r[i]), tol) << what << " grad " << i;
        }
      }
}

// GPT-2's layout: q, k, v as [B, H, T, D] views of one [B, T, 3, H, D] tensor and dout a
// transposed view; gradients against the float64 CPU backward on contiguous copies.
TEST(FlashAttentionSm90, BackwardStridedPackedQkv) {
  KILN_NEED_SM90();
  for (int64_t d : {64, 128})
    for (bool causal : {true, false}) {
      const int64_t b = 2, t = 333, h = 3;
      Tensor qkv = rnd({b, t, 3, h, d}, 70).to(kGpu, kBFloat16);
      Tensor q = qkv.select(2, 0).transpose(1, 2), k = qkv.select(2, 1).transpose(1, 2),
             v = qkv.select(2, 2).transpose(1, 2);
      Tensor go = rnd({b, t, h, d}, 71).to(kGpu, kBFloat16).transpose(1, 2);
      const std::string what =
          std::string("packed d") + std::to_string(d) + (causal ? " causal" : "");
      auto g = grads(q, k, v, go, causal);
      EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
      auto r = grads(cpu64(q).contiguous(), cpu64(k).contiguous(), cpu64(v).contiguous(),
                     cpu64(go).contiguous(), causal);
      for (int i = 0; i < 3; ++i) EXPECT_LT(rel(g[i], r[i]), 2e-2) << what << " grad " << i;
    }
}

// The sm90 backward against flash_mma's backward on the same bf16 inputs (seeds seed .. seed + 3),
// head dims 64 and 128.
void expect_backward_matches_mma(std::initializer_list<Case> cases, uint64_t seed,
                                 const std::string& tag = "") {
  for (int64_t d : {64, 128})
    for (const Case& c : cases) {
      Tensor q = rnd({c.b, c.hq, c.tq, d}, seed).to(kGpu, kBFloat16),
             k = rnd({c.b, c.hk, c.tk, d}, seed + 1).to(kGpu, kBFloat16),
             v = rnd({c.b, c.hk, c.tk, d}, seed + 2).to(kGpu, kBFloat16),
             go = rnd({c.b, c.hq, c.tq, d}, seed + 3).to(kGpu, kBFloat16);
      const std::string what = name(c, d, kBFloat16) + tag;
      auto g = grads(q, k, v, go, c.causal);
      EXPECT_STREQ(nn::attention_backend(), "flash_sm90") << what;
      gpu::flash::sm90_set_backward_enabled(false);
      auto m = grads(q, k, v, go, c.causal);
      EXPECT_STREQ(nn::attention_backend(), "flash_mma") << what;
      gpu::flash::sm90_set_backward_enabled(true);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(kiln::isfinite(cpu64(g[i])).all().item<bool>()) << what << " grad " << i;
        EXPECT_LT(rel(g[i], m[i]), 1e-2) << what << " grad " << i;
      }
    }
}

// Large shapes.
TEST(FlashAttentionSm90, BackwardLargeShapesMatchFlashMma) {
  KILN_NEED_SM90();
  expect_backward_matches_mma(
      {{2, 4, 4, 2048, 2048, true}, {1, 8, 8, 1536, 1100, false}, {4, 12, 12, 1024, 1024, true}},
      17);
}

// Backward calls the sm90 kernel declines go to flash_mma: head dim 128 while its switch is off,
// head dim 96, GQA, deterministic mode.
TEST(FlashAttentionSm90, BackwardDeclinedCallsFallBack) {
  KILN_NEED_SM90();
  Tensor q128 = rnd({1, 2, 40, 128}, 3).to(kGpu, kBFloat16);
  grads(q128, q128, q128, q128, true);
  EXPECT_STREQ(nn::attention_backend(), "flash_sm90");
  gpu::flash::sm90_set_backward128_enabled(false);
  grads(q128, q128, q128, q128, true);
  EXPECT_STREQ(nn::attention_backend(), "flash_mma");
  gpu::flash::sm90_set_backward128_enabled(true);
  Tensor q96 = rnd({1, 2, 40, 96}, 3).to(kGpu, kBFloat16);
  grads(q96, q96, q96, q96, true);
  EXPECT_STRNE(nn::attention_backend(), "flash_sm90");
  Tensor q = rnd({1, 4, 40, 64}, 3).to(kGpu, kBFloat16),
         kv = rnd({1, 2, 40, 64}, 4).to(kGpu, kBFloat16);
  std::vector<Tensor> x = {q.detach().requires_grad_(), kv.detach().requires_grad_(),
                           kv.detach().requires_grad_()};
  Tensor o = std::get<0>(
      F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], {}, 0.0, true, std::nullopt, true));
  autograd::grad({o}, x, {q});
  EXPECT_STREQ(nn::attention_backend(), "flash_mma");
  use_deterministic_algorithms(true);
  grads(q, q, q, q, false);
  use_deterministic_algorithms(false);
  EXPECT_STRNE(nn::attention_backend(), "flash_sm90");
}

// Many blocks in the grid order of Note [Flash sm90 backward grid order] (flash_sm90_bwd.cu): an
// odd number of (batch, head) pairs, so the last group is partial, more key tiles than a wave of
// blocks, tq != tk, lengths that are not multiples of the tiles; against flash_mma's backward.
TEST(FlashAttentionSm90, BackwardGridOrderMatchesFlashMma) {
  KILN_NEED_SM90();
  expect_backward_matches_mma({{3, 5, 5, 1100, 1300, true},
                               {1, 7, 7, 2100, 2100, true},
                               {5, 3, 3, 1000, 1001, false},
                               {1, 1, 1, 4097, 4000, true},
                               {3, 11, 11, 300, 1000, true}},
                              27);
}

// Every backward kernel shape (KILN_FLASH_SM90_BWD_CFG / _BWD128_CFG indices 0-12 in
// flash_sm90_bwd.cu: product orders, stage counts, the late dQ reduce-add with one or two staging
// buffers, two consumer warpgroups at head dim 64, K / V as register A fragments) against
// flash_mma's backward: lengths that are not multiples of the tiles, tq != tk, more blocks than a
// wave, causal and not, causal with key blocks past every query (their dK / dV are zero).
TEST(FlashAttentionSm90, BackwardEveryShape) {
  KILN_NEED_SM90();
  ASSERT_NE(gpu::flash::sm90_set_backward_cfg, nullptr);
  const std::pair<int, int> shapes[] = {{0, 0}, {1, 1}, {2, 2}, {3, 3},  {4, 5},  {5, 5}, {6, 6},
                                        {7, 7}, {8, 8}, {9, 8}, {10, 8}, {11, 8}, {12, 8}};
  uint64_t seed = 40;
  for (auto [c64, c128] : shapes) {
    gpu::flash::sm90_set_backward_cfg(c64, c128);
    expect_backward_matches_mma({{1, 3, 3, 300, 300, true},
                                 {2, 2, 2, 200, 333, false},
                                 {1, 9, 9, 1100, 1000, true},
                                 {1, 2, 2, 150, 400, true}},
                                seed += 10,
                                " cfg " + std::to_string(c64) + " / " + std::to_string(c128));
  }
  gpu::flash::sm90_set_backward_cfg(-1, -1);
}

}  // namespace
}  // namespace kiln
