// Op-table rows for the fused nn primitives (cross_entropy_loss + backward, native_dropout) with
// double-precision references, plus fused-vs-composite checks (F::cross_entropy against the
// log_softmax + nll_loss composite, forward and gradients) and dropout statistics.
#include <cmath>

#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "nn/functional/nn_ops.h"
#include "op_db/nn_rows_util.h"

namespace kiln::testing {
namespace {

using namespace nn_rows;
namespace F = kiln::nn::functional;
using detail::kFloatMask;

// ---------------------------------------------------------------- cross-entropy

// inputs: logits [N, C], target int64 [N], weight [C], [grad]; ints: reduction, ignore_index,
// use_weight; scalars: label_smoothing.
std::vector<Sample> ce_samples(DType, bool backward) {
  std::vector<Sample> out;
  uint64_t seed = 5;
  auto add = [&](int64_t n, int64_t c, int64_t red, int64_t ignore, bool w, double ls,
                 bool masked = false) {
    std::vector<int64_t> t = rand_ints(n, 0, std::max<int64_t>(c, 1), seed++);
    if (ignore >= 0 && n > 0) t[0] = ignore;  // one ignored row
    Tensor x = rm({n, c}, seed++ * 13, -3, 3);
    if (masked) {  // -inf logits away from the targets (masked vocabulary entries)
      std::vector<C> v = values(x);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < c; j += 3)
          if (j != t[i]) v[i * c + j] = -INFINITY;
      x = from_values(v, {n, c}, DType::Float64);
    }
    Sample s;
    s.inputs = {x, index_tensor(t, {n}), rm({c}, seed++ * 13, 0.2, 2)};
    s.keep_dtype = {false, true, false};
    if (backward) s.inputs.push_back(rm(red == 0 ? Shape{n} : Shape{}, seed++ * 13));
    s.ints = {red, ignore, w};
    s.scalars = {Scalar(ls)};
    s.desc = "[" + std::to_string(n) + ", " + std::to_string(c) + "] reduction " +
             std::to_string(red) + " ignore " + std::to_string(ignore) + (w ? " weight" : "") +
             " smoothing " + std::to_string(ls) + (masked ? " masked" : "");
    out.push_back(s);
  };
  for (int64_t red : {0, 1, 2})
    for (double ls : {0.0, 0.15}) {
      add(5, 4, red, -100, false, ls);
      add(4, 7, red, 3, true, ls);
      add(3, 1, red, -100, true, ls);
      add(0, 3, red, -100, false, ls);
      add(7, 33, red, 0, false, ls);
    }
  add(6, 9, 1, -100, true, 0.0, true);
  add(6, 9, 0, -100, false, 0.0, true);
  if (!backward) {
    add(64, 1000, 1, 5, true, 0.1);
    add(16, 5000, 0, -100, false, 0.0);
  }
  return out;
}

// Per-row losses and the reduced result of cross-entropy, in double.
Tensor ref_ce(const Vec& x, int64_t n, int64_t c, const std::vector<int64_t>& t, const Vec& w,
              const Sample& s) {
  const int64_t red = s.ints[0], ignore = s.ints[1];
  const bool use_w = s.ints[2];
  const double ls = s.scalars[0].to<double>();
  Vec loss(n);
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double m = -INFINITY;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x[i * c + j]);
    double e = 0;
    for (int64_t j = 0; j < c; ++j) e += std::exp(x[i * c + j] - m);
    const double lse = m + std::log(e);
    double l = 0;
    if (t[i] != ignore) {
      const double wt = use_w ? w[t[i]] : 1.0;
      l = (1 - ls) * wt * (lse - x[i * c + t[i]]);
      if (ls > 0) {
        double sm = 0;
        for (int64_t j = 0; j < c; ++j) sm += (use_w ? w[j] : 1.0) * (lse - x[i * c + j]);
        l += ls / static_cast<double>(c) * sm;
      }
      wsum += wt;
    }
    loss[i] = l;
    sum += l;
  }
  if (red == 0) return tens(loss, {n});
  return tens({red == 1 ? sum / wsum : sum}, {});
}

