// Op-table rows for the nn convolution, pooling, im2col and embedding primitives (second half of
// the nn table; nn_rows_test.cpp has softmax/norms/losses). References: nn_rows_util.h.
#include "kiln/nn/functional.h"
#include "nn/functional/nn_ops.h"
#include "op_db/nn_rows_util.h"

namespace kiln::testing {
namespace {

using namespace nn_rows;
namespace F = kiln::nn::functional;
using detail::kFloatMask;
using detail::kIntMask;

// ---------------------------------------------------------------- convolution

// inputs: x, w, bias, [grad]; ints: stride[nd], padding[nd], dilation[nd], groups.
struct ConvCase {
  Shape x, w;
  Shape stride, padding, dilation;
  int64_t groups = 1;
};
Sample conv_sample(const ConvCase& c, uint64_t seed, bool bias, bool transposed = false) {
  Sample s;
  const int64_t nbias = transposed ? c.w[1] * c.groups : c.w[0];
  s.inputs = {rm(c.x, seed * 3 + 1), rm(c.w, seed * 3 + 2, -1, 1), rm({nbias}, seed * 3 + 3)};
  for (const Shape* v : {&c.stride, &c.padding, &c.dilation})
    for (int64_t e : *v) s.ints.push_back(e);
  s.ints.push_back(c.groups);
  s.flag = bias;
  s.desc = "x " + shape_str(c.x) + " w " + shape_str(c.w) + " stride " + shape_str(c.stride) +
           " pad " + shape_str(c.padding) + " dil " + shape_str(c.dilation) + " groups " +
           std::to_string(c.groups) + (bias ? " bias" : "");
  return s;
}
ConvArgs conv_args(const Sample& s, int64_t nd) {
  ConvArgs a;
  a.stride.assign(s.ints.begin(), s.ints.begin() + nd);
  a.padding.assign(s.ints.begin() + nd, s.ints.begin() + 2 * nd);
  a.dilation.assign(s.ints.begin() + 2 * nd, s.ints.begin() + 3 * nd);
  a.groups = s.ints[3 * nd];
  return a;
}
IntArrayRef part(const Sample& s, int64_t nd, int k) {
  return IntArrayRef(s.ints.data() + k * nd, nd);
}

std::vector<ConvCase> conv_cases(int nd) {
  auto sp = [nd](std::initializer_list<int64_t> v) { return Shape(v.begin(), v.begin() + nd); };
  auto rep = [nd](int64_t v) { return Shape(nd, v); };
  auto x = [&](int64_t n, int64_t c, std::initializer_list<int64_t> s) {
    Shape r{n, c};
    for (int64_t e : sp(s)) r.push_back(e);
    return r;
  };
  return {
      {x(2, 3, {7, 6, 5}), x(4, 3, {3, 3, 2}), rep(1), rep(0), rep(1), 1},
      {x(1, 2, {8, 9, 6}), x(3, 2, {3, 2, 3}), rep(2), rep(1), rep(1), 1},
      {x(2, 2, {9, 9, 7}), x(2, 2, {3, 3, 2}), rep(1), rep(2), rep(2), 1},
      {x(2, 4, {5, 5, 4}), x(6, 2, {3, 3, 3}), rep(1), rep(1), rep(1), 2},
      {x(2, 5, {4, 4, 3}), x(3, 5, {1, 1, 1}), rep(1), rep(0), rep(1), 1},
      {x(0, 3, {5, 5, 4}), x(2, 3, {3, 3, 3}), rep(1), rep(1), rep(1), 1},
      {x(1, 3, {6, 6, 4}), x(3, 1, {3, 3, 3}), rep(1), rep(1), rep(1), 3},
      {x(2, 16, {20, 20, 5}), x(8, 16, {3, 3, 3}), rep(1), rep(1), rep(1), 1},
  };
}

std::vector<OpRow> conv_rows() {
  std::vector<OpRow> rows;
  for (int nd = 1; nd <= 3; ++nd) {
    auto samples = [nd](DType) {
      std::vector<Sample> v;
      uint64_t seed = 1;
      for (const ConvCase& c : conv_cases(nd)) {
        if (nd == 3 && c.x[1] == 16) continue;  // large 3-D case: slow reference
        const bool bias = seed % 2 == 0;
        v.push_back(conv_sample(c, seed++, bias));
      }
      return v;
    };
    auto op = [nd](const std::vector<Tensor>& in, const Sample& s) {
      Tensor b = s.flag ? in[2] : Tensor();
      if (nd == 1)
        return F::conv1d(in[0], in[1], b, part(s, nd, 0), part(s, nd, 1), part(s, nd, 2),
                         s.ints[3 * nd]);
      if (nd == 2)
        return F::conv2d(in[0], in[1], b, part(s, nd, 0), part(s, nd, 1), part(s, nd, 2),
                         s.ints[3 * nd]);
      return F::conv3d(in[0], in[1], b, part(s, nd, 0), part(s, nd, 1), part(s, nd, 2),
                       s.ints[3 * nd]);
    };
    auto ref = [nd](const std::vector<Tensor>& in, const Sample& s) {
      Vec b = arr(in[2]).v;
      Arr y = ref_conv(arr(in[0]), arr(in[1]), s.flag ? &b : nullptr, conv_args(s, nd));
      return tens(y.v, y.shape);
    };
    OpRow r = mk("nn.conv" + std::to_string(nd) + "d", {OpId::Convolution}, kFloatMask, samples, op,
                 ref, 4.0);
    if (nd == 2)
      r.errors = {err("channels",
                      [] {
                        return F::conv2d(ones({1, 3, 5, 5}), ones({2, 2, 3, 3}));
                      }),
                  err("divisible by groups",
                      [] {
                        return F::conv2d(ones({1, 4, 5, 5}), ones({3, 2, 3, 3}), {}, 1, 0, 1, 2);
                      }),
                  err("kernel size",
                      [] {
                        return F::conv2d(ones({1, 1, 2, 2}), ones({1, 1, 3, 3}));
                      }),
                  err("stride must be positive",
                      [] {
                        return F::conv2d(ones({1, 1, 5, 5}), ones({1, 1, 3, 3}), {}, 0);
                      }),
                  err("4D (batched)",
                      [] {
                        return F::conv2d(ones({5, 5}), ones({1, 1, 3, 3}));
                      }),
                  err("list of 2 values",
                      [] {
                        return F::conv2d(ones({1, 1, 5, 5}), ones({1, 1, 3, 3}), {}, {1, 1, 1});
                      }),
                  err("floating point", [] {
                    return F::conv2d(ones({1, 1, 5, 5}, kInt64), ones({1, 1, 3, 3}, kInt64));
                  })};
    rows.push_back(r);
  }
  // padding="same" (odd total padding goes to the end) and "valid".
  rows.push_back(mk(
      "nn.conv2d.padding_same", {OpId::Convolution}, kFloatMask,
      [](DType) {
        std::vector<Sample> v;
        v.push_back(conv_sample({{2, 3, 7, 6}, {2, 3, 4, 3}, {1, 1}, {0, 0}, {1, 1}, 1}, 1, true));
        v.push_back(conv_sample({{1, 2, 8, 5}, {4, 2, 3, 2}, {1, 1}, {0, 0}, {2, 3}, 1}, 2, false));
        v.push_back(conv_sample({{1, 2, 6, 6}, {2, 1, 2, 2}, {1, 1}, {0, 0}, {1, 1}, 2}, 3, true));
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::conv2d(in[0], in[1], s.flag ? in[2] : Tensor(), 1, "same", part(s, 2, 2),
                         s.ints[6]);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        // Pad the input explicitly: total d * (k - 1), left half rounded down.
        Arr x = arr(in[0]), w = arr(in[1]);
        const int64_t dil[2] = {s.ints[4], s.ints[5]};
        int64_t lo[2], hi[2];
        for (int i = 0; i < 2; ++i) {
          const int64_t total = dil[i] * (w.shape[2 + i] - 1);
          lo[i] = total / 2, hi[i] = total - total / 2;
        }
        Arr xp;
        xp.shape = {x.shape[0], x.shape[1], x.shape[2] + lo[0] + hi[0], x.shape[3] + lo[1] + hi[1]};
        xp.v.assign(numel(xp.shape), 0.0);
        for (int64_t p = 0; p < x.shape[0] * x.shape[1]; ++p)
          for (int64_t i = 0; i < x.shape[2]; ++i)
            for (int64_t j = 0; j < x.shape[3]; ++j)
              xp.v[(p * xp.shape[2] + i + lo[0]) * xp.shape[3] + j + lo[1]] =
                  x.v[(p * x.shape[2] + i) * x.shape[3] + j];
        Vec b = arr(in[2]).v;
        ConvArgs a{{1, 1}, {0, 0}, {dil[0], dil[1]}, s.ints[6]};
        Arr y = ref_conv(xp, w, s.flag ? &b : nullptr, a);
        return tens(y.v, y.shape);
      },
      4.0));
  // Transposed convolution (the ConvolutionBackwardInput kernel); ints add output_padding.
  for (int nd = 1; nd <= 2; ++nd) {
    auto samples = [nd](DType) {
      std::vector<Sample> v;
      auto sh = [nd](std::initializer_list<int64_t> l) { return Shape(l.begin(), l.begin() + nd); };
      struct TC {
        Shape x, w;
        int64_t s, p, op, d, g;
      };
      for (const TC& t : std::vector<TC>{{{2, 3, 5, 4}, {3, 2, 3, 3}, 1, 0, 0, 1, 1},
                                         {{1, 4, 4, 5}, {4, 3, 3, 2}, 2, 1, 1, 1, 1},
                                         {{2, 4, 3, 3}, {4, 1, 2, 3}, 3, 0, 2, 2, 2},
                                         {{0, 2, 3, 3}, {2, 2, 3, 3}, 1, 1, 0, 1, 1},
                                         {{1, 8, 10, 9}, {8, 4, 3, 3}, 2, 1, 1, 1, 1}}) {
        Shape x{t.x[0], t.x[1]}, w{t.w[0], t.w[1]};
        for (int64_t e : sh({t.x[2], t.x[3]})) x.push_back(e);
        for (int64_t e : sh({t.w[2], t.w[3]})) w.push_back(e);
        Sample s = conv_sample({x, w, Shape(nd, t.s), Shape(nd, t.p), Shape(nd, t.d), t.g},
                               static_cast<uint64_t>(v.size() + 1), v.size() % 2 == 0, true);
        for (int i = 0; i < nd; ++i) s.ints.push_back(t.op);
        s.desc += " output_padding " + std::to_string(t.op);
        v.push_back(s);
      }
      return v;
    };
    auto op = [nd](const std::vector<Tensor>& in, const Sample& s) {
      Tensor b = s.flag ? in[2] : Tensor();
      IntArrayRef opad(s.ints.data() + 3 * nd + 1, nd);
      if (nd == 1)
        return F::conv_transpose1d(in[0], in[1], b, part(s, nd, 0), part(s, nd, 1), opad,
                                   s.ints[3 * nd], part(s, nd, 2));
      return F::conv_transpose2d(in[0], in[1], b, part(s, nd, 0), part(s, nd, 1), opad,
                                 s.ints[3 * nd], part(s, nd, 2));
    };
    auto ref = [nd](const std::vector<Tensor>& in, const Sample& s) {
      Vec b = arr(in[2]).v;
      Shape opad(s.ints.begin() + 3 * nd + 1, s.ints.end());
      Arr y =
          ref_conv_transpose(arr(in[0]), arr(in[1]), s.flag ? &b : nullptr, conv_args(s, nd), opad);
      return tens(y.v, y.shape);
    };
    OpRow r = mk("nn.conv_transpose" + std::to_string(nd) + "d", {OpId::ConvolutionBackwardInput},
                 kFloatMask, samples, op, ref, 4.0);
    if (nd == 2)
      r.errors = {err("output padding must be smaller", [] {
        return F::conv_transpose2d(ones({1, 1, 3, 3}), ones({1, 1, 3, 3}), {}, 1, 0, 1);
      })};
    rows.push_back(r);
  }
  // The backward ops against central-difference vjps of the direct convolution (2-D cases).
  for (int which = 0; which < 2; ++which) {
    auto samples = [](DType) {
      std::vector<Sample> v;
      uint64_t seed = 40;
      for (const ConvCase& c : conv_cases(2)) {
        if (c.x[1] == 16) continue;
        Sample s = conv_sample(c, seed++, false);
        Arr y = ref_conv(arr(s.inputs[0]), arr(s.inputs[1]), nullptr, conv_args(s, 2));
        s.inputs.push_back(rm(y.shape, seed * 5));
        v.push_back(s);
      }
      return v;
    };
    auto op = [which](const std::vector<Tensor>& in, const Sample& s) {
      detail::ConvParams p;
      p.stride = {1, s.ints[0], s.ints[1]};
      p.padding = {0, s.ints[2], s.ints[3]};
      p.dilation = {1, s.ints[4], s.ints[5]};
      p.groups = s.ints[6];
      Tensor x5 = in[0].unsqueeze(2), w5 = in[1].unsqueeze(2), g5 = in[3].unsqueeze(2);
      Tensor r = which == 0 ? detail::convolution_backward_input_op(g5, w5, x5.sizes(), p)
                            : detail::convolution_backward_weight_op(g5, x5, w5.sizes(), p);
      return r.squeeze(2);
    };
    auto ref = [which](const std::vector<Tensor>& in, const Sample& s) {
      Arr x = arr(in[0]), w = arr(in[1]);
      auto f = [&](const Vec& p) {
        return ref_conv(which == 0 ? Arr{p, x.shape} : x, which == 1 ? Arr{p, w.shape} : w, nullptr,
                        conv_args(s, 2))
            .v;
      };
      return vjp_ref(f, in[which], in[3]);
    };
    rows.push_back(
        mk(which == 0 ? "nn.convolution_backward_input" : "nn.convolution_backward_weight",
           {which == 0 ? OpId::ConvolutionBackwardInput : OpId::ConvolutionBackwardWeight},
           kFloatMask, samples, op, ref, 8.0));
  }
  return rows;
}

// ---------------------------------------------------------------- pooling

// inputs: x, [grad]; ints: kh kw sh sw ph pw dh dw ceil.
std::vector<Sample> pool_samples(DType dt, bool dilation, bool backward) {
  std::vector<Sample> v;
  uint64_t seed = 60;
  auto add = [&](Shape x, std::vector<int64_t> a) {
    if (!dilation && (a[6] != 1 || a[7] != 1)) return;
    Sample s;
    s.inputs = {rm(x, seed++ * 11)};
    s.ints = a;
    s.desc = shape_str(x) + " args " + shape_str(a);
    v.push_back(s);
  };
  add({2, 3, 6, 6}, {2, 2, 2, 2, 0, 0, 1, 1, 0});
  add({1, 2, 7, 8}, {3, 3, 2, 2, 1, 1, 1, 1, 0});
  add({1, 2, 7, 8}, {3, 2, 2, 1, 1, 1, 1, 1, 1});
  add({2, 1, 9, 7}, {3, 3, 2, 2, 1, 0, 2, 2, 0});
  add({1, 1, 5, 5}, {2, 2, 2, 2, 1, 1, 1, 1, 1});
  add({1, 3, 4, 6}, {1, 3, 1, 3, 0, 1, 1, 1, 0});
  add({0, 2, 4, 4}, {2, 2, 2, 2, 0, 0, 1, 1, 0});
  add({3, 5, 5}, {2, 2, 1, 1, 0, 0, 1, 1, 0});  // unbatched
  add({4, 8, 33, 31}, {3, 3, 2, 2, 1, 1, 1, 1, 1});
  if (backward)
    for (Sample& s : v) {
      Shape xs = s.inputs[0].sizes().vec();
      if (xs.size() == 3) xs.insert(xs.begin(), 1);
      PoolArgs a{s.ints[0], s.ints[1], s.ints[2], s.ints[3],     s.ints[4],
                 s.ints[5], s.ints[6], s.ints[7], s.ints[8] != 0};
      Shape ys{xs[0], xs[1], pool_len(xs[2], a.kh, a.sh, a.ph, a.dh, a.ceil),
               pool_len(xs[3], a.kw, a.sw, a.pw, a.dw, a.ceil)};
      if (s.inputs[0].dim() == 3) ys.erase(ys.begin());
      s.inputs.push_back(rm(ys, seed++));
    }
  else if (is_floating_point(dt)) {
    const double nan = NAN, inf = INFINITY;
    Sample s;
    s.inputs = {tens({1, nan, 2, 3, -inf, -inf, 0, 5, 4, 4, -1, nan, 1, 2, 3, inf}, {1, 1, 4, 4})};
    s.ints = {2, 2, 2, 2, 0, 0, 1, 1, 0};
    s.desc = "special values";
    v.push_back(s);
  }
  return v;
}
PoolArgs pool_args(const Sample& s) {
  return {s.ints[0], s.ints[1], s.ints[2], s.ints[3],     s.ints[4],
          s.ints[5], s.ints[6], s.ints[7], s.ints[8] != 0};
}
// Reference on a 4-D view of a possibly unbatched input; reshaped back.
Tensor batched_ref(const Tensor& x, const std::function<Arr(const Arr&)>& f) {
  Arr a = arr(x);
  const bool unb = a.shape.size() == 3;
  if (unb) a.shape.insert(a.shape.begin(), 1);
  Arr y = f(a);
  if (unb) y.shape.erase(y.shape.begin());
  return tens(y.v, y.shape);
}

std::vector<OpRow> pool_rows() {
  std::vector<OpRow> rows;
  auto ij = [](const Sample& s, int k) { return IntArrayRef(s.ints.data() + 2 * k, 2); };
  {
    OpRow r = mk(
        "nn.max_pool2d", {OpId::MaxPool2d}, kFloatMask | kIntMask,
        [](DType dt) { return pool_samples(dt, true, false); },
        [ij](const std::vector<Tensor>& in, const Sample& s) {
          return F::max_pool2d(in[0], ij(s, 0), ij(s, 1), ij(s, 2), ij(s, 3), s.ints[8]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return batched_ref(in[0],
                             [&](const Arr& a) { return ref_max_pool(a, pool_args(s)).first; });
        });
    r.errors = {err("pad should be at most half",
                    [] {
                      return F::max_pool2d(ones({1, 1, 4, 4}), {2, 2}, {}, {2, 2});
                    }),
                err("output size is too small",
                    [] {
                      return F::max_pool2d(ones({1, 1, 2, 2}), {3, 3});
                    }),
                err("kernel_size must be positive", [] {
                  return F::max_pool2d(ones({1, 1, 2, 2}), {0});
                })};
    rows.push_back(r);
  }
  {
    OpRow r = mk(
        "nn.max_pool2d.indices", {OpId::MaxPool2d}, kFloatMask,
        [](DType dt) { return pool_samples(dt, true, false); },
        [ij](const std::vector<Tensor>& in, const Sample& s) {
          return std::get<1>(
              F::max_pool2d_with_indices(in[0], ij(s, 0), ij(s, 1), ij(s, 2), ij(s, 3), s.ints[8]));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          Arr a = arr(in[0]);
          const bool unb = a.shape.size() == 3;
          if (unb) a.shape.insert(a.shape.begin(), 1);
          auto [y, idx] = ref_max_pool(a, pool_args(s));
          if (unb) y.shape.erase(y.shape.begin());
          return index_tensor(idx, y.shape);
        });
    r.out_dtype = [](DType) { return DType::Int64; };
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.max_pool1d", {OpId::MaxPool2d}, kFloatMask,
      [](DType) {
        std::vector<Sample> v;
        uint64_t seed = 3;
        for (auto a :
             std::vector<std::vector<int64_t>>{{3, 2, 1, 1, 0}, {2, 2, 0, 2, 1}, {4, 3, 2, 1, 1}}) {
          Sample s;
          s.inputs = {rm({2, 3, 11}, seed++)};
          s.ints = a;  // k s p d ceil
          s.desc = "args " + shape_str(a);
          v.push_back(s);
        }
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::max_pool1d(in[0], s.ints[0], s.ints[1], s.ints[2], s.ints[3], s.ints[4]);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr a = arr(in[0]);
        a.shape.insert(a.shape.begin() + 2, 1);
        PoolArgs p{1, s.ints[0], 1, s.ints[1], 0, s.ints[2], 1, s.ints[3], s.ints[4] != 0};
        Arr y = ref_max_pool(a, p).first;
        y.shape.erase(y.shape.begin() + 2);
        return tens(y.v, y.shape);
      }));
  rows.push_back(mk(
      "nn.max_pool2d_backward", {OpId::MaxPool2dBackward}, kFloatMask,
      [](DType dt) { return pool_samples(dt, true, true); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor x = in[0].dim() == 3 ? in[0].unsqueeze(0) : in[0];
        Tensor g = in[1].dim() == 3 ? in[1].unsqueeze(0) : in[1];
        detail::Pool2dParams p{{s.ints[0], s.ints[1]},
                               {s.ints[2], s.ints[3]},
                               {s.ints[4], s.ints[5]},
                               {s.ints[6], s.ints[7]},
                               s.ints[8] != 0};
        auto [y, idx] = detail::max_pool2d_op(x, p);
        return detail::max_pool2d_backward_op(g, idx, x.sizes()).reshape(in[0].sizes());
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr g = arr(in[1]);
        return batched_ref(in[0], [&](const Arr& a) {
          auto [y, idx] = ref_max_pool(a, pool_args(s));
          Arr gx{Vec(a.v.size(), 0.0), a.shape};
          const int64_t hw = a.shape[2] * a.shape[3], ohw = y.shape[2] * y.shape[3];
          for (size_t i = 0; i < idx.size(); ++i) gx.v[(i / ohw) * hw + idx[i]] += g.v[i];
          return gx;
        });
      }));
  // avg pool: ints kh kw sh sw ph pw (dilation 1) ceil; flag count_include_pad; scalars[0]
  // divisor_override.
  auto avg_samples = [](DType dt, bool backward) {
    std::vector<Sample> v;
    for (Sample s : pool_samples(dt, false, backward)) {
      if (s.desc == "special values") continue;
      for (int mode = 0; mode < 3; ++mode) {
        Sample t = s;
        t.flag = mode != 1;
        t.scalars = {Scalar(int64_t(mode == 2 ? 3 : 0))};
        t.desc += mode == 0 ? " include_pad" : mode == 1 ? " exclude_pad" : " divisor 3";
        v.push_back(t);
      }
    }
    return v;
  };
  rows.push_back(mk(
      "nn.avg_pool2d", {OpId::AvgPool2d}, kFloatMask,
      [avg_samples](DType dt) { return avg_samples(dt, false); },
      [ij](const std::vector<Tensor>& in, const Sample& s) {
        const int64_t div = s.scalars[0].to<int64_t>();
        return F::avg_pool2d(in[0], ij(s, 0), ij(s, 1), ij(s, 2), s.ints[8], s.flag,
                             div ? std::optional<int64_t>(div) : std::nullopt);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return batched_ref(in[0], [&](const Arr& a) {
          return ref_avg_pool(a, pool_args(s), s.flag, s.scalars[0].to<int64_t>());
        });
      }));
  rows.push_back(mk(
      "nn.avg_pool2d_backward", {OpId::AvgPool2dBackward}, kFloatMask,
      [avg_samples](DType dt) {
        std::vector<Sample> v;
        for (Sample& s : avg_samples(dt, true))
          if (s.inputs[0].numel() < 300) v.push_back(s);
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor g = in[1].dim() == 3 ? in[1].unsqueeze(0) : in[1];
        detail::Pool2dParams p{{s.ints[0], s.ints[1]},
                               {s.ints[2], s.ints[3]},
                               {s.ints[4], s.ints[5]},
                               {1, 1},
                               s.ints[8] != 0};
        Shape xs = in[0].sizes().vec();
        if (xs.size() == 3) xs.insert(xs.begin(), 1);
        return detail::avg_pool2d_backward_op(g, xs, p, s.flag, s.scalars[0].to<int64_t>())
            .reshape(in[0].sizes());
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Shape xs = in[0].sizes().vec();
        if (xs.size() == 3) xs.insert(xs.begin(), 1);
        auto f = [&](const Vec& x) {
          return ref_avg_pool({x, xs}, pool_args(s), s.flag, s.scalars[0].to<int64_t>()).v;
        };
        return vjp_ref(f, in[0], in[1]);
      },
      4.0));
  // adaptive pools: ints = output size [oh, ow].
  auto ad_samples = [](DType, bool backward) {
    std::vector<Sample> v;
    uint64_t seed = 90;
    for (auto [x, o] : std::vector<std::pair<Shape, Shape>>{{{2, 3, 7, 9}, {3, 4}},
                                                            {{1, 2, 5, 5}, {5, 5}},
                                                            {{1, 2, 4, 6}, {7, 2}},
                                                            {{2, 1, 6, 4}, {1, 1}},
                                                            {{0, 2, 4, 4}, {2, 2}}}) {
      Sample s;
      s.inputs = {rm(x, seed++)};
      if (backward) s.inputs.push_back(rm({x[0], x[1], o[0], o[1]}, seed++));
      s.ints = o;
      s.desc = shape_str(x) + " -> " + shape_str(o);
      v.push_back(s);
    }
    return v;
  };
  rows.push_back(mk(
      "nn.adaptive_avg_pool2d", {OpId::AdaptiveAvgPool2d}, kFloatMask,
      [ad_samples](DType dt) { return ad_samples(dt, false); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::adaptive_avg_pool2d(in[0], s.ints);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr y = ref_adaptive(arr(in[0]), s.ints[0], s.ints[1], 0);
        return tens(y.v, y.shape);
      }));
  rows.push_back(mk(
      "nn.adaptive_max_pool2d", {OpId::AdaptiveMaxPool2d}, kFloatMask,
      [ad_samples](DType dt) { return ad_samples(dt, false); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::adaptive_max_pool2d(in[0], s.ints);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr y = ref_adaptive(arr(in[0]), s.ints[0], s.ints[1], 1);
        return tens(y.v, y.shape);
      }));
  rows.push_back(mk(
      "nn.adaptive_avg_pool2d_backward", {OpId::AdaptiveAvgPool2dBackward}, kFloatMask,
      [ad_samples](DType dt) { return ad_samples(dt, true); },
      [](const std::vector<Tensor>& in, const Sample&) {
        return detail::adaptive_avg_pool2d_backward_op(in[1], in[0].sizes());
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        const Shape xs = in[0].sizes().vec();
        auto f = [&](const Vec& x) { return ref_adaptive({x, xs}, s.ints[0], s.ints[1], 0).v; };
        return vjp_ref(f, in[0], in[1]);
      },
      4.0));
  return rows;
}

// ---------------------------------------------------------------- im2col, embedding

std::vector<OpRow> misc_rows() {
  std::vector<OpRow> rows;
  // ints: kh kw dh dw ph pw sh sw.
  auto fold_samples = [](DType) {
    std::vector<Sample> v;
    uint64_t seed = 7;
    for (auto [x, a] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
             {{2, 3, 5, 6}, {2, 3, 1, 1, 0, 0, 1, 1}},
             {{1, 2, 7, 7}, {3, 3, 2, 1, 1, 2, 2, 1}},
             {{1, 1, 4, 4}, {1, 1, 1, 1, 0, 0, 1, 1}},
             {{0, 2, 4, 4}, {2, 2, 1, 1, 0, 0, 1, 1}}}) {
      Sample s;
      s.inputs = {rm(x, seed++)};
      s.ints = a;
      s.desc = shape_str(x) + " args " + shape_str(a);
      v.push_back(s);
    }
    return v;
  };
  auto fa = [](const Sample& s) {
    return FoldArgs{s.ints[0], s.ints[1], s.ints[2], s.ints[3],
                    s.ints[4], s.ints[5], s.ints[6], s.ints[7]};
  };
  auto p2 = [](const Sample& s, int k) { return IntArrayRef(s.ints.data() + 2 * k, 2); };
  rows.push_back(mk(
      "nn.unfold", {OpId::Im2Col}, kFloatMask, fold_samples,
      [p2](const std::vector<Tensor>& in, const Sample& s) {
        return F::unfold(in[0], p2(s, 0), p2(s, 1), p2(s, 2), p2(s, 3));
      },
      [fa](const std::vector<Tensor>& in, const Sample& s) {
        Arr y = ref_im2col(arr(in[0]), fa(s));
        return tens(y.v, y.shape);
      }));
  rows.push_back(mk(
      "nn.fold", {OpId::Col2Im}, kFloatMask,
      [fa, fold_samples](DType dt) {
        std::vector<Sample> v;
        for (Sample s : fold_samples(dt)) {
          // Input: columns of the sample's image shape; the image size rides in scalars.
          Arr cols = ref_im2col(arr(s.inputs[0]), fa(s));
          Shape xs = s.inputs[0].sizes().vec();
          s.scalars = {Scalar(xs[2]), Scalar(xs[3])};
          s.inputs = {rm(cols.shape, 5)};
          v.push_back(s);
        }
        return v;
      },
      [p2](const std::vector<Tensor>& in, const Sample& s) {
        return F::fold(in[0], {s.scalars[0].to<int64_t>(), s.scalars[1].to<int64_t>()}, p2(s, 0),
                       p2(s, 1), p2(s, 2), p2(s, 3));
      },
      [fa](const std::vector<Tensor>& in, const Sample& s) {
        Arr y =
            ref_col2im(arr(in[0]), s.scalars[0].to<int64_t>(), s.scalars[1].to<int64_t>(), fa(s));
        return tens(y.v, y.shape);
      }));
  // embedding: inputs weight [V, D], indices (int64 or int32).
  auto emb_samples = [](DType) {
    std::vector<Sample> v;
    uint64_t seed = 21;
    for (auto [w, idx, dt] :
         std::vector<std::tuple<Shape, Shape, DType>>{{{10, 3}, {4}, DType::Int64},
                                                      {{10, 3}, {2, 3}, DType::Int64},
                                                      {{7, 5}, {}, DType::Int64},
                                                      {{7, 5}, {0}, DType::Int64},
                                                      {{6, 4}, {3, 5}, DType::Int32},
                                                      {{50, 33}, {40, 7}, DType::Int64}}) {
      Sample s;
      s.inputs = {rm(w, seed++), index_tensor(rand_ints(numel(idx), 0, w[0], seed++), idx, dt)};
      s.keep_dtype = {false, true};
      s.desc = "weight " + shape_str(w) + " indices " + shape_str(idx) + " " + dtype_name(dt);
      v.push_back(s);
    }
    return v;
  };
  auto gather_rows = [](const Arr& w, const std::vector<int64_t>& idx, const Shape& ishape) {
    Arr y;
    y.shape = ishape;
    y.shape.push_back(w.shape[1]);
    for (int64_t i : idx)
      for (int64_t j = 0; j < w.shape[1]; ++j) y.v.push_back(w.v[i * w.shape[1] + j]);
    return tens(y.v, y.shape);
  };
  {
    OpRow r = mk(
        "nn.embedding", {OpId::Embedding}, kFloatMask | kIntMask, emb_samples,
        [](const std::vector<Tensor>& in, const Sample&) { return F::embedding(in[1], in[0]); },
        [gather_rows](const std::vector<Tensor>& in, const Sample&) {
          return gather_rows(arr(in[0]), ints(in[1]), in[1].sizes().vec());
        });
    r.errors = {err("out of range",
                    [] {
                      return F::embedding(from_vector<int64_t>({3}), ones({3, 2}));
                    }),
                err("int64 or int32",
                    [] {
                      return F::embedding(ones({2}), ones({3, 2}));
                    }),
                err("Padding_idx", [] {
                  return F::embedding(from_vector<int64_t>({0}), ones({3, 2}), 3);
                })};
    rows.push_back(r);
  }
  rows.push_back(mk(
      "nn.embedding.max_norm", {OpId::EmbeddingRenorm, OpId::Embedding}, kFloatMask, emb_samples,
      [](const std::vector<Tensor>& in, const Sample&) {
        Tensor w = in[0].clone();
        (void)F::embedding(in[1], w, std::nullopt, 1.5, 2.0);
        return w;  // the renormalized table (unreferenced rows untouched)
      },
      [](const std::vector<Tensor>& in, const Sample&) {
        Arr w = arr(in[0]);
        std::vector<bool> seen(w.shape[0], false);
        for (int64_t i : ints(in[1])) seen[i] = true;
        for (int64_t i = 0; i < w.shape[0]; ++i) {
          if (!seen[i]) continue;
          double n = 0;
          for (int64_t j = 0; j < w.shape[1]; ++j)
            n += w.v[i * w.shape[1] + j] * w.v[i * w.shape[1] + j];
          n = std::sqrt(n);
          if (n > 1.5)
            for (int64_t j = 0; j < w.shape[1]; ++j) w.v[i * w.shape[1] + j] *= 1.5 / (n + 1e-7);
        }
        return tens(w.v, w.shape);
      }));
  rows.push_back(mk(
      "nn.embedding_backward", {OpId::EmbeddingBackward}, kFloatMask,
      [emb_samples](DType dt) {
        std::vector<Sample> v;
        for (Sample s : emb_samples(dt)) {
          Shape gs = s.inputs[1].sizes().vec();
          gs.push_back(s.inputs[0].size(1));
          s.ints = {s.inputs[0].size(0), v.size() % 2 ? 1 : -1};  // num_weights, padding_idx
          s.inputs[0] = rm(gs, 99 + v.size());
          v.push_back(s);
        }
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return detail::embedding_backward_op(in[0], in[1], s.ints[0], s.ints[1]);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Arr g = arr(in[0]);
        const int64_t d = g.shape.back();
        Arr y{Vec(s.ints[0] * d, 0.0), {s.ints[0], d}};
        const auto idx = ints(in[1]);
        for (size_t r = 0; r < idx.size(); ++r)
          if (idx[r] != s.ints[1])
            for (int64_t j = 0; j < d; ++j) y.v[idx[r] * d + j] += g.v[r * d + j];
        return tens(y.v, y.shape);
      }));
  return rows;
}

// 3x3 stride-1 float32 convolutions that take the Winograd path (nn_conv_winograd.cpp: at least
// 8 channels per group): odd sizes, batch 1, channel counts not multiples of 16, groups, padding
// 0 / 1 / 2 / mixed, outputs of one tile and several blocks of tiles; the forward op and the
// transposed convolution (the backward input kernel, also Winograd).
std::vector<OpRow> winograd_rows() {
  std::vector<OpRow> rows;
  auto fwd = [](DType) {
    const std::vector<ConvCase> cases = {
        {{1, 9, 11, 13}, {10, 9, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
        {{3, 17, 8, 7}, {21, 17, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
        {{2, 16, 5, 6}, {24, 8, 3, 3}, {1, 1}, {2, 2}, {1, 1}, 2},
        {{1, 8, 3, 3}, {8, 8, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
        {{2, 33, 12, 10}, {40, 33, 3, 3}, {1, 1}, {1, 2}, {1, 1}, 1},
        {{4, 16, 20, 18}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1}};
    std::vector<Sample> v;
    uint64_t seed = 90;
    for (const ConvCase& c : cases) v.push_back(conv_sample(c, seed, seed % 2 == 0)), ++seed;
    return v;
  };
  rows.push_back(mk(
      "nn.conv2d.winograd", {OpId::Convolution}, kFloatMask, fwd,
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::conv2d(in[0], in[1], s.flag ? in[2] : Tensor(), part(s, 2, 0), part(s, 2, 1),
                         part(s, 2, 2), s.ints[6]);
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Vec b = arr(in[2]).v;
        Arr y = ref_conv(arr(in[0]), arr(in[1]), s.flag ? &b : nullptr, conv_args(s, 2));
        return tens(y.v, y.shape);
      },
      4.0));
  auto tr = [](DType) {
    const std::vector<ConvCase> cases = {
        {{1, 9, 7, 9}, {9, 11, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
        {{2, 16, 6, 5}, {16, 8, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 2},
        {{1, 12, 10, 11}, {12, 10, 3, 3}, {1, 1}, {2, 1}, {1, 1}, 1}};
    std::vector<Sample> v;
    uint64_t seed = 110;
    for (const ConvCase& c : cases) {
      Sample s = conv_sample(c, seed, seed % 2 == 0, true);
      ++seed;
      s.ints.push_back(0), s.ints.push_back(0);  // output_padding
      v.push_back(s);
    }
    return v;
  };
  rows.push_back(mk(
      "nn.conv_transpose2d.winograd", {OpId::ConvolutionBackwardInput}, kFloatMask, tr,
      [](const std::vector<Tensor>& in, const Sample& s) {
        return F::conv_transpose2d(in[0], in[1], s.flag ? in[2] : Tensor(), part(s, 2, 0),
                                   part(s, 2, 1), IntArrayRef(s.ints.data() + 7, 2), s.ints[6],
                                   part(s, 2, 2));
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Vec b = arr(in[2]).v;
        Arr y = ref_conv_transpose(arr(in[0]), arr(in[1]), s.flag ? &b : nullptr, conv_args(s, 2),
                                   Shape{0, 0});
        return tens(y.v, y.shape);
      },
      4.0));
  return rows;
}

std::vector<OpRow> nn_conv_rows() {
  std::vector<OpRow> rows;
  for (auto* f : {&conv_rows, &winograd_rows, &pool_rows, &misc_rows})
    for (auto& r : (*f)()) rows.push_back(std::move(r));
  return rows;
}
KILN_OP_ROWS(nn_conv_rows);

}  // namespace
}  // namespace kiln::testing
