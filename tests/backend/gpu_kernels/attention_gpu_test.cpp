// GPU tests of the fused attention kernels (tensor-core and portable): outputs, log-sum-exp and
// gradients against the float64 CPU kernel (itself checked against the math path in
// tests/nn/attention_test.cpp), masks, causal, GQA, odd lengths, dropout masks shared with the CPU,
// deterministic backward, variable length, strided inputs (packed QKV, transposed views, layouts
// that must be copied) and the layouts of the output and gradients. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gpu/attention/flash_call.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/ops/determinism.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

#define KILN_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: GPU kernel tests need a cuda device"

const Device kGpu(kCUDA, 0);
const Device kCpuDev(kCPU);

Tensor rnd(IntArrayRef s, uint64_t seed) {
  manual_seed(seed);
  return randn(s, TensorOptions(kFloat64));
}
Tensor cpu64(const Tensor& t) { return t.detach().to(kCpuDev).to(kFloat64); }
// ||a - b|| / ||b|| (a on any device).
double rel(const Tensor& a, const Tensor& b) {
  Tensor d = cpu64(a) - b;
  const double nb = b.pow(2).sum().item<double>();
  return std::sqrt(d.pow(2).sum().item<double>() / (nb > 0 ? nb : 1.0));
}
bool all_finite(const Tensor& t) { return kiln::isfinite(cpu64(t)).all().item<bool>(); }

struct Case {
  int64_t b, hq, hk, tq, tk, d;
  int mask;  // 0 none, 1 causal, 2 bool [Tq, Tk], 3 additive [B, 1, Tq, Tk]
};
std::string name(const Case& c, DType dt) {
  return std::string(dtype_name(dt)) + " b" + std::to_string(c.b) + " hq" + std::to_string(c.hq) +
         " hk" + std::to_string(c.hk) + " tq" + std::to_string(c.tq) + " tk" +
         std::to_string(c.tk) + " d" + std::to_string(c.d) + " mask" + std::to_string(c.mask);
}

struct Result {
  Tensor o, lse, dq, dk, dv;
};

// Runs the fused op (forward, and backward with grad_out go when given) on `dev` in dtype dt from
// float64 CPU inputs; mask (CPU) is moved along.
Result run(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
           double p, const Tensor& go, Device dev, DType dt,
           std::optional<double> scale = std::nullopt) {
  Tensor qq = q.to(dev, dt).requires_grad_(), kk = k.to(dev, dt).requires_grad_(),
         vv = v.to(dev, dt).requires_grad_();
  Tensor m = mask.defined() ? mask.to(dev) : Tensor();
  auto [o, lse] = F::_scaled_dot_product_flash_attention(qq, kk, vv, m, p, causal, scale, true);
  Result r{o, lse, {}, {}, {}};
  if (go.defined()) {
    o.backward(go.to(dev, dt));
    r.dq = qq.grad();
    r.dk = kk.grad();
    r.dv = vv.grad();
  }
  return r;
}

// The same call on the CPU in float64 from the dtype-rounded inputs (the reference).
Result reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                 double p, const Tensor& go, DType dt, std::optional<double> scale = std::nullopt) {
  auto round = [&](const Tensor& t) { return t.defined() ? t.to(dt).to(kFloat64) : t; };
  return run(round(q), round(k), round(v), mask, causal, p, round(go), kCpuDev, kFloat64, scale);
}

Tensor make_mask(const Case& c, uint64_t seed) {
  if (c.mask == 2) {
    Tensor m = rnd({c.tq, c.tk}, seed) > -0.5;
    m.select(0, c.tq / 2).fill_(Scalar(false));  // a row that sees no key
    return m;
  }
  if (c.mask == 3) return rnd({c.b, 1, c.tq, c.tk}, seed);
  return {};
}