Tensor ce_call(const std::vector<Tensor>& in, const Sample& s) {
  return std::get<0>(detail::cross_entropy_loss_op(
      in[0], in[1], s.ints[2] ? in[2] : Tensor(), s.ints[1], s.ints[0], s.scalars[0].to<double>()));
}

std::vector<OpRow> ce_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = mk(
        "nn.cross_entropy_loss", {OpId::CrossEntropyLoss}, kFloatMask,
        [](DType dt) { return ce_samples(dt, false); }, &ce_call,
        [](const std::vector<Tensor>& in, const Sample& s) {
          return ref_ce(arr(in[0]).v, in[0].size(0), in[0].size(1), ints(in[1]), arr(in[2]).v, s);
        },
        2.0);
    r.errors = {err("out of bounds",
                    [] {
                      return detail::cross_entropy_loss_op(
                          zeros({2, 3}), from_vector<int64_t>({0, 3}, {2}), {}, -100, 1, 0);
                    }),
                err("expected target of shape",
                    [] {
                      return detail::cross_entropy_loss_op(
                          zeros({2, 3}), from_vector<int64_t>({0}, {1}), {}, -100, 1, 0);
                    }),
                err("expected 2-D logits",
                    [] {
                      return detail::cross_entropy_loss_op(
                          zeros({3}), from_vector<int64_t>({0}, {1}), {}, -100, 1, 0);
                    }),
                err("label_smoothing",
                    [] {
                      return detail::cross_entropy_loss_op(
                          zeros({2, 3}), from_vector<int64_t>({0, 1}, {2}), {}, -100, 1, 1.5);
                    }),
                err("weight should be",
                    [] {
                      return detail::cross_entropy_loss_op(
                          zeros({2, 3}), from_vector<int64_t>({0, 1}, {2}), ones({2}), -100, 1, 0);
                    }),
                err("int64 or int32", [] {
                  return detail::cross_entropy_loss_op(zeros({2, 3}), zeros({2}), {}, -100, 1, 0);
                })};
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.cross_entropy_loss_backward", {OpId::CrossEntropyLossBackward}, kFloatMask,
      [](DType dt) { return ce_samples(dt, true); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor w = s.ints[2] ? in[2] : Tensor();
        const double ls = s.scalars[0].to<double>();
        auto [loss, lse] = detail::cross_entropy_loss_op(in[0], in[1], w, s.ints[1], s.ints[0], ls);
        return detail::cross_entropy_loss_backward_op(in[3], in[0], in[1], lse, w, s.ints[1],
                                                      s.ints[0], ls);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        const int64_t n = in[0].size(0), c = in[0].size(1);
        const auto t = ints(in[1]);
        const Vec w = arr(in[2]).v;
        auto f = [&](const Vec& x) { return arr(ref_ce(x, n, c, t, w, s)).v; };
        Vec x = arr(in[0]).v;
        for (double& v : x)  // masked (-inf) logits: their gradient is 0, as the stencil's
          if (std::isinf(v)) v = -1e30;
        return vjp_ref(f, tens(x, {n, c}), in[3]);
      },
      4.0));
  return rows;
}

// ---------------------------------------------------------------- native_dropout

constexpr uint64_t kSeed = 0x1234abcd5678ull, kOffset = 77;

std::vector<Sample> dropout_samples(DType) {
  std::vector<Sample> out;
  uint64_t seed = 21;
  for (Shape shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{0, 4}, Shape{2, 3, 9}, Shape{300, 41}})
    for (double p : {0.0, 0.3, 0.9, 1.0}) {
      Sample s;
      s.inputs = {rm(shape, seed++)};
      s.scalars = {Scalar(p)};
      s.desc = shape_str(shape) + " p " + std::to_string(p);
      out.push_back(s);
    }
  return out;
}

