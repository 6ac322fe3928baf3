// Op-table rows for the nn primitives (src/ops/defs/nn.def) and the functional calls over them:
// softmax family, layer/rms norm, nll_loss/cross_entropy, embedding, convolution, pooling,
// im2col. References are the plain double loops of nn_rows_util.h; backward ops are checked
// against central-difference vjps of those references.
#include "kiln/nn/functional.h"
#include "nn/functional/nn_ops.h"
#include "op_db/nn_rows_util.h"

namespace kiln::testing {
namespace {

using namespace nn_rows;
namespace F = kiln::nn::functional;
using detail::kFloatMask;
using detail::kIntMask;
using F::Reduction;

// ---------------------------------------------------------------- softmax family

std::vector<Sample> softmax_samples(DType dt, bool large = true) {
  std::vector<Sample> out;
  uint64_t seed = 11;
  auto add = [&](Shape shape, int64_t dim) {
    Sample s;
    s.inputs = {rm(shape, seed++ * 31, -4, 4)};
    s.ints = {dim};
    s.desc = shape_str(shape) + " dim " + std::to_string(dim);
    out.push_back(s);
  };
  add({}, 0);
  add({5}, 0);
  add({3, 4}, 1);
  add({3, 4}, 0);
  add({3, 4}, -1);
  add({2, 3, 5}, 1);
  add({2, 17, 3}, 1);
  add({0, 3}, 1);
  add({3, 0}, 1);
  add({7, 33}, 1);
  if (large) {
    add({64, 1000}, 1);
    add({40, 70, 3}, 1);
  }
  if (is_floating_point(dt)) {
    const double inf = INFINITY, nan = NAN;
    Sample s;
    s.inputs = {tens({0, -inf, 1, 2, inf, 1, 2, 3, -inf, -inf, -inf, -inf, nan, 1, 2, 3}, {4, 4})};
    s.ints = {1};
    s.desc = "special values";
    out.push_back(s);
  }
  return out;
}

std::vector<OpRow> softmax_rows() {
  std::vector<OpRow> rows;
  auto ref = [](int mode, bool neg) {
    return [mode, neg](const std::vector<Tensor>& in, const Sample& s) {
      Arr x = arr(in[0]);
      if (neg)
        for (double& v : x.v) v = -v;
      Arr y = ref_softmax(x, s.ints[0], mode);
      return tens(y.v, y.shape);
    };
  };
  {
    OpRow r = mk(
        "nn.softmax", {OpId::Softmax}, kFloatMask, [](DType dt) { return softmax_samples(dt); },
        [](const std::vector<Tensor>& in, const Sample& s) { return F::softmax(in[0], s.ints[0]); },
        ref(0, false));
    r.errors = {err("dimension out of range",
                    [] {
                      return F::softmax(ones({2, 3}), 2);
                    }),
                err("floating point", [] { return F::softmax(arange(4), 0); })};
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.log_softmax", {OpId::LogSoftmax}, kFloatMask,
      [](DType dt) { return softmax_samples(dt); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::log_softmax(in[0], s.ints[0]);
      },
      ref(1, false)));
  rows.push_back(mk(
      "nn.softmin", {OpId::Softmax}, kFloatMask, [](DType dt) { return softmax_samples(dt); },
      [](const std::vector<Tensor>& in, const Sample& s) { return F::softmin(in[0], s.ints[0]); },
      ref(0, true)));
  rows.push_back(mk(
      "nn.softmax.dtype_float64", {OpId::Softmax}, kFloatMask | kIntMask,
      [](DType dt) { return softmax_samples(dt, false); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::softmax(in[0], s.ints[0], kFloat64);
      },
      ref(0, false)));
  // Backward: grad (input 1) against the forward output of input 0.
  for (int mode = 0; mode < 2; ++mode) {
    auto samples = [](DType dt) {
      std::vector<Sample> v;
      for (Sample s : softmax_samples(dt, false)) {
        if (s.desc == "special values") continue;
        s.inputs.push_back(rm(s.inputs[0].sizes().vec(), 77));
        v.push_back(s);
      }
      return v;
    };
    rows.push_back(mk(
        mode == 0 ? "nn.softmax_backward" : "nn.log_softmax_backward",
        {mode == 0 ? OpId::SoftmaxBackward : OpId::LogSoftmaxBackward}, kFloatMask, samples,
        [mode](const std::vector<Tensor>& in, const Sample& s) {
          const int64_t d = s.ints[0];
          Tensor y = mode == 0 ? detail::softmax_op(in[0], d) : detail::log_softmax_op(in[0], d);
          return mode == 0 ? detail::softmax_backward_op(in[1], y, d)
                           : detail::log_softmax_backward_op(in[1], y, d);
        },
        [mode](const std::vector<Tensor>& in, const Sample& s) {
          const Shape shape = in[0].sizes().vec();
          auto f = [&](const Vec& x) { return ref_softmax({x, shape}, s.ints[0], mode).v; };
          return vjp_ref(f, in[0], in[1]);
        },
        4.0));
  }
  return rows;
}

// ---------------------------------------------------------------- layer / rms norm

// inputs: x, weight, bias; ints: normalized_shape; scalars: has_weight, has_bias.
std::vector<Sample> norm_samples(DType, bool backward) {
  std::vector<Sample> out;
  uint64_t seed = 5;
  auto add = [&](Shape x, Shape ns, bool w, bool b) {
    Sample s;
    s.inputs = {rm(x, seed++ * 13), rm(ns, seed++ * 13, 0.5, 1.5), rm(ns, seed++ * 13)};
    if (backward) s.inputs.push_back(rm(x, seed++ * 13));
    s.ints = ns;
    s.scalars = {Scalar(w), Scalar(b)};
    s.desc = shape_str(x) + " over " + shape_str(ns) + (w ? " weight" : "") + (b ? " bias" : "");
    out.push_back(s);
  };
  add({4, 8}, {8}, true, true);
  add({2, 3, 5}, {3, 5}, true, false);
  add({2, 3, 5}, {5}, false, true);
  add({5}, {5}, false, false);
  add({0, 4}, {4}, true, true);
  add({3, 40}, {40}, true, true);
  if (!backward) {
    add({3, 1000}, {1000}, true, true);
    add({300, 70}, {70}, true, false);
  }
  return out;
}
Tensor opt(const std::vector<Tensor>& in, const Sample& s, int k) {
  return s.scalars[k - 1].to<bool>() ? in[k] : Tensor();
}
int64_t prod(const std::vector<int64_t>& v) { return numel(v); }

std::vector<OpRow> norm_rows() {
  std::vector<OpRow> rows;
  const double eps = 1e-5;
  auto fwd_ref = [eps](bool center) {
    return [eps, center](const std::vector<Tensor>& in, const Sample& s) {
      Vec w = arr(in[1]).v, b = arr(in[2]).v;
      const bool hw = s.scalars[0].to<bool>(), hb = center && s.scalars[1].to<bool>();
      return tens(
          ref_norm(arr(in[0]).v, prod(s.ints), hw ? &w : nullptr, hb ? &b : nullptr, eps, center),
          in[0].sizes().vec());
    };
  };
  {
    OpRow r = mk(
        "nn.layer_norm", {OpId::LayerNorm}, kFloatMask,
        [](DType dt) { return norm_samples(dt, false); },
        [eps](const std::vector<Tensor>& in, const Sample& s) {
          return F::layer_norm(in[0], s.ints, opt(in, s, 1), opt(in, s, 2), eps);
        },
        fwd_ref(true));
    r.errors = {err("normalized_shape",
                    [] {
                      return F::layer_norm(ones({2, 3}), {4});
                    }),
                err("weight of shape",
                    [] {
                      return F::layer_norm(ones({2, 3}), {3}, ones({4}));
                    }),
                err("floating point", [] {
                  return F::layer_norm(arange(6).reshape({2, 3}), {3});
                })};
    rows.push_back(r);
  }
  {
    OpRow r = mk(
        "nn.rms_norm", {OpId::RmsNorm}, kFloatMask,
        [](DType dt) { return norm_samples(dt, false); },
        [eps](const std::vector<Tensor>& in, const Sample& s) {
          return F::rms_norm(in[0], s.ints, opt(in, s, 1), eps);
        },
        fwd_ref(false));
    r.errors = {err("normalized_shape", [] { return F::rms_norm(ones({2, 3}), {2}); })};
    rows.push_back(r);
  }
  // Backward rows: which = 0 input, 1 weight, 2 bias gradient.
  const char* names[2][3] = {{"nn.layer_norm_backward.input", "nn.layer_norm_backward.weight",
                              "nn.layer_norm_backward.bias"},
                             {"nn.rms_norm_backward.input", "nn.rms_norm_backward.weight", ""}};
  for (int center = 1; center >= 0; --center)
    for (int which = 0; which < (center ? 3 : 2); ++which) {
      auto samples = [which](DType dt) {
        std::vector<Sample> v;
        for (Sample s : norm_samples(dt, true)) {
          if (which == 1) s.scalars[0] = Scalar(true);
          if (which == 2) s.scalars[1] = Scalar(true);
          v.push_back(s);
        }
        return v;
      };
      auto op = [center, which, eps](const std::vector<Tensor>& in, const Sample& s) {
        const int64_t m = prod(s.ints);
        Tensor w = opt(in, s, 1), b = opt(in, s, 2);
        if (center) {
          auto [y, mean, rstd] = detail::layer_norm_op(in[0], m, w, b, eps);
          auto g = detail::layer_norm_backward_op(in[3], in[0], mean, rstd, m, w, b.defined());
          return which == 0 ? std::get<0>(g) : which == 1 ? std::get<1>(g) : std::get<2>(g);
        }
        auto [y, rstd] = detail::rms_norm_op(in[0], m, w, eps);
        auto g = detail::rms_norm_backward_op(in[3], in[0], rstd, m, w);
        return which == 0 ? std::get<0>(g) : std::get<1>(g);
      };
      auto ref = [center, which, eps](const std::vector<Tensor>& in, const Sample& s) {
        const int64_t m = prod(s.ints);
        Vec x = arr(in[0]).v, w = arr(in[1]).v, b = arr(in[2]).v;
        const bool hw = s.scalars[0].to<bool>(), hb = center && s.scalars[1].to<bool>();
        auto f = [&](const Vec& p) {
          const Vec& xx = which == 0 ? p : x;
          const Vec& ww = which == 1 ? p : w;
          const Vec& bb = which == 2 ? p : b;
          return ref_norm(xx, m, hw ? &ww : nullptr, hb ? &bb : nullptr, eps, center);
        };
        return vjp_ref(f, in[which], in[3]);
      };
      rows.push_back(mk(names[1 - center][which],
                        {center ? OpId::LayerNormBackward : OpId::RmsNormBackward}, kFloatMask,
                        samples, op, ref, 4.0));
    }
  return rows;
}

// ---------------------------------------------------------------- nll / cross entropy

// inputs: input, target (int64), weight [C], [grad]; ints: reduction, ignore_index, use_weight.
std::vector<Sample> nll_samples(DType, bool log_probs, bool backward) {
  std::vector<Sample> out;
  uint64_t seed = 3;
  auto add = [&](Shape x, int64_t red, int64_t ignore, bool w) {
    const int64_t c = x.size() == 1 ? x[0] : x[1];
    Shape ts;
    if (x.size() > 1) {
      ts.push_back(x[0]);
      for (size_t d = 2; d < x.size(); ++d) ts.push_back(x[d]);
    }
    std::vector<int64_t> t = rand_ints(numel(ts), 0, c, seed++);
    if (ignore >= 0 && !t.empty()) t[0] = ignore;  // one ignored target
    if (ignore < 0 && t.size() > 1) t[1] = ignore;
    Sample s;
    s.inputs = {rm(x, seed++ * 17, log_probs ? -4 : -2, log_probs ? 0 : 2), index_tensor(t, ts),
                rm({c}, seed++ * 17, 0.2, 2)};
    s.keep_dtype = {false, true, false};
    if (backward) s.inputs.push_back(rm(red == 0 ? ts : Shape{}, seed++ * 17));
    s.ints = {red, ignore, w};
    s.desc = shape_str(x) + " reduction " + std::to_string(red) + " ignore " +
             std::to_string(ignore) + (w ? " weight" : "");
    out.push_back(s);
  };
  for (int64_t red : {0, 1, 2}) {
    add({5, 4}, red, -100, false);
    add({5, 4}, red, 2, true);
    add({2, 3, 2, 2}, red, -100, true);
    add({4}, red, -100, false);
    add({0, 3}, red, -100, false);
  }
  return out;
}

Reduction red_of(int64_t r) {
  return r == 0 ? Reduction::None : r == 1 ? Reduction::Mean : Reduction::Sum;
}

// -w[t] * x[t] per target (0 at ignored ones), reduced; x as [N, C, K].
Tensor ref_nll(const Arr& x, const std::vector<int64_t>& t, const Vec& w, const Sample& s,
               const Shape& tshape) {
  const int64_t c = x.shape.size() == 1 ? x.shape[0] : x.shape[1];
  const int64_t n = x.shape.size() == 1 ? 1 : x.shape[0];
  const int64_t k = c == 0 || n == 0 ? 1 : static_cast<int64_t>(x.v.size()) / (n * c);
  Vec loss;
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t tt = t[i * k + j];
      double l = 0, wt = 0;
      if (tt != s.ints[1]) {
        wt = s.ints[2] ? w[tt] : 1.0;
        l = -wt * x.v[(i * c + tt) * k + j];
      }
      loss.push_back(l), sum += l, wsum += wt;
    }
  if (s.ints[0] == 0) return tens(loss, tshape);
  return tens({s.ints[0] == 1 ? sum / wsum : sum}, {});
}