void check_case(const Case& c, DType dt, bool grads, uint64_t seed, double tol_o, double tol_g) {
  Tensor q = rnd({c.b, c.hq, c.tq, c.d}, seed), k = rnd({c.b, c.hk, c.tk, c.d}, seed + 1),
         v = rnd({c.b, c.hk, c.tk, c.d}, seed + 2);
  Tensor go = grads ? rnd({c.b, c.hq, c.tq, c.d}, seed + 3) : Tensor();
  Tensor mask = make_mask(c, seed + 4);
  const bool causal = c.mask == 1;
  Result g = run(q, k, v, mask, causal, 0.0, go, kGpu, dt);
  const std::string backend = nn::attention_backend();
  Result r = reference(q, k, v, mask, causal, 0.0, go, dt);
  const std::string what = name(c, dt) + " backend " + backend;
  EXPECT_TRUE(all_finite(g.o)) << what;
  EXPECT_LT(rel(g.o, r.o), tol_o) << what;
  // lse: -inf rows agree, finite rows within float32 rounding of the scores.
  Tensor gl = cpu64(g.lse), fin = kiln::isfinite(r.lse);
  EXPECT_TRUE((kiln::isfinite(gl) == fin).all().item<bool>()) << what;
  EXPECT_LT((kiln::where(fin, gl, Scalar(0.0)) - kiln::where(fin, r.lse, Scalar(0.0)))
                .abs()
                .max()
                .item<double>(),
            2e-3)
      << what;
  if (!grads) return;
  EXPECT_LT(rel(g.dq, r.dq), tol_g) << what << " dq";
  EXPECT_LT(rel(g.dk, r.dk), tol_g) << what << " dk";
  EXPECT_LT(rel(g.dv, r.dv), tol_g) << what << " dv";
}

const Case kCases[] = {
    {2, 4, 4, 77, 133, 0, 0},  // d filled in below
    {2, 4, 4, 133, 77, 0, 1}, {1, 6, 2, 100, 100, 0, 1}, {2, 2, 2, 65, 90, 0, 2},
    {2, 4, 2, 50, 70, 0, 3},  {1, 2, 1, 1, 1, 0, 0},
};

TEST(FlashAttentionGpu, ForwardMatchesFloat64) {
  KILN_NEED_GPU();
  uint64_t seed = 1;
  for (DType dt : {kBFloat16, kFloat16})
    for (int64_t d : {64, 128, 256, 40})
      for (Case c : kCases) {
        c.d = d;
        check_case(c, dt, false, seed += 10, dt == kBFloat16 ? 1.2e-2 : 3e-3, 0);
      }
}

TEST(FlashAttentionGpu, BackwardMatchesFloat64) {
  KILN_NEED_GPU();
  uint64_t seed = 1000;
  for (DType dt : {kBFloat16, kFloat16})
    for (int64_t d : {64, 128, 256})
      for (Case c : kCases) {
        c.d = d;
        check_case(c, dt, true, seed += 10, dt == kBFloat16 ? 1.2e-2 : 3e-3,
                   dt == kBFloat16 ? 2e-2 : 5e-3);
      }
}

TEST(FlashAttentionGpu, Float32AndOddHeadDim) {
  KILN_NEED_GPU();
  uint64_t seed = 2000;
  for (int64_t d : {8, 33, 64, 200})
    for (Case c : kCases) {
      c.d = d;
      check_case(c, kFloat32, true, seed += 10, 1e-5, 1e-5);
    }
}

// The tensor-core forward: flash_mma, or flash_sm90 where the Hopper kernels are built and run
// (src/kernels/gpu/attention/sm90/).
bool tensor_core_kernel(const std::string& be) { return be == "flash_mma" || be == "flash_sm90"; }

TEST(FlashAttentionGpu, BackendNames) {
  KILN_NEED_GPU();
  Tensor q = rnd({1, 2, 10, 64}, 5).to(kGpu, kBFloat16);
  F::_scaled_dot_product_flash_attention(q, q, q);
  EXPECT_TRUE(tensor_core_kernel(nn::attention_backend())) << nn::attention_backend();
  Tensor q2 = rnd({1, 2, 10, 256}, 5).to(kGpu, kBFloat16);
  F::_scaled_dot_product_flash_attention(q2, q2, q2);
  EXPECT_STREQ(nn::attention_backend(), "flash");
  // scaled_dot_product_attention takes the fused path for bf16 head dim 64 on the GPU.
  Tensor o = F::scaled_dot_product_attention(q, q, q, {}, 0.0, true);
  EXPECT_TRUE(tensor_core_kernel(nn::attention_backend())) << nn::attention_backend();
  Tensor r = reference(cpu64(q), cpu64(q), cpu64(q), {}, true, 0.0, {}, kBFloat16).o;
  EXPECT_LT(rel(o, r), 1.2e-2);
  // The backward of a head dim 64 call runs on the tensor cores.
  Tensor qg = q.detach().requires_grad_();
  F::scaled_dot_product_attention(qg, qg, qg, {}, 0.0, true).sum().backward();
  EXPECT_TRUE(tensor_core_kernel(nn::attention_backend())) << nn::attention_backend();
}

