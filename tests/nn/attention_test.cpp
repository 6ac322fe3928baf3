// Tests of the fused attention op on the CPU (kiln::nn::functional::_scaled_dot_product_flash_
// attention, varlen_attention): outputs, log-sum-exp and gradients against the float64 composite
// math path, gradcheck, dropout reproducibility and consistency, variable-length vs per-sequence,
// strided inputs (packed QKV, transposed views) and the layouts of the output and gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kernels/gpu/attention/flash_call.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

Tensor rnd(IntArrayRef s, uint64_t seed, DType dt = kFloat64) {
  manual_seed(seed);
  return randn(s, TensorOptions(kFloat64)).to(dt);
}
double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

// Masks of the sample cases: 0 none, 1 causal, 2 bool [Tq, Tk] with a fully masked row, 3 additive
// [B, 1, Tq, Tk] (broadcast over heads).
struct Case {
  int64_t b, hq, hk, tq, tk, d;
  int mask;
};

Tensor bool_mask(int64_t tq, int64_t tk) {
  Tensor m = rnd({tq, tk}, 91) > -0.3;
  if (tq > 1) m.select(0, 1).fill_(Scalar(false));  // row 1 sees no key: output 0, lse -inf
  return m;
}

struct Inputs {
  Tensor q, k, v, mask;
  bool causal = false;
};
Inputs make_inputs(const Case& c, uint64_t seed) {
  Inputs in;
  in.q = rnd({c.b, c.hq, c.tq, c.d}, seed);
  in.k = rnd({c.b, c.hk, c.tk, c.d}, seed + 1);
  in.v = rnd({c.b, c.hk, c.tk, c.d}, seed + 2);
  in.causal = c.mask == 1;
  if (c.mask == 2) in.mask = bool_mask(c.tq, c.tk);
  if (c.mask == 3) in.mask = rnd({c.b, 1, c.tq, c.tk}, seed + 3);
  return in;
}

// log sum_j exp(s_ij) by the composite ops in float64 (-inf for rows with every key masked).
Tensor ref_lse(const Inputs& in, double scale) {
  const int64_t g = in.q.size(1) / in.k.size(1);
  Tensor k = kiln::repeat_interleave(in.k, g, 1);
  Tensor s = kiln::matmul(in.q, k.transpose(-2, -1)) * scale;
  const double ninf = -INFINITY;
  if (in.causal) {
    Tensor i = kiln::arange(in.q.size(2), TensorOptions(kInt64)).unsqueeze(1);
    Tensor j = kiln::arange(in.k.size(2), TensorOptions(kInt64)).unsqueeze(0);
    s = kiln::where(j <= i, s, Scalar(ninf));
  } else if (in.mask.defined()) {
    s = in.mask.dtype() == kBool ? kiln::where(in.mask, s, Scalar(ninf)) : s + in.mask;
  }
  return s.logsumexp(IntArrayRef{-1});
}

const Case kCases[] = {
    {2, 4, 2, 7, 11, 8, 0}, {1, 3, 3, 13, 13, 5, 1}, {2, 2, 1, 9, 6, 4, 1},
    {2, 4, 2, 6, 10, 8, 2}, {2, 2, 2, 5, 9, 16, 3},  {1, 2, 2, 1, 1, 3, 0},
};

TEST(FlashAttentionCpu, ForwardAndLseMatchMathPath) {
  uint64_t seed = 10;
  for (const Case& c : kCases) {
    Inputs in = make_inputs(c, seed += 10);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    auto [o, lse] = F::_scaled_dot_product_flash_attention(in.q, in.k, in.v, in.mask, 0.0,
                                                           in.causal, std::nullopt, true);
    EXPECT_STREQ(nn::attention_backend(), "flash_cpu");
    Tensor ref = F::scaled_dot_product_attention(in.q, in.k, in.v, in.mask, 0.0, in.causal,
                                                 std::nullopt, true);
    EXPECT_STREQ(nn::attention_backend(), "math");
    EXPECT_LT(max_abs_diff(o, ref), 1e-12) << "case mask " << c.mask << " d " << c.d;
    Tensor rl = ref_lse(in, scale);
    ASSERT_EQ(lse.sizes(), rl.sizes());
    EXPECT_EQ(lse.dtype(), kFloat64);
    // -inf rows must agree exactly; finite rows to rounding.
    EXPECT_TRUE((kiln::isinf(lse) == kiln::isinf(rl)).all().item<bool>());
    Tensor fin = kiln::isfinite(rl);
    EXPECT_LT(max_abs_diff(kiln::where(fin, lse, Scalar(0.0)), kiln::where(fin, rl, Scalar(0.0))),
              1e-12);
  }
}