// The mask from the Philox words directly (Note [Fused dropout]).
std::vector<bool> ref_mask(int64_t n, double p) {
  std::vector<bool> m(n);
  for (int64_t i = 0; i < n; ++i)
    m[i] = rng_uniform_float(philox_word(kSeed, kOffset, static_cast<uint64_t>(i))) <
           static_cast<float>(1.0 - p);
  return m;
}

std::vector<OpRow> dropout_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = mk(
        "nn.native_dropout", {OpId::NativeDropout}, kFloatMask, &dropout_samples,
        [](const std::vector<Tensor>& in, const Sample& s) {
          return std::get<0>(
              detail::native_dropout_op(in[0], s.scalars[0].to<double>(), kSeed, kOffset));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const double p = s.scalars[0].to<double>();
          Vec x = arr(in[0]).v;
          const std::vector<bool> m = ref_mask(static_cast<int64_t>(x.size()), p);
          for (size_t i = 0; i < x.size(); ++i) x[i] = m[i] && p < 1 ? x[i] / (1 - p) : 0.0;
          return tens(x, in[0].sizes().vec());
        });
    r.errors = {err("between 0 and 1", [] { return detail::native_dropout_op(ones({3}), 1.5); }),
                err("floating point", [] { return detail::native_dropout_op(arange(3), 0.5); })};
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.native_dropout.mask", {OpId::NativeDropout}, kFloatMask, &dropout_samples,
      [](const std::vector<Tensor>& in, const Sample& s) {
        return std::get<1>(
            detail::native_dropout_op(in[0], s.scalars[0].to<double>(), kSeed, kOffset));
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        const std::vector<bool> m = ref_mask(in[0].numel(), s.scalars[0].to<double>());
        std::vector<C> v(m.begin(), m.end());
        return from_values(v, in[0].sizes(), DType::Bool);
      }));
  return rows;
}

std::vector<OpRow> fused_rows() {
  std::vector<OpRow> rows = ce_rows();
  for (auto& r : dropout_rows()) rows.push_back(std::move(r));
  return rows;
}
KILN_OP_ROWS(fused_rows);

// ---------------------------------------------------------------- fused vs composite

// F::cross_entropy (fused for class indices) against the composite: values, and the gradients
// of the logits and of the class weights through autograd.
TEST(NnFused, CrossEntropyMatchesComposite) {
  uint64_t seed = 100;
  for (DType dt : {DType::Float64, DType::Float32})
    for (Shape shape : {Shape{6, 5}, Shape{3, 4, 2, 3}, Shape{7}})
      for (int64_t red : {0, 1, 2})
        for (double ls : {0.0, 0.3})
          for (bool use_w : {false, true}) {
            SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dt) + " reduction " +
                         std::to_string(red) + " ls " + std::to_string(ls) +
                         (use_w ? " weight" : ""));
            const int64_t c = shape.size() == 1 ? shape[0] : shape[1];
            Shape ts;
            if (shape.size() > 1) {
              ts.push_back(shape[0]);
              for (size_t d = 2; d < shape.size(); ++d) ts.push_back(shape[d]);
            }
            std::vector<int64_t> t = rand_ints(numel(ts), 0, c, seed++);
            if (t.size() > 1) t[1] = 1;  // ignore_index = 1 hits a row
            Tensor target = index_tensor(t, ts);
            Tensor x0 = rm(shape, seed++).to(dt), w0 = rm({c}, seed++, 0.3, 2).to(dt);
            Tensor grads[2][2];
            Tensor loss[2];
            for (int k = 0; k < 2; ++k) {
              Tensor x = x0.clone().requires_grad_(true);
              Tensor w = use_w ? w0.clone().requires_grad_(true) : Tensor();
              const F::Reduction r = red == 0   ? F::Reduction::None
                                     : red == 1 ? F::Reduction::Mean
                                                : F::Reduction::Sum;
              loss[k] = k == 0 ? F::cross_entropy(x, target, w, 1, r, ls)
                               : detail::cross_entropy_composite(x, target, w, 1, red, ls);
              Tensor go = rm(loss[k].sizes().vec(), 7).to(dt);
              auto g = autograd::grad(
                  {loss[k]}, use_w ? autograd::variable_list{x, w} : autograd::variable_list{x},
                  {go});
              grads[k][0] = g[0];
              if (use_w) grads[k][1] = g[1];
            }
            const double tol = dt == DType::Float64 ? 1e-10 : 2e-5;
            EXPECT_TRUE(close(loss[0], loss[1], tol, tol));
            EXPECT_TRUE(close(grads[0][0], grads[1][0], tol, tol));
            if (use_w) {
              EXPECT_TRUE(close(grads[0][1], grads[1][1], tol, tol));
            }
          }
}