TEST(FlashAttentionGpu, DeterministicBackwardIsBitIdentical) {
  KILN_NEED_GPU();
  for (int64_t d : {64, 256}) {
    Case c{2, 4, 2, 150, 150, d, 1};
    Tensor q = rnd({c.b, c.hq, c.tq, d}, 7), k = rnd({c.b, c.hk, c.tk, d}, 8),
           v = rnd({c.b, c.hk, c.tk, d}, 9), go = rnd({c.b, c.hq, c.tq, d}, 10);
    use_deterministic_algorithms(true);
    Result a = run(q, k, v, {}, true, 0.0, go, kGpu, kBFloat16);
    Result b = run(q, k, v, {}, true, 0.0, go, kGpu, kBFloat16);
    use_deterministic_algorithms(false);
    for (auto [x, y] : {std::pair{a.dq, b.dq}, {a.dk, b.dk}, {a.dv, b.dv}})
      EXPECT_TRUE(kiln::equal(cpu64(x), cpu64(y))) << "d " << d;
    Result r = reference(q, k, v, {}, true, 0.0, go, kBFloat16);
    EXPECT_LT(rel(a.dq, r.dq), 2e-2);
    EXPECT_LT(rel(a.dk, r.dk), 2e-2);
    EXPECT_LT(rel(a.dv, r.dv), 2e-2);
  }
}

// The GPU and CPU kernels draw the same dropout mask from the same (seed, offset), so the GPU
// forward and backward must match the float64 CPU kernel run after the same manual_seed.
TEST(FlashAttentionGpu, DropoutMatchesCpuKernelAndIsReproducible) {
  KILN_NEED_GPU();
  for (int64_t d : {64, 256}) {
    Case c{2, 4, 2, 90, 110, d, 0};
    Tensor q = rnd({c.b, c.hq, c.tq, d}, 11), k = rnd({c.b, c.hk, c.tk, d}, 12),
           v = rnd({c.b, c.hk, c.tk, d}, 13), go = rnd({c.b, c.hq, c.tq, d}, 14);
    manual_seed(99);
    Result g = run(q, k, v, {}, false, 0.25, go, kGpu, kBFloat16);
    manual_seed(99);
    Result g2 = run(q, k, v, {}, false, 0.25, go, kGpu, kBFloat16);
    EXPECT_TRUE(kiln::equal(cpu64(g.o), cpu64(g2.o)));
    manual_seed(99);
    Result r = reference(q, k, v, {}, false, 0.25, go, kBFloat16);
    EXPECT_LT(rel(g.o, r.o), 1.2e-2) << d;
    EXPECT_LT(rel(g.dq, r.dq), 2e-2) << d;
    EXPECT_LT(rel(g.dk, r.dk), 2e-2) << d;
    EXPECT_LT(rel(g.dv, r.dv), 2e-2) << d;
  }
}

TEST(FlashAttentionGpu, VarlenMatchesCpuKernel) {
  KILN_NEED_GPU();
  const std::vector<int32_t> lq = {70, 0, 129, 5}, lk = {64, 3, 129, 200};
  std::vector<int32_t> cq = {0}, ck = {0};
  for (size_t i = 0; i < lq.size(); ++i) {
    cq.push_back(cq.back() + lq[i]);
    ck.push_back(ck.back() + lk[i]);
  }
  for (int64_t d : {64, 128, 256})
    for (bool causal : {false, true}) {
      const int64_t hq = 4, hk = 2;
      Tensor q = rnd({cq.back(), hq, d}, 20), k = rnd({ck.back(), hk, d}, 21),
             v = rnd({ck.back(), hk, d}, 22), go = rnd({cq.back(), hq, d}, 23);
      auto go_run = [&](Device dev, DType dt) {
        auto r = [&](const Tensor& t) { return t.to(kBFloat16).to(kFloat64).to(dev, dt); };
        Tensor qq = r(q).requires_grad_(), kk = r(k).requires_grad_(), vv = r(v).requires_grad_();
        Tensor tq = from_vector(cq).to(dev), tk = from_vector(ck).to(dev);
        auto [o, lse] = F::_varlen_flash_attention(qq, kk, vv, tq, tk, 129, 200, 0.0, causal);
        o.backward(r(go));
        return Result{o, lse, qq.grad(), kk.grad(), vv.grad()};
      };
      Result g = go_run(kGpu, kBFloat16), c = go_run(kCpuDev, kFloat64);
      const std::string what = "d " + std::to_string(d) + " causal " + std::to_string(causal);
      EXPECT_LT(rel(g.o, c.o), 1.2e-2) << what;
      EXPECT_LT(rel(g.dq, c.dq), 2e-2) << what;
      EXPECT_LT(rel(g.dk, c.dk), 2e-2) << what;
      EXPECT_LT(rel(g.dv, c.dv), 2e-2) << what;
      Tensor fin = kiln::isfinite(c.lse);
      EXPECT_LT((kiln::where(fin, cpu64(g.lse), Scalar(0.0)) - kiln::where(fin, c.lse, Scalar(0.0)))
                    .abs()
                    .max()
                    .item<double>(),
                2e-3)
          << what;
    }
}