TEST(FlashAttentionCpu, ExplicitScaleAndFloat32) {
  Case c{2, 4, 2, 9, 12, 16, 1};
  Inputs in = make_inputs(c, 77);
  Tensor ref = F::scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, true, 0.37, true);
  auto [o, lse] = F::_scaled_dot_product_flash_attention(
      in.q.to(kFloat32), in.k.to(kFloat32), in.v.to(kFloat32), {}, 0.0, true, 0.37, true);
  EXPECT_EQ(o.dtype(), kFloat32);
  EXPECT_EQ(lse.dtype(), kFloat32);
  EXPECT_LT(max_abs_diff(o, ref), 1e-5);
}

TEST(FlashAttentionCpu, GradientsMatchMathPath) {
  uint64_t seed = 300;
  for (const Case& c : kCases) {
    Inputs in = make_inputs(c, seed += 10);
    Tensor go = rnd({c.b, c.hq, c.tq, c.d}, seed + 7);
    auto grads = [&](bool fused) {
      Tensor q = in.q.clone().requires_grad_(), k = in.k.clone().requires_grad_(),
             v = in.v.clone().requires_grad_();
      Tensor o = fused ? std::get<0>(F::_scaled_dot_product_flash_attention(
                             q, k, v, in.mask, 0.0, in.causal, std::nullopt, true))
                       : F::scaled_dot_product_attention(q, k, v, in.mask, 0.0, in.causal,
                                                         std::nullopt, true);
      o.backward(go);
      return std::vector<Tensor>{q.grad(), k.grad(), v.grad()};
    };
    auto f = grads(true), r = grads(false);
    for (int i = 0; i < 3; ++i)
      EXPECT_LT(max_abs_diff(f[i], r[i]), 1e-11) << "grad " << i << " mask " << c.mask;
  }
}

TEST(FlashAttentionCpu, Gradcheck) {
  for (int mode : {0, 1, 3}) {
    Case c{1, 2, 1, 4, 5, 3, mode};
    Inputs in = make_inputs(c, 500 + mode);
    autograd::Func f = [&](const std::vector<Tensor>& x) {
      return std::get<0>(F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], in.mask, 0.0,
                                                                in.causal, std::nullopt, true));
    };
    EXPECT_TRUE(
        autograd::gradcheck(f, {in.q.clone().requires_grad_(), in.k.clone().requires_grad_(),
                                in.v.clone().requires_grad_()}));
  }
}

TEST(FlashAttentionCpu, DropoutGradcheckWithFixedSeed) {
  Case c{1, 2, 2, 4, 6, 3, 0};
  Inputs in = make_inputs(c, 600);
  autograd::Func f = [&](const std::vector<Tensor>& x) {
    manual_seed(1234);  // every evaluation draws the same mask
    return std::get<0>(
        F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], {}, 0.4, false, std::nullopt));
  };
  EXPECT_TRUE(autograd::gradcheck(f, {in.q.clone().requires_grad_(), in.k.clone().requires_grad_(),
                                      in.v.clone().requires_grad_()}));
}

