// Op-table rows for the index family: index_select gather scatter (src, value, reduce)
// scatter_add scatter_reduce index_add index_copy index_fill index index_put masked_fill
// masked_select masked_scatter take take_along_dim nonzero argwhere. References: index_rows_util.h.
#include <cmath>

#include "kiln/ops/indexing.h"
#include "op_db/index_rows_util.h"

namespace kiln::testing {
namespace {

using namespace index_ref;  // NOLINT
using detail::dtype_bit;
using detail::kBoolMask;
using detail::kComplexMask;
using detail::kFloatMask;
using detail::kNumericMask;

constexpr uint32_t kWideInts = dtype_bit(DType::Int32) | dtype_bit(DType::Int64);
// Rows that only move values: every numeric dtype. Rows that add/multiply: no narrow ints
// (the test values would overflow them, and the double reference does not wrap).
constexpr uint32_t kMoveMask = kNumericMask;
constexpr uint32_t kArithMask = kFloatMask | kComplexMask | kWideInts;
constexpr uint32_t kOrderMask = kFloatMask | kWideInts;
// Products of the int test values (|v| <= 40, several per element) overflow int32.
constexpr uint32_t kProdMask = kFloatMask | kComplexMask | dtype_bit(DType::Int64);
// Sums and products round to the dtype after every update (as PyTorch's CPU kernels), so
// float16/bfloat16 results drift a few ulps from the double reference: 8x the default tolerance.
constexpr double kAccumTol = 8;

DType master_of(DType d) { return is_complex(d) ? DType::Complex128 : DType::Float64; }

Sample make(std::vector<Tensor> in, std::vector<bool> keep, std::vector<int64_t> ints,
            std::string desc, std::vector<Scalar> scalars = {}, bool flag = false) {
  Sample s;
  s.inputs = std::move(in);
  s.keep_dtype = std::move(keep);
  s.ints = std::move(ints);
  s.desc = std::move(desc);
  s.scalars = std::move(scalars);
  s.flag = flag;
  return s;
}

// ---- index_select ----
std::vector<Sample> index_select_samples(DType dt) {
  const bool cx = is_complex(dt);
  std::vector<Sample> s;
  uint64_t seed = 1;
  auto add = [&](Shape xs, int64_t dim, Shape is, DType idt = DType::Int64) {
    const int64_t n = xs.empty() ? 1 : xs[dim < 0 ? dim + xs.size() : dim];
    Tensor idx = rand_index(is, -n, std::max<int64_t>(n, 1), seed++, idt);
    s.push_back(make(
        {rand_master(xs, cx, seed++), idx}, {false, true}, {dim},
        str(xs) + " dim " + std::to_string(dim) + " index " + str(is) + " " + dtype_name(idt)));
  };
  add({5, 4}, 0, {7});
  add({5, 4}, 1, {3});
  add({5, 4}, -1, {6}, DType::Int32);
  add({2, 3, 4}, 1, {5});
  add({}, 0, {1});
  add({}, 0, {});
  add({6}, 0, {0});
  add({3, 0}, 0, {4});
  add({4000, 16}, 0, {5000});
  add({70000}, 0, {40000});
  add({8, 5000}, 1, {3000}, DType::Int32);
  return s;
}

// ---- gather / scatter samples: {x, index, src} ----
std::vector<Sample> gather_scatter_samples(DType dt, bool with_src) {
  const bool cx = is_complex(dt);
  std::vector<Sample> s;
  uint64_t seed = 40;
  auto add = [&](Shape xs, int64_t dim, Shape is, Shape ss) {
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(as_1d(xs).size()) : dim;
    const int64_t n = as_1d(xs)[d];
    Tensor idx = rand_index(is, -n, std::max<int64_t>(n, 1), seed++);
    std::vector<Tensor> in{rand_master(xs, cx, seed++), idx};
    std::vector<bool> keep{false, true};
    if (with_src) {
      in.push_back(rand_master(ss, cx, seed++));
      keep.push_back(false);
    }
    s.push_back(make(in, keep, {dim},
                     str(xs) + " dim " + std::to_string(dim) + " index " + str(is) +
                         (with_src ? " src " + str(ss) : "")));
  };
  add({5, 4}, 0, {6, 4}, {6, 4});  // repeats along dim
  add({5, 4}, 1, {5, 7}, {5, 8});
  add({5, 4}, -1, {3, 2}, {4, 3});  // index smaller than self and src
  add({3, 4, 5}, 1, {3, 6, 5}, {3, 6, 5});
  add({3, 4, 5}, 0, {2, 2, 2}, {2, 3, 4});
  add({}, 0, {}, {});
  add({6}, 0, {}, {});  // a 0-dim index
  add({6}, 0, {0}, {0});
  add({3, 0}, 0, {2, 0}, {2, 0});
  add({1500, 64}, 0, {2000, 64}, {2000, 64});
  add({64, 1500}, 1, {64, 2000}, {64, 2000});
  return s;
}

// A scatter-family row: kiln call fn(x, dim, index, src); reference with reduction r.
OpRow scatter_row(std::string name, OpId id, uint32_t dtypes, Red r, bool value,
                  std::function<Tensor(const std::vector<Tensor>&, const Sample&)> fn) {
  OpRow row;
  row.name = std::move(name);
  row.covers = {id};
  row.dtypes = dtypes;
  row.samples = [value, r](DType dt) {
    auto s = gather_scatter_samples(dt, !value);
    if (r != Red::None && r != Red::Sum) {
      // include_self false and true for scatter_reduce rows
      auto more = s;
      for (auto& m : more) m.flag = true, m.desc += " include_self";
      for (auto& m : s) m.desc += " exclude_self";
      s.insert(s.end(), more.begin(), more.end());
    } else {
      for (auto& m : s) m.flag = true;
    }
    if (value)
      for (auto& m : s) m.scalars = {Scalar(3)};  // exact in every tested dtype
    return s;
  };
  row.op = std::move(fn);
  if (r != Red::None) row.tol_scale = kAccumTol;
  row.ref = [r, value](const std::vector<Tensor>& in, const Sample& s) {
    const Tensor& x = in[0];
    Vals src;
    Shape ss;
    if (value) {
      src = {C(s.scalars[0].to<double>())};
    } else {
      src = values(in[2]);
      ss = shape_of(in[2]);
    }
    Vals out = ref_scatter(values(x), shape_of(x), wrap_dim_ref(s.ints[0], x), in[1], src, ss, r,
                           s.flag, false);
    return from_values(out, shape_of(x), out_master(x));
  };
  return row;
}

// ---- index_add / index_copy / index_fill: {x, index(1-D), source} ----
std::vector<Sample> index_1d_samples(DType dt, bool with_src) {
  const bool cx = is_complex(dt);
  std::vector<Sample> s;
  uint64_t seed = 70;
  auto add = [&](Shape xs, int64_t dim, int64_t k, DType idt = DType::Int64) {
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(as_1d(xs).size()) : dim;
    const int64_t n = as_1d(xs)[d];
    Shape ss = xs;
    if (!ss.empty()) ss[d] = k;
    Tensor idx = rand_index(xs.empty() && k == 1 ? Shape{} : Shape{k}, -n, std::max<int64_t>(n, 1),
                            seed++, idt);
    std::vector<Tensor> in{rand_master(xs, cx, seed++), idx};
    std::vector<bool> keep{false, true};
    if (with_src) in.push_back(rand_master(ss, cx, seed++)), keep.push_back(false);
    s.push_back(make(
        in, keep, {dim},
        str(xs) + " dim " + std::to_string(dim) + " k " + std::to_string(k) + " " + dtype_name(idt),
        {Scalar(2)}));
  };
  add({5, 4}, 0, 7);
  add({5, 4}, 1, 3, DType::Int32);
  add({2, 3, 4}, -2, 5);
  add({}, 0, 1);
  add({6}, 0, 0);
  add({3, 0}, 0, 4);
  add({1000, 64}, 0, 3000);
  add({64, 1000}, 1, 3000);
  return s;
}

// ---- index / index_put (op form): {x, idx...}; s.ints lists the dims the tensors index ----
std::vector<Sample> advanced_samples(DType dt, bool with_values) {
  const bool cx = is_complex(dt);
  std::vector<Sample> s;
  uint64_t seed = 90;
  auto add = [&](Shape xs, std::vector<int64_t> dims, std::vector<Shape> ishapes, bool dup) {
    std::vector<Tensor> in{rand_master(xs, cx, seed++)};
    std::vector<bool> keep{false};
    std::vector<std::optional<Tensor>> opt(xs.size());
    for (size_t k = 0; k < dims.size(); ++k) {
      const int64_t n = xs[dims[k]];
      // without duplicates: a permutation slice so that index_put has one writer per element
      Tensor t = dup ? rand_index(ishapes[k], -n, n, seed++)
                     : index_of(
                           [&] {
                             std::vector<int64_t> v;
                             for (int64_t i = 0; i < numel_of(ishapes[k]); ++i)
                               v.push_back((i * 7 + k) % n - (i % 2 ? n : 0));
                             return v;
                           }(),
                           ishapes[k]);
      in.push_back(t);
      keep.push_back(true);
      opt[dims[k]] = t;
    }
    std::string desc = str(xs) + " dims " + str(dims) + (dup ? " dup" : "");
    if (with_values) {
      Tensor r = ref_index(in[0], opt, DType::Float64);
      Shape vs = shape_of(r);
      if (!vs.empty() && vs.size() % 2 == 0) vs[0] = 1;  // broadcast values sometimes
      in.push_back(rand_master(vs, cx, seed++));
      keep.push_back(false);
      desc += " values " + str(vs);
    }
    s.push_back(make(in, keep, dims, desc));
  };
  add({5, 4}, {0}, {{3}}, true);
  add({5, 4}, {1}, {{2, 3}}, true);
  add({5, 4, 3}, {0, 1}, {{2, 1}, {3}}, true);     // broadcast, adjacent
  add({5, 4, 3}, {0, 2}, {{4}, {4}}, true);        // separated: result dims go first
  add({5, 4, 3, 2}, {1, 2}, {{3}, {1, 3}}, true);  // adjacent in the middle
  add({5, 4, 3, 2}, {0, 3}, {{2, 3}, {3}}, true);  // separated, broadcast
  add({7}, {0}, {{}}, true);                       // 0-dim index tensor
  add({5, 4}, {0}, {{0}}, true);                   // empty index
  add({6, 5, 4}, {0, 2}, {{5}, {5}}, false);       // no repeats
  add({300, 40}, {0}, {{2000}}, true);
  return s;
}

// ---- masks: {x, mask, (source)} ----
std::vector<Sample> mask_samples(DType dt, bool with_source) {
  const bool cx = is_complex(dt);
  std::vector<Sample> s;
  uint64_t seed = 120;
  auto add = [&](Shape xs, Shape ms, double p) {
    std::vector<Tensor> in{rand_master(xs, cx, seed++), rand_mask(ms, p, seed++)};
    std::vector<bool> keep{false, true};
    if (with_source) {
      in.push_back(rand_master({numel_of(ref_broadcast({xs, ms})) + 2}, cx, seed++));
      keep.push_back(false);
    }
    s.push_back(make(in, keep, {}, str(xs) + " mask " + str(ms), {Scalar(3)}));
  };
  add({5, 4}, {5, 4}, 0.5);
  add({5, 4}, {4}, 0.3);  // mask broadcasts over rows
  add({3, 4, 5}, {3, 1, 5}, 0.6);
  add({}, {}, 1.0);
  add({6}, {}, 1.0);
  add({0, 3}, {0, 3}, 0.5);
  add({4, 3}, {4, 3}, 0.0);
  add({400, 500}, {400, 500}, 0.4);
  return s;
}

std::vector<Sample> nonzero_samples(DType dt) {
  std::vector<Sample> s;
  uint64_t seed = 150;
  // zeros mixed in: multiply by a 0/1 mask so every dtype has exact zeros
  auto add = [&](Shape xs, double p) {
    Tensor x = rand_master(xs, is_complex(dt), seed++, 0.5, 2);
    Tensor m = rand_mask(xs, p, seed++);
    Vals xv = values(x);
    const auto mv = ints_of(m);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] *= static_cast<double>(mv[i]);
    s.push_back(make({from_values(xv, xs, master_of(dt))}, {false}, {}, str(xs)));
  };
  add({5, 4}, 0.5);
  add({3, 4, 5}, 0.3);
  add({}, 1.0);
  add({}, 0.0);
  add({7}, 0.0);
  add({0, 4}, 0.5);
  add({300, 400}, 0.5);
  return s;
}

// ---- error cases ----
Tensor f32(Shape s) { return zeros(s); }
Tensor i64(std::vector<int64_t> v) { return index_of(v, {static_cast<int64_t>(v.size())}); }

std::vector<OpRow> index_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r;
    r.name = "index_select";
    r.covers = {OpId::IndexSelect};
    r.dtypes = kMoveMask;
    r.samples = index_select_samples;
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return index_select(in[0], s.ints[0], in[1]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      return ref_index_select(in[0], s.ints[0], in[1]);
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors = {
        {"[index_select] index 5 is out of bounds for dimension 0 with size 5",
         [] {
           index_select(f32({5, 2}), 0, i64({0, 5}));
         }},
        {"[index_select] index -6 is out of bounds",
         [] {
           index_select(f32({5, 2}), 0, i64({-6}));
         }},
        {"[index_select] expected dtype int32 or int64 for index, but got float32",
         [] {
           index_select(f32({5, 2}), 0, zeros({2}));
         }},
        {"[index_select] index is supposed to be a vector",
         [] {
           index_select(f32({5, 2}), 0, index_of({0, 1}, {1, 2}));
         }},
        {"[index_select] dimension out of range",
         [] {
           index_select(f32({5, 2}), 2, i64({0}));
         }},
        {"[index_select] index to a 0-dim tensor can have only 1 value",
         [] {
           index_select(f32({}), 0, i64({0, 0}));
         }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "gather";
    r.covers = {OpId::Gather};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) { return gather_scatter_samples(dt, false); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return gather(in[0], s.ints[0], in[1]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      return ref_gather(in[0], s.ints[0], in[1]);
    };
    r.errors = {
        {"[gather] index 4 is out of bounds for dimension 1 with size 4",
         [] {
           gather(f32({2, 4}), 1, index_of({0, 4}, {1, 2}));
         }},
        {"[gather] expected dtype int64 for index, but got int32",
         [] {
           gather(f32({2, 4}), 1, index_of({0}, {1, 1}, DType::Int32));
         }},
        {"[gather] index tensor must have the same number of dimensions as the input",
         [] {
           gather(f32({2, 4}), 1, i64({0}));
         }},
        {"[gather] size does not match at dimension 0",
         [] {
           gather(f32({2, 4}), 1, index_of({0, 0, 0}, {3, 1}));
         }},
    };
    rows.push_back(std::move(r));
  }
  rows.push_back(scatter_row("scatter", OpId::Scatter, kMoveMask, Red::None, false,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               return scatter(in[0], s.ints[0], in[1], in[2]);
                             }));
  rows.back().errors = {
      {"[scatter] index 3 is out of bounds for dimension 0 with size 3",
       [] { scatter(f32({3}), 0, i64({3}), f32({1})); }},
      {"[scatter] expected self.dtype to be equal to src.dtype",
       [] { scatter(f32({3}), 0, i64({0}), zeros({1}, DType::Float64)); }},
      {"[scatter] expected index [4] to be no larger than src [2]",
       [] {
         scatter(f32({3}), 0, i64({0, 0, 0, 0}), f32({2}));
       }},
      {"[scatter] reduce argument must be either add or multiply",
       [] { scatter(f32({3}), 0, i64({0}), f32({1}), "max"); }},
  };
  rows.push_back(scatter_row("scatter.value", OpId::ScatterValue, kMoveMask & ~kBoolMask, Red::None,
                             true, [](const std::vector<Tensor>& in, const Sample& s) {
                               return scatter(in[0], s.ints[0], in[1], s.scalars[0]);
                             }));
  rows.push_back(scatter_row("scatter.add", OpId::Scatter, kArithMask, Red::Sum, false,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               return scatter(in[0], s.ints[0], in[1], in[2], "add");
                             }));
  rows.push_back(scatter_row("scatter.multiply", OpId::Scatter, kProdMask, Red::Prod, false,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               Tensor x = in[0].clone();
                               return x.scatter_(s.ints[0], in[1], in[2], "multiply");
                             }));
  // scatter(reduce="multiply") always includes self: keep only those samples.
  {
    auto base = rows.back().samples;
    rows.back().samples = [base](DType dt) {
      std::vector<Sample> r;
      for (auto& s : base(dt))
        if (s.flag) r.push_back(s);
      return r;
    };
  }
  rows.push_back(scatter_row("scatter.value_add", OpId::ScatterValue, kArithMask, Red::Sum, true,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               return scatter(in[0], s.ints[0], in[1], s.scalars[0], "add");
                             }));
  rows.push_back(scatter_row("scatter_add", OpId::ScatterAdd, kArithMask, Red::Sum, false,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               return scatter_add(in[0], s.ints[0], in[1], in[2]);
                             }));
  rows.back().errors = {
      {"[scatter_add] index -4 is out of bounds for dimension 0 with size 3",
       [] { scatter_add(f32({3}), 0, i64({-4}), f32({1})); }},
      {"[scatter_add] index tensor must have the same number of dimensions as the input",
       [] {
         scatter_add(f32({3}), 0, index_of({0}, {1, 1}), f32({1}));
       }},
  };
  rows.push_back(scatter_row("scatter_add_", OpId::ScatterAdd, kArithMask, Red::Sum, false,
                             [](const std::vector<Tensor>& in, const Sample& s) {
                               Tensor x = in[0].clone();
                               x.scatter_add_(s.ints[0], in[1], in[2]);
                               return x;
                             }));
  struct RedName {
    const char* name;
    Red r;
    uint32_t dtypes;
    double tol;
  };
  for (RedName rn : {RedName{"sum", Red::Sum, kArithMask, kAccumTol},
                     {"prod", Red::Prod, kProdMask, kAccumTol},
                     {"mean", Red::Mean, kFloatMask | kComplexMask, kAccumTol},
                     {"amax", Red::Max, kOrderMask, 1},
                     {"amin", Red::Min, kOrderMask, 1}}) {
    std::string red = rn.name;
    rows.push_back(scatter_row("scatter_reduce." + red, OpId::ScatterReduce, rn.dtypes, rn.r, false,
                               [red](const std::vector<Tensor>& in, const Sample& s) {
                                 return scatter_reduce(in[0], s.ints[0], in[1], in[2], red, s.flag);
                               }));
    rows.back().tol_scale = rn.tol;
    if (rn.r == Red::Sum) {  // sum with include_self false too
      auto base = rows.back().samples;
      rows.back().samples = [base](DType dt) {
        auto r = base(dt), more = base(dt);
        for (auto& m : more) m.flag = false, m.desc += " exclude_self";
        r.insert(r.end(), more.begin(), more.end());
        return r;
      };
    }
  }
  rows.back().errors = {
      {"[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin",
       [] { scatter_reduce(f32({3}), 0, i64({0}), f32({1}), "max"); }},
      {"[scatter_reduce] amax/amin reductions do not support complex tensors",
       [] {
         scatter_reduce(zeros({3}, DType::Complex64), 0, i64({0}), zeros({1}, DType::Complex64),
                        "amin");
       }},
  };
  {
    OpRow r;
    r.name = "index_add";
    r.covers = {OpId::IndexAdd};
    r.dtypes = kArithMask;
    r.samples = [](DType dt) { return index_1d_samples(dt, true); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return index_add(in[0], s.ints[0], in[1], in[2], s.scalars[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_index_1d(in, s, 0); };
    r.tol_scale = kAccumTol;
    r.errors = {
        {"[index_add] index 2 is out of bounds for dimension 0 with size 2",
         [] {
           index_add(f32({2, 3}), 0, i64({2}), f32({1, 3}));
         }},
        {"[index_add] number of indices (2) should be equal to source.size(dim) (1)",
         [] {
           index_add(f32({2, 3}), 0, i64({0, 1}), f32({1, 3}));
         }},
        {"[index_add] self (float32) and source (float64) must have the same scalar type",
         [] {
           index_add(f32({2, 3}), 0, i64({0}), zeros({1, 3}, DType::Float64));
         }},
        {"[index_add] for integral input tensors, argument alpha must not be a floating point",
         [] { index_add(zeros({2}, DType::Int64), 0, i64({0}), zeros({1}, DType::Int64), 0.5); }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "index_copy";
    r.covers = {OpId::IndexCopy};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) { return index_1d_samples(dt, true); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      Tensor i64idx = in[1].dtype() == DType::Int64 ? in[1] : in[1].to(DType::Int64);
      return index_copy(in[0], s.ints[0], i64idx, in[2]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_index_1d(in, s, 1); };
    r.errors = {
        {"[index_copy] expected dtype int64 for index, but got int32",
         [] { index_copy(f32({2}), 0, index_of({0}, {1}, DType::Int32), f32({1})); }},
        {"[index_copy] source [1, 2] and self [2, 3] must match in every dimension but dim 0",
         [] {
           index_copy(f32({2, 3}), 0, i64({0}), f32({1, 2}));
         }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "index_fill";
    r.covers = {OpId::IndexFill};
    r.dtypes = kMoveMask & ~kBoolMask;
    r.samples = [](DType dt) { return index_1d_samples(dt, false); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      Tensor idx = in[1].dtype() == DType::Int64 ? in[1] : in[1].to(DType::Int64);
      Tensor x = in[0].clone();
      return x.index_fill_(s.ints[0], idx, s.scalars[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_index_1d(in, s, 2); };
    r.errors = {
        {"[index_fill] only supports a 0-dimensional value tensor",
         [] { index_fill(f32({2}), 0, i64({0}), f32({1})); }},
        {"[index_fill] index 3 is out of bounds for dimension 0 with size 2",
         [] { index_fill(f32({2}), 0, i64({3}), 1.0); }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "index";
    r.covers = {OpId::Index};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) { return advanced_samples(dt, false); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return index(in[0], index_list(in, s, 1));
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      return ref_index(in[0], index_list(in, s, 1), out_master(in[0]));
    };
    r.errors = {
        {"[index] index 4 is out of bounds for dimension 1 with size 4",
         [] {
           index(f32({2, 4}), {std::nullopt, i64({4})});
         }},
        {"[index] too many indices for tensor of dimension 1",
         [] {
           index(f32({4}), {i64({0}), i64({0})});
         }},
        {"[index] tensors used as indices must be int64, int32, uint8 or bool tensors",
         [] { index(f32({4}), {f32({1})}); }},
        {"[index] shape mismatch: indexing tensors could not be broadcast together",
         [] {
           index(f32({4, 4}), {i64({0, 1}), i64({0, 1, 2})});
         }},
    };
    rows.push_back(std::move(r));
  }
  for (bool acc : {false, true}) {
    OpRow r;
    r.name = acc ? "index_put.accumulate" : "index_put";
    r.covers = {OpId::IndexPut};
    r.dtypes = acc ? kArithMask : kMoveMask;
    r.samples = [](DType dt) { return advanced_samples(dt, true); };
    r.op = [acc](const std::vector<Tensor>& in, const Sample& s) {
      return index_put(in[0], index_list(in, s, 1), in.back(), acc);
    };
    r.ref = [acc](const std::vector<Tensor>& in, const Sample& s) {
      return ref_index_put(in, s, acc);
    };
    if (acc) r.tol_scale = kAccumTol;
    if (!acc)
      r.errors = {
          {"[index_put] shape mismatch: value tensor of shape [2] cannot be broadcast to indexing "
           "result of shape [3]",
           [] {
             index_put(f32({4}), {i64({0, 1, 2})}, f32({2}));
           }},
          {"[index_put] index put requires the source and destination dtypes match",
           [] { index_put(f32({4}), {i64({0})}, zeros({1}, DType::Float64)); }},
          {"[index_put] index -5 is out of bounds for dimension 0 with size 4",
           [] {
             Tensor x = f32({4});
             x.index_put_({std::optional<Tensor>(i64({-5}))}, f32({1}));
           }},
      };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "masked_fill";
    r.covers = {OpId::MaskedFill};
    r.dtypes = kMoveMask & ~kBoolMask;
    r.samples = [](DType dt) { return mask_samples(dt, false); };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return masked_fill(in[0], in[1], s.scalars[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_masked(in, s, 0); };
    r.errors = {
        {"[masked_fill] only supports boolean masks, but got mask with dtype uint8",
         [] { masked_fill(f32({2}), zeros({2}, DType::UInt8), 1.0); }},
        {"[masked_fill] only supports a 0-dimensional value tensor",
         [] { masked_fill(f32({2}), zeros({2}, DType::Bool), f32({1})); }},
        {"[masked_fill] mask of shape [2, 2] cannot be broadcast to the shape [2]",
         [] {
           f32({2}).masked_fill_(zeros({2, 2}, DType::Bool), 1.0);
         }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "masked_fill_";
    r.covers = {OpId::MaskedFill};
    r.dtypes = kMoveMask & ~kBoolMask;
    r.samples = [](DType dt) {
      std::vector<Sample> out;
      for (auto& s : mask_samples(dt, false))  // in place: the mask must broadcast to x
        if (ref_broadcast({shape_of(s.inputs[0]), shape_of(s.inputs[1])}) == shape_of(s.inputs[0]))
          out.push_back(s);
      return out;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      Tensor x = in[0].clone();
      return x.masked_fill_(in[1], s.scalars[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_masked(in, s, 0); };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "masked_select";
    r.covers = {OpId::MaskedSelect};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) { return mask_samples(dt, false); };
    r.op = [](const std::vector<Tensor>& in, const Sample&) { return masked_select(in[0], in[1]); };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_masked(in, s, 1); };
    r.errors = {{"[masked_select] shapes [2] and [3] cannot be broadcast",
                 [] { masked_select(f32({2}), zeros({3}, DType::Bool)); }}};
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "masked_scatter";
    r.covers = {OpId::MaskedScatter};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) { return mask_samples(dt, true); };
    r.op = [](const std::vector<Tensor>& in, const Sample&) {
      return masked_scatter(in[0], in[1], in[2]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) { return ref_masked(in, s, 2); };
    r.errors = {
        {"[masked_scatter] the mask has 2 true elements but source has only 1 elements",
         [] { masked_scatter(f32({2}), ones({2}, DType::Bool), f32({1})); }},
        {"[masked_scatter] expected self and source to have the same dtypes",
         [] { masked_scatter(f32({2}), ones({2}, DType::Bool), zeros({2}, DType::Int64)); }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "take";
    r.covers = {OpId::IndexSelect};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) {
      std::vector<Sample> s;
      uint64_t seed = 200;
      for (auto [xs, is] : std::vector<std::pair<Shape, Shape>>{
               {{3, 4}, {2, 5}}, {{}, {3}}, {{5}, {}}, {{2, 3}, {0}}, {{70, 50}, {300, 20}}}) {
        const int64_t n = numel_of(xs);
        s.push_back(make({rand_master(xs, is_complex(dt), seed++), rand_index(is, -n, n, seed++)},
                         {false, true}, {}, str(xs) + " index " + str(is)));
      }
      return s;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample&) { return take(in[0], in[1]); };
    r.ref = [](const std::vector<Tensor>& in, const Sample&) {
      const Vals x = values(in[0]);
      Vals out;
      for (int64_t i : ints_of(in[1])) out.push_back(x[wrap(i, static_cast<int64_t>(x.size()))]);
      return from_values(out, in[1].sizes(), out_master(in[0]));
    };
    r.errors = {
        {"[take] index 6 is out of bounds for dimension 0 with size 6",
         [] {
           take(f32({2, 3}), i64({6}));
         }},
        {"[take] expected dtype int64 for index, but got int32",
         [] {
           take(f32({2, 3}), index_of({0}, {1}, DType::Int32));
         }},
    };
    rows.push_back(std::move(r));
  }
  {
    OpRow r;
    r.name = "take_along_dim";
    r.covers = {OpId::Gather};
    r.dtypes = kMoveMask;
    r.samples = [](DType dt) {
      std::vector<Sample> s;
      uint64_t seed = 300;
      // (x shape, indices shape, dim; -100 = no dim)
      for (auto [xs, is, d] :
           std::vector<std::tuple<Shape, Shape, int64_t>>{{{3, 4}, {3, 2}, 1},
                                                          {{3, 4}, {1, 6}, 1},
                                                          {{3, 1}, {2, 5}, 0},
                                                          {{3, 4}, {5}, -100},
                                                          {{4, 3, 2}, {4, 1, 2}, -2}}) {
        const int64_t n = d == -100 ? numel_of(xs) : xs[d < 0 ? d + xs.size() : d];
        s.push_back(make({rand_master(xs, is_complex(dt), seed++), rand_index(is, -n, n, seed++)},
                         {false, true}, {d}, str(xs) + " indices " + str(is)));
      }
      return s;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      if (s.ints[0] == -100) return take_along_dim(in[0], in[1]);
      return take_along_dim(in[0], in[1], s.ints[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      const Shape xs = shape_of(in[0]), is = shape_of(in[1]);
      const Vals x = values(in[0]);
      const auto idx = ints_of(in[1]);
      if (s.ints[0] == -100) {
        Vals out;
        for (int64_t i : idx) out.push_back(x[wrap(i, static_cast<int64_t>(x.size()))]);
        return from_values(out, {static_cast<int64_t>(out.size())}, out_master(in[0]));
      }
      const int64_t nd = static_cast<int64_t>(xs.size());
      const int64_t d = s.ints[0] < 0 ? s.ints[0] + nd : s.ints[0];
      Shape os(nd);
      for (int64_t j = 0; j < nd; ++j) os[j] = j == d ? is[j] : std::max(xs[j], is[j]);
      Vals out;
      for (int64_t p = 0; p < numel_of(os); ++p) {
        Shape c = unravel(p, os), xc(nd), ic(nd);
        for (int64_t j = 0; j < nd; ++j) ic[j] = is[j] == 1 ? 0 : c[j];
        for (int64_t j = 0; j < nd; ++j) xc[j] = xs[j] == 1 ? 0 : c[j];
        xc[d] = wrap(idx[ravel(ic, is)], xs[d]);
        out.push_back(x[ravel(xc, xs)]);
      }
      return from_values(out, os, out_master(in[0]));
    };
    r.errors = {
        {"[take_along_dim] input and indices should have the same number of dimensions",
         [] {
           take_along_dim(f32({2, 3}), i64({0}), 1);
         }},
        {"[take_along_dim] dtype of indices should be int64 but got int32",
         [] {
           take_along_dim(f32({2, 3}), index_of({0}, {1, 1}, DType::Int32), 1);
         }},
    };
    rows.push_back(std::move(r));
  }
  for (bool arg : {false, true}) {
    OpRow r;
    r.name = arg ? "argwhere" : "nonzero";
    r.covers = {OpId::Nonzero};
    r.dtypes = kMoveMask;
    r.samples = nonzero_samples;
    r.op = [arg](const std::vector<Tensor>& in, const Sample&) {
      return arg ? argwhere(in[0]) : nonzero(in[0]);
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample&) { return ref_nonzero(in[0]); };
    r.out_dtype = [](DType) { return DType::Int64; };
    rows.push_back(std::move(r));
  }
  return rows;
}

KILN_OP_ROWS(index_rows);

}  // namespace
}  // namespace kiln::testing