// An explicit scale, positive (the plain tensor-core kernels fold it into the exponent) and
// negative (the general kernels), on lengths that leave partial query and key tiles.
TEST(FlashAttentionGpu, ExplicitScaleOfEitherSign) {
  KILN_NEED_GPU();
  for (int64_t d : {64, 128})
    for (double scale : {0.3, -0.2})
      for (bool causal : {true, false}) {
        Case c{2, 3, 3, 200, causal ? 200 : 330, d, causal ? 1 : 0};
        Tensor q = rnd({c.b, c.hq, c.tq, d}, 40), k = rnd({c.b, c.hk, c.tk, d}, 41),
               v = rnd({c.b, c.hk, c.tk, d}, 42), go = rnd({c.b, c.hq, c.tq, d}, 43);
        Result g = run(q, k, v, {}, causal, 0.0, go, kGpu, kBFloat16, scale);
        Result r = reference(q, k, v, {}, causal, 0.0, go, kBFloat16, scale);
        const std::string what = "d " + std::to_string(d) + " scale " + std::to_string(scale) +
                                 " causal " + std::to_string(causal);
        EXPECT_LT(rel(g.o, r.o), 1.2e-2) << what;
        EXPECT_LT(rel(g.dq, r.dq), 2e-2) << what;
        EXPECT_LT(rel(g.dk, r.dk), 2e-2) << what;
        EXPECT_LT(rel(g.dv, r.dv), 2e-2) << what;
        EXPECT_LT((cpu64(g.lse) - r.lse).abs().max().item<double>(), 2e-3) << what;
      }
}

// q, k, v heads [B, H, T, D] of one [B, T, 3 H D] projection (GPT-2's layout).
std::vector<Tensor> packed_heads(const Tensor& qkv, int64_t h) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  std::vector<Tensor> r;
  for (const Tensor& x : kiln::split(qkv, c, 2))
    r.push_back(x.reshape({b, t, h, c / h}).transpose(1, 2));
  return r;
}
uintptr_t storage_base(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) -
         static_cast<uintptr_t>(t.storage_offset() * static_cast<int64_t>(t.element_size()));
}

// Forward and gradients (w.r.t. the given non-leaf views, grad_out go) against the float64 CPU
// kernel on contiguous copies of the dtype-rounded inputs.
void check_views(const std::vector<Tensor>& x, const Tensor& go, bool causal, DType dt,
                 const std::string& what, bool gqa = false) {
  Tensor o = std::get<0>(
      F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], {}, 0.0, causal, std::nullopt, gqa));
  auto g = autograd::grad({o}, {x[0], x[1], x[2]}, {go});
  const std::string backend = nn::attention_backend();
  std::vector<Tensor> r;
  for (const Tensor& y : x) r.push_back(cpu64(y).contiguous().requires_grad_());
  Tensor ro = std::get<0>(
      F::_scaled_dot_product_flash_attention(r[0], r[1], r[2], {}, 0.0, causal, std::nullopt, gqa));
  auto rg = autograd::grad({ro}, {r[0], r[1], r[2]}, {cpu64(go)});
  const double tol_o = dt == kFloat32 ? 1e-5 : (dt == kBFloat16 ? 1.2e-2 : 3e-3);
  const double tol_g = dt == kFloat32 ? 1e-5 : (dt == kBFloat16 ? 2e-2 : 5e-3);
  EXPECT_LT(rel(o, ro), tol_o) << what << " backend " << backend;
  for (int i = 0; i < 3; ++i) EXPECT_LT(rel(g[i], rg[i]), tol_g) << what << " grad " << i;
}