// With v = identity (Tk == D) the output is the dropped, rescaled weights themselves, which
// recovers the mask; the output and gradients for another v must then equal the math path
// evaluated with that mask, so forward and backward used the same mask.
TEST(FlashAttentionCpu, DropoutMaskConsistentAndReproducible) {
  const int64_t b = 2, h = 3, tq = 9, tk = 12, d = 12;
  const double p = 0.25;  // exact in float, as the kernels store it
  Tensor q = rnd({b, h, tq, d}, 700), k = rnd({b, h, tk, d}, 701), v = rnd({b, h, tk, d}, 702);
  Tensor eye = kiln::eye(tk, TensorOptions(kFloat64)).expand({b, h, tk, d}).contiguous();
  manual_seed(42);
  Tensor w = std::get<0>(F::_scaled_dot_product_flash_attention(q, k, eye, {}, p, true));
  manual_seed(42);
  Tensor w2 = std::get<0>(F::_scaled_dot_product_flash_attention(q, k, eye, {}, p, true));
  EXPECT_EQ(max_abs_diff(w, w2), 0.0);  // same seed, same mask
  Tensor w3 = std::get<0>(F::_scaled_dot_product_flash_attention(q, k, eye, {}, p, true));
  EXPECT_GT(max_abs_diff(w, w3), 0.0);  // the generator moved on
  Tensor i = kiln::arange(tq, TensorOptions(kInt64)).unsqueeze(1);
  Tensor j = kiln::arange(tk, TensorOptions(kInt64)).unsqueeze(0);
  Tensor allowed = j <= i;
  Tensor keep = (w != 0.0).logical_or(allowed.logical_not());
  const double kept = kiln::where(allowed, keep.to(kFloat64), Scalar(0.0)).sum().item<double>();
  const double total = allowed.to(kFloat64).sum().item<double>() * b * h;
  EXPECT_NEAR(kept / total, 1 - p, 0.08);
  Tensor go = rnd({b, h, tq, d}, 703);
  auto run = [&](bool fused) {
    Tensor qq = q.clone().requires_grad_(), kk = k.clone().requires_grad_(),
           vv = v.clone().requires_grad_();
    Tensor o;
    if (fused) {
      manual_seed(42);
      o = std::get<0>(F::_scaled_dot_product_flash_attention(qq, kk, vv, {}, p, true));
    } else {
      Tensor s = kiln::matmul(qq, kk.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
      s = kiln::where(allowed, s, Scalar(-INFINITY));
      Tensor pw = F::softmax(s, -1) * keep.to(kFloat64) / (1 - p);
      o = kiln::matmul(pw, vv);
    }
    o.backward(go);
    return std::vector<Tensor>{o.detach(), qq.grad(), kk.grad(), vv.grad()};
  };
  auto f = run(true), r = run(false);
  for (int n = 0; n < 4; ++n) EXPECT_LT(max_abs_diff(f[n], r[n]), 1e-11) << "tensor " << n;
}

TEST(FlashAttentionCpu, VarlenMatchesPerSequenceCalls) {
  const std::vector<int32_t> lq = {3, 0, 7, 5}, lk = {4, 2, 7, 9};
  const int64_t hq = 4, hk = 2, d = 8;
  std::vector<int32_t> cq = {0}, ck = {0};
  for (size_t i = 0; i < lq.size(); ++i) {
    cq.push_back(cq.back() + lq[i]);
    ck.push_back(ck.back() + lk[i]);
  }
  Tensor q = rnd({cq.back(), hq, d}, 800), k = rnd({ck.back(), hk, d}, 801),
         v = rnd({ck.back(), hk, d}, 802), go = rnd({cq.back(), hq, d}, 803);
  Tensor tcq = from_vector(cq), tck = from_vector(ck);
  for (bool causal : {false, true}) {
    Tensor qv = q.clone().requires_grad_(), kv = k.clone().requires_grad_(),
           vv = v.clone().requires_grad_();
    auto [o, lse] = F::_varlen_flash_attention(qv, kv, vv, tcq, tck, 7, 9, 0.0, causal);
    o.backward(go);
    for (size_t s = 0; s < lq.size(); ++s) {
      if (lq[s] == 0) continue;
      auto seg = [](const Tensor& t, int32_t a, int32_t n) {
        return t.narrow(0, a, n).transpose(0, 1).unsqueeze(0);  // [1, H, n, D]
      };
      Tensor qs = seg(q, cq[s], lq[s]).clone().requires_grad_();
      Tensor ks = seg(k, ck[s], lk[s]).clone().requires_grad_();
      Tensor vs = seg(v, ck[s], lk[s]).clone().requires_grad_();
      auto [os, ls] =
          F::_scaled_dot_product_flash_attention(qs, ks, vs, {}, 0.0, causal, std::nullopt, true);
      os.backward(seg(go, cq[s], lq[s]));
      EXPECT_LT(max_abs_diff(seg(o, cq[s], lq[s]), os), 1e-12);
      EXPECT_LT(max_abs_diff(lse.narrow(1, cq[s], lq[s]), ls.squeeze(0)), 1e-12);
      EXPECT_LT(max_abs_diff(seg(qv.grad(), cq[s], lq[s]), qs.grad()), 1e-12);
      EXPECT_LT(max_abs_diff(seg(kv.grad(), ck[s], lk[s]), ks.grad()), 1e-12);
      EXPECT_LT(max_abs_diff(seg(vv.grad(), ck[s], lk[s]), vs.grad()), 1e-12);
    }
    // Keys of a sequence with no queries get zero gradient.
    EXPECT_EQ(kv.grad().narrow(0, ck[1], lk[1]).abs().max().item<double>(), 0.0);
  }
}

TEST(FlashAttentionCpu, VarlenPublicFunctionAndErrors) {
  Tensor q = rnd({5, 2, 4}, 900), k = rnd({6, 2, 4}, 901), v = rnd({6, 2, 4}, 902);
  Tensor cq = from_vector(std::vector<int32_t>{0, 2, 5}),
         ck = from_vector(std::vector<int32_t>{0, 3, 6});
  Tensor o = F::varlen_attention(q, k, v, cq, ck, 3, 3);
  EXPECT_EQ(o.sizes(), q.sizes());
  EXPECT_THROW(F::varlen_attention(q, k, v, cq, ck, 2, 3), Error);  // length 3 > max 2
  EXPECT_THROW(F::varlen_attention(q, k, v, cq.to(kInt64), ck, 3, 3), Error);
  EXPECT_THROW(F::varlen_attention(q, k, v, from_vector(std::vector<int32_t>{0, 2, 4}), ck, 3, 3),
               Error);  // does not cover the 5 query rows
}

// q, k, v heads [B, H, T, D] of one [B, T, 3 H D] projection (GPT-2's layout).
std::vector<Tensor> packed_heads(const Tensor& qkv, int64_t h) {
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  std::vector<Tensor> r;
  for (const Tensor& x : kiln::split(qkv, c, 2))
    r.push_back(x.reshape({b, t, h, c / h}).transpose(1, 2));
  return r;
}

// Base address of t's storage (equal for two tensors sharing one).
uintptr_t storage_base(const Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) -
         static_cast<uintptr_t>(t.storage_offset() * static_cast<int64_t>(t.element_size()));
}