std::vector<OpRow> loss_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = mk(
        "nn.nll_loss", {OpId::NllLoss}, kFloatMask,
        [](DType dt) { return nll_samples(dt, true, false); },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return F::nll_loss(in[0], in[1], s.ints[2] ? in[2] : Tensor(), s.ints[1],
                             red_of(s.ints[0]));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return ref_nll(arr(in[0]), ints(in[1]), arr(in[2]).v, s, in[1].sizes().vec());
        });
    r.errors = {err("out of bounds",
                    [] {
                      return F::nll_loss(zeros({2, 3}), from_vector<int64_t>({0, 3}, {2}));
                    }),
                err("expected target of shape",
                    [] {
                      return F::nll_loss(zeros({2, 3}), from_vector<int64_t>({0, 1, 2}, {3}));
                    }),
                err("int64 or int32",
                    [] {
                      return F::nll_loss(zeros({2, 3}), zeros({2}));
                    }),
                err("weight should be", [] {
                  return F::nll_loss(zeros({2, 3}), from_vector<int64_t>({0, 1}, {2}), ones({2}));
                })};
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.nll_loss_backward", {OpId::NllLossBackward}, kFloatMask,
      [](DType dt) { return nll_samples(dt, true, true); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor w = s.ints[2] ? in[2] : Tensor();
        auto [loss, total] = detail::nll_loss_op(in[0], in[1], w, s.ints[1], s.ints[0]);
        return detail::nll_loss_backward_op(in[3], in[0], in[1], w, s.ints[1], s.ints[0], total);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        const Shape xs = in[0].sizes().vec(), ts = in[1].sizes().vec();
        const auto t = ints(in[1]);
        const Vec w = arr(in[2]).v;
        auto f = [&](const Vec& x) { return arr(ref_nll({x, xs}, t, w, s, ts)).v; };
        return vjp_ref(f, in[0], in[3]);
      },
      4.0));
  // cross_entropy with class indices (+ label smoothing) and with class probabilities.
  for (double ls : {0.0, 0.2}) {
    rows.push_back(mk(
        ls == 0 ? "nn.cross_entropy" : "nn.cross_entropy.label_smoothing",
        {OpId::LogSoftmax, OpId::NllLoss}, kFloatMask,
        [](DType dt) { return nll_samples(dt, false, false); },
        [ls](const std::vector<Tensor>& in, const Sample& s) {
          return F::cross_entropy(in[0], in[1], s.ints[2] ? in[2] : Tensor(), s.ints[1],
                                  red_of(s.ints[0]), ls);
        },
        [ls](const std::vector<Tensor>& in, const Sample& s) {
          Arr x = arr(in[0]);
          const int64_t cdim = x.shape.size() == 1 ? 0 : 1;
          const int64_t c = x.shape[cdim];
          Arr lp = ref_softmax(x, cdim, 1);
          const auto t = ints(in[1]);
          const Vec w = arr(in[2]).v;
          const int64_t n = cdim == 0 ? 1 : x.shape[0];
          const int64_t k = c == 0 || n == 0 ? 1 : static_cast<int64_t>(x.v.size()) / (n * c);
          Vec loss;
          double sum = 0, wsum = 0;
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < k; ++j) {
              const int64_t tt = t[i * k + j];
              double l = 0;
              if (tt != s.ints[1]) {
                const double wt = s.ints[2] ? w[tt] : 1.0;
                double smooth = 0;
                for (int64_t cc = 0; cc < c; ++cc)
                  smooth -= (s.ints[2] ? w[cc] : 1.0) * lp.v[(i * c + cc) * k + j];
                l = (1 - ls) * -wt * lp.v[(i * c + tt) * k + j] + ls / c * smooth;
                wsum += wt;
              }
              loss.push_back(l), sum += l;
            }
          if (s.ints[0] == 0) return tens(loss, in[1].sizes().vec());
          return tens({s.ints[0] == 1 ? sum / wsum : sum}, {});
        }));
  }
  rows.push_back(mk(
      "nn.cross_entropy.probabilities", {OpId::LogSoftmax}, kFloatMask,
      [](DType) {
        std::vector<Sample> v;
        uint64_t seed = 9;
        for (int64_t red : {0, 1, 2})
          for (Shape x : {Shape{5, 4}, Shape{2, 3, 4}, Shape{4}}) {
            Sample s;
            s.inputs = {rm(x, seed++), rm(x, seed++, 0, 1),
                        rm({x.size() == 1 ? x[0] : x[1]}, seed++, 0.5, 2)};
            s.ints = {red, static_cast<int64_t>(seed % 2)};
            s.desc = shape_str(x) + " reduction " + std::to_string(red);
            v.push_back(s);
          }
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::cross_entropy(in[0], in[1], s.ints[1] ? in[2] : Tensor(), -100, red_of(s.ints[0]),
                                0.1);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr x = arr(in[0]), t = arr(in[1]);
        const Vec w = arr(in[2]).v;
        const int64_t cdim = x.shape.size() == 1 ? 0 : 1, c = x.shape[cdim];
        const int64_t n = cdim == 0 ? 1 : x.shape[0];
        const int64_t k = static_cast<int64_t>(x.v.size()) / (n * c);
        Arr lp = ref_softmax(x, cdim, 1);
        Vec loss;
        double sum = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < k; ++j) {
            double l = 0;
            for (int64_t cc = 0; cc < c; ++cc) {
              const int64_t at = (i * c + cc) * k + j;
              l -= (s.ints[1] ? w[cc] : 1.0) * (t.v[at] * 0.9 + 0.1 / c) * lp.v[at];
            }
            loss.push_back(l), sum += l;
          }
        Shape ls = x.shape;
        ls.erase(ls.begin() + cdim);
        if (s.ints[0] == 0) return tens(loss, ls);
        return tens({s.ints[0] == 1 ? sum / (n * k) : sum}, {});
      }));
  return rows;
}

std::vector<OpRow> nn_rows() {
  std::vector<OpRow> rows;
  for (auto* f : {&softmax_rows, &norm_rows, &loss_rows})
    for (auto& r : (*f)()) rows.push_back(std::move(r));
  return rows;
}
KILN_OP_ROWS(nn_rows);
}  // namespace

}  // namespace kiln::testing