// Note [Packed QKV gradients]: GPT-2's heads go to the kernels without copies, o is [B, T, H, D]
// memory, dq / dk / dv are views of one [B, T, 3 H D] buffer, and the values match float64; on the
// tensor-core path (head dims 64, 128), the portable one (256) and the deterministic dq pass.
TEST(FlashAttentionGpu, PackedQkvViewsAndGradientLayout) {
  KILN_NEED_GPU();
  const int64_t b = 2, t = 200, h = 3;
  for (int64_t d : {64, 128, 256})
    for (bool det : {false, true}) {
      if (det && d == 128) continue;
      const int64_t c = h * d;
      Tensor qkv = rnd({b, t, 3 * c}, 4000 + d).to(kGpu, kBFloat16).requires_grad_();
      std::vector<Tensor> x = packed_heads(qkv, h);
      for (const Tensor& y : x) EXPECT_TRUE(detail::flash_operand(y).is_same(y));
      Tensor o = std::get<0>(
          F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], {}, 0.0, true, std::nullopt));
      const std::string be = nn::attention_backend();  // tensor-core kernels at d 64, 128
      EXPECT_TRUE(d == 256 ? be == "flash" : tensor_core_kernel(be)) << d << " " << be;
      EXPECT_EQ(DimVector(o.strides()), (DimVector{t * c, d, c, 1}));
      Tensor gy = rnd({b, t, c}, 4100 + d).to(kGpu, kBFloat16);
      Tensor go = gy.reshape({b, t, h, d}).transpose(1, 2);
      use_deterministic_algorithms(det);
      auto g = autograd::grad({o}, {x[0], x[1], x[2]}, {go}, /*retain_graph=*/true);
      use_deterministic_algorithms(false);
      const std::string what = "d " + std::to_string(d) + " det " + std::to_string(det);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(DimVector(g[i].strides()), (DimVector{3 * c * t, d, 3 * c, 1})) << what;
        EXPECT_EQ(g[i].storage_offset(), i * c) << what;
        EXPECT_EQ(storage_base(g[i]), storage_base(g[0])) << what;
      }
      std::vector<Tensor> r;
      for (const Tensor& y : x) r.push_back(cpu64(y).contiguous().requires_grad_());
      Tensor ro = std::get<0>(
          F::_scaled_dot_product_flash_attention(r[0], r[1], r[2], {}, 0.0, true, std::nullopt));
      auto rg = autograd::grad({ro}, {r[0], r[1], r[2]}, {cpu64(go)});
      EXPECT_LT(rel(o, ro), 1.2e-2) << what;
      for (int i = 0; i < 3; ++i) EXPECT_LT(rel(g[i], rg[i]), 2e-2) << what << " grad " << i;
      // The whole chain into the projection's gradient.
      Tensor y = o.transpose(1, 2).reshape({b, t, c});
      EXPECT_EQ(y.data_ptr(), o.data_ptr());
      y.backward(gy);
      Tensor want = kiln::cat(
          {rg[0].transpose(1, 2).reshape({b, t, c}), rg[1].transpose(1, 2).reshape({b, t, c}),
           rg[2].transpose(1, 2).reshape({b, t, c})},
          2);
      EXPECT_LT(rel(qkv.grad(), want), 2e-2) << what;
    }
}