// Note [Packed QKV gradients] (src/autograd/vjp_attention.cpp): the heads of one projection go to
// the kernels as they are; o is [B, T, H, D] memory; dq, dk, dv are views of one [B, T, 3 H D]
// buffer; every value matches the float64 math path.
TEST(FlashAttentionCpu, PackedQkvViewsAndGradientLayout) {
  const int64_t b = 2, t = 9, h = 3, d = 8, c = h * d;
  for (bool causal : {true, false}) {
    Tensor qkv = rnd({b, t, 3 * c}, 1100).requires_grad_();
    std::vector<Tensor> x = packed_heads(qkv, h);
    for (const Tensor& y : x) EXPECT_TRUE(detail::flash_operand(y).is_same(y));  // no copy
    Tensor o = std::get<0>(
        F::_scaled_dot_product_flash_attention(x[0], x[1], x[2], {}, 0.0, causal, std::nullopt));
    EXPECT_EQ(DimVector(o.strides()), (DimVector{t * c, d, c, 1}));
    Tensor y = o.transpose(1, 2).reshape({b, t, c});
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_EQ(y.data_ptr(), o.data_ptr());  // a view, not a copy
    // Reference: the math path on contiguous leaf copies.
    std::vector<Tensor> r;
    for (const Tensor& z : x) r.push_back(z.detach().contiguous().requires_grad_());
    Tensor ro = F::scaled_dot_product_attention(r[0], r[1], r[2], {}, 0.0, causal);
    EXPECT_LT(max_abs_diff(o, ro), 1e-12);
    // grad_out through the transpose + reshape: strided like o.
    Tensor gy = rnd({b, t, c}, 1101);
    Tensor go = gy.reshape({b, t, h, d}).transpose(1, 2);
    auto g = autograd::grad({o}, {x[0], x[1], x[2]}, {go}, true);
    auto rg = autograd::grad({ro}, {r[0], r[1], r[2]}, {go});
    for (int i = 0; i < 3; ++i) {
      EXPECT_LT(max_abs_diff(g[i], rg[i]), 1e-11) << i;
      EXPECT_EQ(DimVector(g[i].strides()), (DimVector{3 * c * t, d, 3 * c, 1})) << i;
      EXPECT_EQ(g[i].storage_offset(), i * c) << i;
      EXPECT_EQ(storage_base(g[i]), storage_base(g[0])) << i;  // one buffer
    }
    // The whole chain into the projection.
    y.backward(gy);
    Tensor want = kiln::cat(
        {rg[0].transpose(1, 2).reshape({b, t, c}), rg[1].transpose(1, 2).reshape({b, t, c}),
         rg[2].transpose(1, 2).reshape({b, t, c})},
        2);
    EXPECT_LT(max_abs_diff(qkv.grad(), want), 1e-11);
  }
}

