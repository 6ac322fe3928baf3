// Op-table rows for the core primitives: copy/cast, fill, arange, linspace and the view ops.
#include "op_db/op_db.h"

namespace kiln::testing {
namespace {

// Reference of a view op: the element at each output index, read from the input's values by an
// index mapping written independently of kiln's stride arithmetic.
Tensor ref_gather(const Tensor& in, const std::vector<int64_t>& out_shape,
                  const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& map) {
  auto v = values(in);
  std::vector<int64_t> in_shape = in.sizes().vec();
  int64_t n = 1;
  for (int64_t s : out_shape) n *= s;
  std::vector<C> out(n);
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> src = map(idx);
    int64_t lin = 0;
    for (size_t d = 0; d < in_shape.size(); ++d) lin = lin * in_shape[d] + src[d];
    out[i] = v[lin];
    for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return from_values(out, out_shape, in.dtype());
}

std::vector<Sample> one_input(std::vector<int64_t> shape) {
  Sample s;
  s.inputs.push_back(rand_master(shape, false, 11));
  s.desc = IntArrayRef(shape).vec().size() ? "shape" : "scalar";
  return {s};
}

std::vector<OpRow> core_rows() {
  std::vector<OpRow> rows;
  uint32_t all = detail::kNumericMask;

  for (int d = 0; d < kNumDTypes; ++d) {  // copy_: every source dtype into every target dtype
    DType to = static_cast<DType>(d);
    if (is_float8(to)) continue;
    OpRow r;
    r.name = std::string("copy_.to_") + dtype_name(to);
    r.covers = {OpId::Copy};
    r.dtypes = all;
    r.samples = [](DType dt) { return elementwise_samples(1, dt, -3, 3, false); };
    r.op = [to](const std::vector<Tensor>& in, const Sample&) { return in[0].to(to); };
    r.ref = [to](const std::vector<Tensor>& in, const Sample&) {
      auto v = values(in[0]);
      for (auto& x : v) {
        if (to == DType::Bool)
          x = (x != C(0)) ? 1.0 : 0.0;
        else if (is_integral(to))
          x = std::trunc(x.real());  // inputs are in range for every int type
        else if (!is_complex(to))
          x = x.real();
      }
      return from_values(v, in[0].sizes(), is_complex(to) ? DType::Complex128 : DType::Float64);
    };
    r.out_dtype = [to](DType) { return to; };
    if (is_integral(to) && to == DType::UInt8) {
      // negative floats -> uint8 is undefined in C++ and PyTorch; test non-negative values only
      r.samples = [](DType dt) { return elementwise_samples(1, dt, 0, 3, false); };
    }
    rows.push_back(r);
  }
  {
    OpRow r;
    r.name = "copy_.broadcast";
    r.covers = {OpId::Copy};
    r.dtypes = detail::kFloatMask | detail::kIntMask;
    r.samples = [](DType) {
      Sample s;
      s.inputs = {rand_master({4}, false, 3)};
      return std::vector<Sample>{s};
    };
    r.op = [](const std::vector<Tensor>& in, const Sample&) {
      Tensor dst = zeros({3, 4}, in[0].dtype());
      dst.copy_(in[0]);
      return dst;
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample&) {
      return ref_gather(in[0], {3, 4},
                        [](const std::vector<int64_t>& i) { return std::vector<int64_t>{i[1]}; });
    };
    r.errors.push_back({"cannot be broadcast", [] { zeros({3, 4}).copy_(zeros({5})); }});
    r.errors.push_back({"can't be cast", [] {
                          Tensor i = zeros({2}, kInt64);
                          i.add_(ones({2}));
                        }});
    rows.push_back(r);
  }
  {
    OpRow r;
    r.name = "fill_";
    r.covers = {OpId::Fill};
    r.dtypes = detail::kAllMask;
    r.samples = [](DType) { return one_input({2, 3}); };
    r.op = [](const std::vector<Tensor>& in, const Sample&) {
      Tensor t = in[0].clone();
      t.fill_(1);
      return t;
    };
    r.ref = [](const std::vector<Tensor>&, const Sample&) {
      return from_values(std::vector<C>(6, 1.0), {2, 3}, DType::Float64);
    };
    rows.push_back(r);
    r.name = "fill_.fraction";
    r.dtypes = detail::kFloatMask | detail::kComplexMask;
    r.op = [](const std::vector<Tensor>& in, const Sample&) {
      Tensor t = in[0].clone();
      t.fill_(-2.75);
      return t;
    };
    r.ref = [](const std::vector<Tensor>&, const Sample&) {
      return from_values(std::vector<C>(6, -2.75), {2, 3}, DType::Float64);
    };
    rows.push_back(r);
  }
  {
    OpRow r;
    r.name = "arange";
    r.covers = {OpId::Arange};
    r.dtypes = detail::kFloatMask | detail::kIntMask;
    r.samples = [](DType) { return std::vector<Sample>{Sample{}}; };
    r.op = [](const std::vector<Tensor>&, const Sample&) { return arange(-3, 17, 2, kFloat64); };
    r.ref = [](const std::vector<Tensor>&, const Sample&) {
      std::vector<C> v;
      for (int x = -3; x < 17; x += 2) v.push_back(x);
      return from_values(v, {static_cast<int64_t>(v.size())}, DType::Float64);
    };
    r.errors.push_back({"step must be nonzero", [] { arange(0, 5, 0); }});
    r.errors.push_back({"inconsistent with step sign", [] { arange(5, 0, 1); }});
    rows.push_back(r);
  }
  {
    OpRow r;
    r.name = "linspace";
    r.covers = {OpId::Linspace};
    r.dtypes = detail::kFloatMask;
    r.samples = [](DType) { return std::vector<Sample>{Sample{}}; };
    r.op = [](const std::vector<Tensor>&, const Sample&) { return linspace(-1, 2, 7, kFloat64); };
    r.ref = [](const std::vector<Tensor>&, const Sample&) {
      std::vector<C> v;
      for (int i = 0; i < 7; ++i) v.push_back(-1.0 + 3.0 * i / 6.0);
      return from_values(v, {7}, DType::Float64);
    };
    r.errors.push_back({"non-negative", [] { linspace(0, 1, -1); }});
    rows.push_back(r);
  }
  // ---- views ----
  auto view_row = [&](std::string name, OpId id, std::vector<int64_t> in_shape,
                      std::function<Tensor(const Tensor&)> fn, std::vector<int64_t> out_shape,
                      std::function<std::vector<int64_t>(const std::vector<int64_t>&)> map) {
    OpRow r;
    r.name = std::move(name);
    r.covers = {id};
    r.dtypes = all;
    r.samples = [in_shape](DType) { return one_input(in_shape); };
    r.op = [fn](const std::vector<Tensor>& in, const Sample&) { return fn(in[0]); };
    r.ref = [out_shape, map](const std::vector<Tensor>& in, const Sample&) {
      return ref_gather(in[0], out_shape, map);
    };
    rows.push_back(r);
    return &rows.back();
  };
  using V = std::vector<int64_t>;
  auto* v = view_row(
      "view", OpId::ViewOp, {2, 3, 4},
      [](const Tensor& x) {
        return x.reshape({6, -1});
      },
      {6, 4},
      [](const V& i) {
        return V{i[0] / 3, i[0] % 3, i[1]};
      });
  v->errors.push_back({"is invalid for input of size", [] { zeros({2, 3}).view({4}); }});
  v->errors.push_back({"Use .reshape", [] { zeros({2, 3}).t().view({6}); }});
  v->errors.push_back({"only one dimension can be inferred", [] { zeros({2, 3}).view({-1, -1}); }});
  auto* p = view_row(
      "permute", OpId::Permute, {2, 3, 4},
      [](const Tensor& x) {
        return x.permute({2, 0, 1});
      },
      {4, 2, 3},
      [](const V& i) {
        return V{i[1], i[2], i[0]};
      });
  p->errors.push_back({"dimension out of range", [] { zeros({2, 3}).permute({0, 2}); }});
  p->errors.push_back({"appears multiple times", [] { zeros({2, 3}).permute({0, 0}); }});
  auto* e = view_row(
      "expand", OpId::Expand, {3, 1},
      [](const Tensor& x) {
        return x.expand({2, 3, 4});
      },
      {2, 3, 4},
      [](const V& i) {
        return V{i[1], 0};
      });
  e->errors.push_back({"must match the existing size", [] { zeros({3, 2}).expand({3, 4}); }});
  view_row(
      "squeeze", OpId::Squeeze, {3, 1, 4, 1}, [](const Tensor& x) { return x.squeeze(1); },
      {3, 4, 1},
      [](const V& i) {
        return V{i[0], 0, i[1], i[2]};
      });
  view_row(
      "unsqueeze", OpId::Unsqueeze, {3, 4}, [](const Tensor& x) { return x.unsqueeze(-2); },
      {3, 1, 4},
      [](const V& i) {
        return V{i[0], i[2]};
      });
  auto* s = view_row(
      "select", OpId::Select, {3, 4, 5}, [](const Tensor& x) { return x.select(1, -1); }, {3, 5},
      [](const V& i) {
        return V{i[0], 3, i[1]};
      });
  s->errors.push_back({"out of bounds", [] { zeros({3, 4}).select(1, 4); }});
  view_row(
      "slice", OpId::Slice, {10, 3}, [](const Tensor& x) { return x.slice(0, 1, -2, 3); }, {3, 3},
      [](const V& i) {
        return V{1 + 3 * i[0], i[1]};
      });
  view_row(
      "diagonal", OpId::Diagonal, {3, 4, 5}, [](const Tensor& x) { return x.diagonal(1, 1, 2); },
      {3, 4},
      [](const V& i) {
        return V{i[0], i[1], i[1] + 1};
      });
  auto* a = view_row(
      "as_strided", OpId::AsStrided, {4, 5},
      [](const Tensor& x) {
        return x.as_strided({3, 2}, {5, 2}, 1);
      },
      {3, 2},
      [](const V& i) {
        int64_t lin = 1 + 5 * i[0] + 2 * i[1];
        return V{lin / 5, lin % 5};
      });
  a->errors.push_back({"require", [] { zeros({2, 2}).as_strided({3, 3}, {3, 1}); }});
  a->skip_noncontiguous =
      "as_strided addresses storage directly, so another layout selects other elements";
  view_row(
      "unfold", OpId::Unfold, {7, 2}, [](const Tensor& x) { return x.unfold(0, 3, 2); }, {3, 2, 3},
      [](const V& i) {
        return V{2 * i[0] + i[2], i[1]};
      });
  return rows;
}

KILN_OP_ROWS(core_rows);

}  // namespace
}  // namespace kiln::testing