// Strided views the kernels read in place (transposed [B, T, H, D] memory, GQA, float32 on the
// portable path, a batch of one) and views that must be copied first (a row stride that is not a
// multiple of 16 bytes, a misaligned data pointer, a strided head dim).
TEST(FlashAttentionGpu, StridedViewsAndCopies) {
  KILN_NEED_GPU();
  const int64_t b = 2, hq = 4, hk = 2, tq = 130, tk = 150;
  struct Layout {
    int kind;  // 0 [B, T, H, D] transposed, 1 row stride D + 4, 2 offset 1, 3 head dim strided
    int64_t d;
    DType dt;
    bool in_place;
  };
  const Layout layouts[] = {{0, 64, kBFloat16, true},  {0, 128, kFloat16, true},
                            {0, 40, kFloat32, true},   {0, 256, kBFloat16, true},
                            {1, 64, kBFloat16, false}, {2, 64, kBFloat16, false},
                            {3, 64, kBFloat16, false}};
  uint64_t seed = 5000;
  for (const Layout& l : layouts) {
    auto make = [&](int64_t heads, int64_t t) -> Tensor {
      switch (l.kind) {
        case 0:
          return rnd({b, t, heads, l.d}, seed++).to(kGpu, l.dt).transpose(1, 2);
        case 1:
          return rnd({b, heads, t, l.d + 4}, seed++).to(kGpu, l.dt).narrow(3, 0, l.d);
        case 2:
          return rnd({b, heads, t, l.d + 1}, seed++).to(kGpu, l.dt).narrow(3, 1, l.d);
        default:
          return rnd({b, heads, l.d, t}, seed++).to(kGpu, l.dt).transpose(2, 3);
      }
    };
    for (bool gqa : {false, true}) {
      const int64_t h2 = gqa ? hk : hq;
      std::vector<Tensor> x = {make(hq, tq).requires_grad_(), make(h2, tk).requires_grad_(),
                               make(h2, tk).requires_grad_()};
      // requires_grad_ on a view of a non-tracked base makes it a leaf; the kernels see it as is.
      for (const Tensor& y : x)
        EXPECT_EQ(detail::flash_operand(y).is_same(y), l.in_place) << l.kind << " " << l.d;
      Tensor go = rnd({b, tq, hq, l.d}, seed++).to(kGpu, l.dt).transpose(1, 2);
      const std::string what = "kind " + std::to_string(l.kind) + " d " + std::to_string(l.d) +
                               " " + dtype_name(l.dt) + " gqa " + std::to_string(gqa);
      check_views(x, go, /*causal=*/!gqa, l.dt, what, gqa);
    }
  }
  // A batch of one: the batch stride does not matter.
  Tensor qkv = rnd({1, 70, 3 * 2 * 64}, 5100).to(kGpu, kBFloat16).requires_grad_();
  std::vector<Tensor> x = packed_heads(qkv, 2);
  for (const Tensor& y : x) EXPECT_TRUE(detail::flash_operand(y).is_same(y));
  check_views(x, rnd({1, 2, 70, 64}, 5101).to(kGpu, kBFloat16), true, kBFloat16, "batch 1");
}

// Variable-length inputs that are views of packed [N, 3, H, D] rows, against the float64 CPU
// kernel.
TEST(FlashAttentionGpu, VarlenStridedInputs) {
  KILN_NEED_GPU();
  const std::vector<int32_t> cu = {0, 70, 70, 199, 204};
  const int64_t n = 204, h = 2;
  for (int64_t d : {64, 128, 256}) {
    Tensor packed = rnd({n, 3, h, d}, 6000 + d);
    Tensor go = rnd({n, h, d}, 6100 + d);
    auto go_run = [&](Device dev, DType dt) {
      Tensor p = packed.to(kBFloat16).to(kFloat64).to(dev, dt).requires_grad_();
      std::vector<Tensor> x = {p.select(1, 0), p.select(1, 1), p.select(1, 2)};
      if (dev.is_cuda()) {
        for (const Tensor& y : x) EXPECT_TRUE(detail::flash_operand(y).is_same(y));
      }
      Tensor tc = from_vector(cu).to(dev);
      auto [o, lse] = F::_varlen_flash_attention(x[0], x[1], x[2], tc, tc, 129, 129, 0.0, true);
      auto g = autograd::grad({o}, {x[0], x[1], x[2]}, {go.to(kBFloat16).to(kFloat64).to(dev, dt)});
      return Result{o, lse, g[0], g[1], g[2]};
    };
    Result g = go_run(kGpu, kBFloat16), c = go_run(kCpuDev, kFloat64);
    const std::string what = "d " + std::to_string(d);
    EXPECT_LT(rel(g.o, c.o), 1.2e-2) << what;
    EXPECT_LT(rel(g.dq, c.dq), 2e-2) << what;
    EXPECT_LT(rel(g.dk, c.dk), 2e-2) << what;
    EXPECT_LT(rel(g.dv, c.dv), 2e-2) << what;
  }
}

TEST(FlashAttentionGpu, LongCausalSequences) {
  KILN_NEED_GPU();
  for (int64_t d : {64, 128}) {
    Case c{1, 2, 2, 1024, 1024, d, 1};
    check_case(c, kBFloat16, true, 3000 + d, 1.2e-2, 2e-2);
  }
}

}  // namespace
}  // namespace kiln