// Transposed views, grouped-query heads, an additive mask, and a head dim with a non-unit stride
// (copied first): outputs and gradients against the float64 math path.
TEST(FlashAttentionCpu, StridedInputsMatchMathPath) {
  const int64_t b = 2, hq = 4, hk = 2, tq = 7, tk = 10, d = 8;
  for (int layout : {0, 1}) {
    auto make = [&](int64_t heads, int64_t t, uint64_t seed) {
      if (layout == 0) return rnd({b, t, heads, d}, seed).transpose(1, 2);  // [B, H, T, D] view
      return rnd({b, heads, d, t}, seed).transpose(2, 3);                   // head dim strided
    };
    Tensor q = make(hq, tq, 1200).requires_grad_(), k = make(hk, tk, 1201).requires_grad_(),
           v = make(hk, tk, 1202).requires_grad_();
    if (layout == 0)
      for (const Tensor* y : {&q, &k, &v}) EXPECT_TRUE(detail::flash_operand(*y).is_same(*y));
    else
      for (const Tensor* y : {&q, &k, &v}) EXPECT_FALSE(detail::flash_operand(*y).is_same(*y));
    Tensor mask = rnd({b, 1, tq, tk}, 1203);
    Tensor o = std::get<0>(
        F::_scaled_dot_product_flash_attention(q, k, v, mask, 0.0, false, std::nullopt, true));
    Tensor ro = F::scaled_dot_product_attention(q, k, v, mask, 0.0, false, std::nullopt, true);
    EXPECT_LT(max_abs_diff(o, ro), 1e-12) << layout;
    Tensor go = rnd({b, tq, hq, d}, 1204).transpose(1, 2);
    auto g = autograd::grad({o}, {q, k, v}, {go});
    auto rg = autograd::grad({ro}, {q, k, v}, {go});
    for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(g[i], rg[i]), 1e-11) << layout << " " << i;
  }
}

// Variable-length inputs that are views ([N, 3, H, D] packed rows): the same results as contiguous
// inputs (themselves checked against per-sequence calls above).
TEST(FlashAttentionCpu, VarlenStridedInputs) {
  const std::vector<int32_t> cq = {0, 3, 10, 15}, ck = {0, 3, 10, 15};
  const int64_t n = 15, h = 2, d = 8;
  Tensor packed = rnd({n, 3, h, d}, 1300).requires_grad_();
  Tensor q = packed.select(1, 0), k = packed.select(1, 1), v = packed.select(1, 2);
  for (const Tensor* y : {&q, &k, &v}) EXPECT_TRUE(detail::flash_operand(*y).is_same(*y));
  Tensor go = rnd({n, h, d}, 1301);
  Tensor tcq = from_vector(cq), tck = from_vector(ck);
  auto [o, lse] = F::_varlen_flash_attention(q, k, v, tcq, tck, 7, 7, 0.0, true);
  auto g = autograd::grad({o}, {q, k, v}, {go});
  std::vector<Tensor> r;
  for (const Tensor* y : {&q, &k, &v}) r.push_back(y->detach().contiguous().requires_grad_());
  auto [ro, rlse] = F::_varlen_flash_attention(r[0], r[1], r[2], tcq, tck, 7, 7, 0.0, true);
  auto rg = autograd::grad({ro}, {r[0], r[1], r[2]}, {go});
  EXPECT_LT(max_abs_diff(o, ro), 1e-12);
  EXPECT_LT(max_abs_diff(lse, rlse), 1e-12);
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(g[i], rg[i]), 1e-12) << i;
}

TEST(FlashAttentionCpu, Errors) {
  Tensor q = rnd({1, 4, 3, 8}, 1), k = rnd({1, 2, 3, 8}, 2);
  EXPECT_THROW(F::_scaled_dot_product_flash_attention(q, k, k), Error);  // heads need gqa
  EXPECT_THROW(F::_scaled_dot_product_flash_attention(q, rnd({1, 3, 3, 8}, 3), rnd({1, 3, 3, 8}, 4),
                                                      {}, 0.0, false, std::nullopt, true),
               Error);  // 4 % 3 != 0
  EXPECT_THROW(F::_scaled_dot_product_flash_attention(q, q, q, q > 0, 0.0, true), Error);
  EXPECT_THROW(F::_scaled_dot_product_flash_attention(q, q, q, {}, 1.5), Error);
  // The log-sum-exp is returned for inspection only.
  Tensor qg = q.clone().requires_grad_();
  auto [o, lse] = F::_scaled_dot_product_flash_attention(qg, q, q);
  EXPECT_THROW(lse.sum().backward(), Error);
}

}  // namespace
}  // namespace kiln