// Gradients of F::cross_entropy in float64 by finite differences, first and second order (the
// vjp's composite path), with the class weights differentiated too.
TEST(NnFused, CrossEntropyGradcheck) {
  Tensor target = from_vector<int64_t>({2, 0, 3, 1}, {4});
  for (int64_t red : {0, 1, 2})
    for (double ls : {0.0, 0.2}) {
      SCOPED_TRACE("reduction " + std::to_string(red) + " ls " + std::to_string(ls));
      Tensor x = rm({4, 4}, 31 + red).requires_grad_(true);
      Tensor w = rm({4}, 41, 0.5, 2).requires_grad_(true);
      autograd::Func f = [&](const autograd::variable_list& v) {
        const F::Reduction r = red == 0   ? F::Reduction::None
                               : red == 1 ? F::Reduction::Mean
                                          : F::Reduction::Sum;
        return F::cross_entropy(v[0], target, v[1], 0, r, ls);
      };
      EXPECT_TRUE(autograd::gradcheck(f, {x, w}));
      EXPECT_TRUE(autograd::gradgradcheck(f, {x, w}));
    }
}

// F::dropout in training: kept fraction near 1 - p, kept values scaled, gradient = mask * scale.
TEST(NnFused, DropoutStatisticsAndGradient) {
  const int64_t n = 200000;
  for (double p : {0.1, 0.5, 0.8}) {
    Tensor x = (rm({n}, 3, 0.5, 1.5)).requires_grad_(true);
    Tensor y = F::dropout(x, p, true);
    Tensor yd = y.detach();
    const auto xv = values(x.detach()), yv = values(yd);
    int64_t kept = 0;
    bool scaled = true;
    for (int64_t i = 0; i < n; ++i) {
      if (yv[i].real() != 0) {
        ++kept;
        scaled &= std::abs(yv[i].real() - xv[i].real() / (1 - p)) <= 1e-12 * std::abs(yv[i].real());
      }
    }
    EXPECT_TRUE(scaled);
    const double sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(static_cast<double>(kept), n * (1 - p), 6 * sd) << "p = " << p;
    auto g = autograd::grad({y.sum()}, {x});
    const auto gv = values(g[0]);
    bool ok = true;
    for (int64_t i = 0; i < n; ++i)
      ok &= gv[i].real() == (yv[i].real() != 0 ? 1.0 / (1 - p) : 0.0) ||
            std::abs(gv[i].real() - (yv[i].real() != 0 ? 1.0 / (1 - p) : 0.0)) < 1e-12;
    EXPECT_TRUE(ok);
  }
  // Eval mode and p = 0 return the input itself.
  Tensor x = ones({4});
  EXPECT_TRUE(F::dropout(x, 0.5, false).is_same(x));
}

// Two calls draw different masks (the generator advances by the reserved counters).
TEST(NnFused, DropoutCallsAdvanceTheGenerator) {
  Tensor x = ones({1000});
  auto [y1, m1] = detail::native_dropout_op(x, 0.5);
  auto [y2, m2] = detail::native_dropout_op(x, 0.5);
  EXPECT_FALSE(kiln::equal(m1, m2));
}

}  // namespace
}  // namespace kiln::testing
