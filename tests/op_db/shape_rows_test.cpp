// Op-table rows for the shape ops (cat/stack family, flip, roll, rot90, repeat, tile,
// repeat_interleave, tril/triu, pad, diag, diag_embed, block_diag, meshgrid, cartesian_prod,
// broadcast_to/broadcast_tensors). References map output indices to input indices by hand.
#include <algorithm>

#include "op_db/scan_rows_util.h"
#include "op_db/shape_grid_rows_util.h"

namespace kiln::testing {
namespace {

using namespace shape_rows;
using detail::kNumericMask;

const uint32_t kAll = kNumericMask;
DType same(DType d) { return d; }

// ---- cat ----
Tensor ref_cat(const std::vector<Tensor>& in, int64_t dim) {
  std::vector<Tensor> used;
  for (const Tensor& t : in)
    if (!(t.dim() == 1 && t.size(0) == 0)) used.push_back(t);
  if (used.empty()) return from_values({}, {0}, in[0].dtype());
  Shape os = shape_of(used[0]);
  const int64_t nd = static_cast<int64_t>(os.size());
  if (dim < 0) dim += nd;
  os[dim] = 0;
  for (const Tensor& t : used) os[dim] += t.size(dim);
  std::vector<Vals> vs;
  for (const Tensor& t : used) vs.push_back(values(t));
  Vals r(numel_of(os));
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) {
    Shape idx = unravel(o, os);
    int64_t k = 0;
    while (idx[dim] >= used[k].size(dim)) idx[dim] -= used[k++].size(dim);
    r[o] = vs[k][ravel(idx, shape_of(used[k]))];
  }
  return from_values(r, os, used[0].dtype());
}

std::vector<Sample> cat_samples(DType) {
  uint64_t sd = 1;
  return {
      sample({rnd({2, 3}, sd++), rnd({4, 3}, sd++)}, {0}, "[2,3]+[4,3] dim 0"),
      sample({rnd({2, 3}, sd++), rnd({2, 1}, sd++), rnd({2, 0}, sd++)}, {1}, "three dim 1"),
      sample({rnd({2, 3, 2}, sd++), rnd({2, 3, 5}, sd++)}, {-1}, "3-D dim -1"),
      sample({rnd({5}, sd++)}, {0}, "single"),
      sample({rnd({0}, sd++), rnd({2, 3}, sd++), rnd({0}, sd++), rnd({1, 3}, sd++)}, {0},
             "legacy [0] inputs skipped"),
      sample({rnd({0, 3}, sd++), rnd({0, 3}, sd++)}, {0}, "all empty"),
      sample({rnd({3, 70000}, sd++), rnd({2, 70000}, sd++)}, {0}, "large"),
      sample({rnd({300, 200}, sd++), rnd({300, 100}, sd++)}, {1}, "large dim 1"),
  };
}

OpFn cat_ref() {
  return [](const std::vector<Tensor>& in, const Sample& s) { return ref_cat(in, s.ints[0]); };
}

std::vector<OpRow> cat_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = row(
        "cat", {OpId::Cat}, kAll, cat_samples,
        [](const std::vector<Tensor>& in, const Sample& s) { return cat(in, s.ints[0]); },
        cat_ref(), same);
    r.errors = {
        err("non-empty list", [] { return cat({}); }),
        err("zero-dimensional",
            [] {
              return cat({ones({2}), full({}, 1.0)});
            }),
        err("sizes of tensors must match except in dimension 0",
            [] {
              return cat({ones({2, 3}), ones({2, 4})});
            }),
        err("same number of dimensions",
            [] {
              return cat({ones({2, 3}), ones({2, 3, 1})});
            }),
        err("dimension out of range",
            [] {
              return cat({ones({2, 3}), ones({2, 3})}, 2);
            }),
        err("can't be cast",
            [] {
              Tensor o = empty({0}, kInt64);
              return cat_out(o, {ones({2}), ones({2})});
            }),
    };
    rows.push_back(r);
  }
  rows.push_back(row(
      "cat.out", {OpId::Cat}, kAll, cat_samples,
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor o = empty({0}, in[0].dtype());
        cat_out(o, in, s.ints[0]);
        return o;
      },
      cat_ref(), same));
  // Promotion: the tested dtype with an int64 and a bool tensor.
  rows.push_back(row(
      "cat.promote", {OpId::Cat}, kAll,
      [](DType) {
        Sample s = sample({rnd({2, 2}, 3), from_values({C(3), C(-4)}, {1, 2}, kInt64),
                           from_values({C(1), C(0)}, {1, 2}, kBool)},
                          {0}, "x, int64, bool");
        s.keep_dtype = {false, true, true};
        return std::vector<Sample>{s};
      },
      [](const std::vector<Tensor>& in, const Sample& s) { return cat(in, s.ints[0]); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        std::vector<Tensor> m;
        for (const Tensor& t : in) m.push_back(from_values(values(t), t.sizes(), kFloat64));
        return ref_cat(m, 0);
      },
      [](DType d) {
        return (d == kBool || d == kUInt8 || d == kInt8 || d == kInt16 || d == kInt32) ? kInt64 : d;
      }));
  auto stack_ref = [](const std::vector<Tensor>& in, int64_t dim) {
    std::vector<Tensor> u;
    const int64_t nd = in[0].dim() + 1;
    if (dim < 0) dim += nd;
    for (const Tensor& t : in) {
      Shape s = shape_of(t);
      s.insert(s.begin() + dim, 1);
      u.push_back(from_values(values(t), s, t.dtype()));
    }
    return ref_cat(u, dim);
  };
  {
    OpRow r = row(
        "stack", {OpId::Cat}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({2, 3}, 1), rnd({2, 3}, 2)}, {0}, "dim 0"),
              sample({rnd({2, 3}, 1), rnd({2, 3}, 2), rnd({2, 3}, 3)}, {2}, "dim 2"),
              sample({rnd({2, 3}, 1), rnd({2, 3}, 2)}, {-2}, "dim -2"),
              sample({rnd({}, 1), rnd({}, 2)}, {0}, "0-dim"),
              sample({rnd({0, 2}, 1), rnd({0, 2}, 2)}, {1}, "empty"),
          };
        },
        [](const std::vector<Tensor>& in, const Sample& s) { return stack(in, s.ints[0]); },
        [stack_ref](const std::vector<Tensor>& in, const Sample& s) {
          return stack_ref(in, s.ints[0]);
        },
        same);
    r.errors = {err("equal size",
                    [] {
                      return stack({ones({2, 3}), ones({3, 2})});
                    }),
                err("non-empty", [] { return stack({}); })};
    rows.push_back(r);
  }
  auto join_samples = [](DType) {
    return std::vector<Sample>{
        sample({rnd({3}, 1), rnd({2}, 2)}, {}, "1-D"),
        sample({rnd({2, 3}, 1), rnd({2, 1}, 2)}, {}, "2-D"),
        sample({rnd({}, 1), rnd({}, 2)}, {}, "0-dim"),
        sample({rnd({2, 3, 2}, 1), rnd({2, 1, 2}, 2)}, {}, "3-D"),
    };
  };
  rows.push_back(row(
      "hstack", {OpId::Cat}, kAll, join_samples,
      [](const std::vector<Tensor>& in, const Sample&) { return hstack(in); },
      [](const std::vector<Tensor>& in, const Sample&) {
        std::vector<Tensor> u;
        for (const Tensor& t : in)
          u.push_back(t.dim() == 0 ? from_values(values(t), {1}, t.dtype()) : t);
        return ref_cat(u, u[0].dim() == 1 ? 0 : 1);
      },
      same));
  auto vs_samples = [](DType) {
    return std::vector<Sample>{
        sample({rnd({3}, 1), rnd({3}, 2)}, {}, "1-D"),
        sample({rnd({2, 3}, 1), rnd({1, 3}, 2)}, {}, "2-D"),
        sample({rnd({}, 1), rnd({}, 2)}, {}, "0-dim"),
        sample({rnd({2, 3}, 1), rnd({3}, 2)}, {}, "2-D and 1-D"),
    };
  };
  rows.push_back(row(
      "vstack", {OpId::Cat}, kAll, vs_samples,
      [](const std::vector<Tensor>& in, const Sample&) { return vstack(in); },
      [](const std::vector<Tensor>& in, const Sample&) {
        std::vector<Tensor> u;
        for (const Tensor& t : in) {
          Shape s = t.dim() == 0 ? Shape{1, 1} : t.dim() == 1 ? Shape{1, t.size(0)} : shape_of(t);
          u.push_back(from_values(values(t), s, t.dtype()));
        }
        return ref_cat(u, 0);
      },
      same));
  rows.push_back(row(
      "dstack", {OpId::Cat}, kAll,
      [](DType) {
        return std::vector<Sample>{sample({rnd({3}, 1), rnd({3}, 2)}, {}, "1-D"),
                                   sample({rnd({2, 3}, 1), rnd({2, 3}, 2)}, {}, "2-D"),
                                   sample({rnd({}, 1), rnd({}, 2)}, {}, "0-dim"),
                                   sample({rnd({2, 3, 1}, 1), rnd({2, 3, 2}, 2)}, {}, "3-D")};
      },
      [](const std::vector<Tensor>& in, const Sample&) { return dstack(in); },
      [](const std::vector<Tensor>& in, const Sample&) {
        std::vector<Tensor> u;
        for (const Tensor& t : in) {
          Shape s = t.dim() == 0   ? Shape{1, 1, 1}
                    : t.dim() == 1 ? Shape{1, t.size(0), 1}
                    : t.dim() == 2 ? Shape{t.size(0), t.size(1), 1}
                                   : shape_of(t);
          u.push_back(from_values(values(t), s, t.dtype()));
        }
        return ref_cat(u, 2);
      },
      same));
  rows.push_back(row(
      "column_stack", {OpId::Cat}, kAll,
      [](DType) {
        return std::vector<Sample>{sample({rnd({3}, 1), rnd({3}, 2)}, {}, "1-D"),
                                   sample({rnd({3, 2}, 1), rnd({3}, 2)}, {}, "2-D and 1-D"),
                                   sample({rnd({}, 1), rnd({}, 2)}, {}, "0-dim")};
      },
      [](const std::vector<Tensor>& in, const Sample&) { return column_stack(in); },
      [](const std::vector<Tensor>& in, const Sample&) {
        std::vector<Tensor> u;
        for (const Tensor& t : in) {
          Shape s = t.dim() <= 1 ? Shape{t.numel(), 1} : shape_of(t);
          u.push_back(from_values(values(t), s, t.dtype()));
        }
        return ref_cat(u, 1);
      },
      same));
  return rows;
}

// ---- flip, roll, rot90 ----
Tensor ref_flip(const Tensor& x, Shape dims) {
  const Shape s = shape_of(x);
  for (auto& d : dims) d = d < 0 ? d + static_cast<int64_t>(s.size()) : d;
  return ref_index_map(x, s, [&](const Shape& o) {
    Shape i = o;
    for (int64_t d : dims) i[d] = s[d] - 1 - o[d];
    return ravel(i, s);
  });
}

Tensor ref_roll(const Tensor& x, const Shape& shifts, Shape dims) {
  const Shape s = shape_of(x);
  if (dims.empty()) {
    const int64_t n = x.numel();
    return ref_index_map(x, s, [&](const Shape& o) {
      const int64_t f = ravel(o, s);
      return n == 0 ? 0 : (((f - shifts[0]) % n) + n) % n;
    });
  }
  for (auto& d : dims) d = d < 0 ? d + static_cast<int64_t>(s.size()) : d;
  return ref_index_map(x, s, [&](const Shape& o) {
    Shape i = o;
    for (size_t k = 0; k < dims.size(); ++k) {
      const int64_t n = s[dims[k]];
      i[dims[k]] = (((i[dims[k]] - shifts[k]) % n) + n) % n;
    }
    return ravel(i, s);
  });
}

std::vector<Sample> flip_samples(DType) {
  return {
      sample({rnd({2, 3, 4}, 1)}, {0}, "dim 0"),
      sample({rnd({2, 3, 4}, 2)}, {-1, 1}, "dims -1 1"),
      sample({rnd({2, 3, 4}, 3)}, {}, "no dims"),
      sample({rnd({}, 4)}, {}, "0-dim"),
      sample({rnd({0, 3}, 5)}, {1}, "empty"),
      sample({rnd({7}, 6)}, {0}, "1-D"),
      sample({rnd({400, 300}, 7)}, {0, 1}, "large"),
  };
}

std::vector<OpRow> reorder_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = row(
        "flip", {OpId::Flip}, kAll, flip_samples,
        [](const std::vector<Tensor>& in, const Sample& s) { return flip(in[0], s.ints); },
        [](const std::vector<Tensor>& in, const Sample& s) { return ref_flip(in[0], s.ints); },
        same);
    r.errors = {err("appears multiple times",
                    [] {
                      return flip(ones({2, 3}), {0, -2});
                    }),
                err("dimension out of range", [] {
                  return flip(ones({2, 3}), {2});
                })};
    rows.push_back(r);
  }
  {
    auto two_d = [](DType) {
      return std::vector<Sample>{sample({rnd({3, 4}, 1)}, {}, "2-D"),
                                 sample({rnd({2, 3, 4}, 2)}, {}, "3-D")};
    };
    OpRow r = row(
        "fliplr", {OpId::Flip}, kAll, two_d,
        [](const std::vector<Tensor>& in, const Sample&) { return fliplr(in[0]); },
        [](const std::vector<Tensor>& in, const Sample&) { return ref_flip(in[0], {1}); }, same);
    r.errors = {err("fliplr", [] { return fliplr(ones({3})); })};
    rows.push_back(r);
    OpRow u = row(
        "flipud", {OpId::Flip}, kAll, two_d,
        [](const std::vector<Tensor>& in, const Sample&) { return flipud(in[0]); },
        [](const std::vector<Tensor>& in, const Sample&) { return ref_flip(in[0], {0}); }, same);
    u.errors = {err("flipud", [] { return flipud(full({}, 1.0)); })};
    rows.push_back(u);
  }
  {
    // ints = shifts..., dims... (split in half; an odd count means no dims)
    OpRow r = row(
        "roll", {OpId::Cat}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({2, 5}, 1)}, {2}, "flattened shift 2"),
              sample({rnd({2, 5}, 2)}, {-13}, "flattened shift -13"),
              sample({rnd({2, 5}, 3)}, {3, 1}, "dim 1 shift 3"),
              sample({rnd({3, 4, 2}, 4)}, {1, -7, 0, 1}, "two dims"),
              sample({rnd({3, 4}, 5)}, {4, 1}, "full turn"),
              sample({rnd({0, 4}, 6)}, {1, 0}, "empty"),
              sample({rnd({300, 301}, 7)}, {17, -5, 0, 1}, "large"),
          };
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const size_t h = s.ints.size() / 2;
          if (s.ints.size() % 2) return roll(in[0], s.ints);
          return roll(in[0], IntArrayRef(s.ints.data(), h), IntArrayRef(s.ints.data() + h, h));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const size_t h = s.ints.size() / 2;
          if (s.ints.size() % 2) return ref_roll(in[0], s.ints, {});
          return ref_roll(in[0], Shape(s.ints.begin(), s.ints.begin() + h),
                          Shape(s.ints.begin() + h, s.ints.end()));
        },
        same);
    r.errors = {err("must align",
                    [] {
                      return roll(ones({2, 3}), {1, 2}, {0});
                    }),
                err("must align", [] {
                  return roll(ones({2, 3}), {1, 2});
                })};
    rows.push_back(r);
  }
  {
    // ints = k, d0, d1
    OpRow r = row(
        "rot90", {OpId::Flip}, kAll,
        [](DType) {
          std::vector<Sample> v;
          for (int64_t k : {-1, 0, 1, 2, 3, 5})
            v.push_back(sample({rnd({3, 4}, 10 + k)}, {k, 0, 1}, "k " + std::to_string(k)));
          v.push_back(sample({rnd({2, 3, 4}, 9)}, {1, 2, 0}, "3-D dims 2 0"));
          return v;
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return rot90(in[0], s.ints[0], {s.ints[1], s.ints[2]});
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          // rot90 by one: out[..., i, j] = in[..., j, n1 - 1 - i] in the (d0, d1) plane.
          Tensor y = in[0];
          const int64_t d0 = s.ints[1], d1 = s.ints[2];
          for (int64_t t = 0; t < ((s.ints[0] % 4) + 4) % 4; ++t) {
            Shape is = shape_of(y), os = is;
            std::swap(os[d0], os[d1]);
            y = ref_index_map(y, os, [&](const Shape& o) {
              Shape i = o;
              i[d0] = o[d1];
              i[d1] = is[d1] - 1 - o[d0];
              return ravel(i, is);
            });
          }
          return y;
        },
        same);
    r.errors = {err("rotation dims",
                    [] {
                      return rot90(ones({2, 3}), 1, {0});
                    }),
                err("different",
                    [] {
                      return rot90(ones({2, 3}), 1, {0, 0});
                    }),
                err("total dims", [] {
                  return rot90(ones({3}), 1, {0, 1});
                })};
    rows.push_back(r);
  }
  return rows;
}

// ---- repetition ----
Tensor ref_repeat(const Tensor& x, const Shape& reps) {
  Shape s = shape_of(x);
  while (s.size() < reps.size()) s.insert(s.begin(), 1);
  Shape os(reps.size());
  for (size_t i = 0; i < reps.size(); ++i) os[i] = s[i] * reps[i];
  return ref_index_map(x, os, [&](const Shape& o) {
    Shape i(o.size());
    for (size_t d = 0; d < o.size(); ++d) i[d] = o[d] % s[d];
    return ravel(i, s);
  });
}

// repeat_interleave along dim (x already flattened when no dim) with per-slice counts.
Tensor ref_interleave(const Tensor& x, int64_t dim, const Shape& reps) {
  const Shape s = shape_of(x);
  if (dim < 0) dim += static_cast<int64_t>(s.size());
  Shape src;
  for (int64_t j = 0; j < s[dim]; ++j)
    for (int64_t r = 0; r < reps[reps.size() == 1 ? 0 : j]; ++r) src.push_back(j);
  Shape os = s;
  os[dim] = static_cast<int64_t>(src.size());
  return ref_index_map(x, os, [&](const Shape& o) {
    Shape i = o;
    i[dim] = src[o[dim]];
    return ravel(i, s);
  });
}

std::vector<OpRow> repeat_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = row(
        "repeat", {OpId::Copy}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({2, 3}, 1)}, {2, 1}, "[2,1]"),
              sample({rnd({2, 3}, 2)}, {3, 1, 2}, "new dim"),
              sample({rnd({}, 3)}, {4}, "0-dim"),
              sample({rnd({3}, 4)}, {0, 2}, "zero repeat"),
              sample({rnd({2, 3}, 5)}, {1, 1}, "ones"),
          };
        },
        [](const std::vector<Tensor>& in, const Sample& s) { return in[0].repeat(s.ints); },
        [](const std::vector<Tensor>& in, const Sample& s) { return ref_repeat(in[0], s.ints); },
        same);
    r.errors = {err("can not be smaller",
                    [] {
                      return ones({2, 3}).repeat({2});
                    }),
                err("negative", [] { return ones({2}).repeat({-1}); })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "tile", {OpId::Copy}, kAll,
      [](DType) {
        return std::vector<Sample>{sample({rnd({2, 3}, 1)}, {2}, "short dims"),
                                   sample({rnd({2, 3}, 2)}, {2, 1, 3}, "long dims"),
                                   sample({rnd({3}, 3)}, {}, "no dims")};
      },
      [](const std::vector<Tensor>& in, const Sample& s) { return tile(in[0], s.ints); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Shape reps = s.ints;
        while (static_cast<int64_t>(reps.size()) < in[0].dim()) reps.insert(reps.begin(), 1);
        return ref_repeat(in[0], reps);
      },
      same));
  {
    // ints = repeats, dim (absent: flattened)
    OpRow r = row(
        "repeat_interleave.int", {OpId::Copy}, kAll,
        [](DType) {
          return std::vector<Sample>{sample({rnd({2, 3}, 1)}, {2}, "flat"),
                                     sample({rnd({2, 3}, 2)}, {3, 1}, "dim 1"),
                                     sample({rnd({2, 3}, 3)}, {2, -2}, "dim -2"),
                                     sample({rnd({2, 3}, 4)}, {0, 0}, "zero")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          if (s.ints.size() == 1) return repeat_interleave(in[0], s.ints[0]);
          return repeat_interleave(in[0], s.ints[0], s.ints[1]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          if (s.ints.size() == 1)
            return ref_interleave(from_values(values(in[0]), {in[0].numel()}, in[0].dtype()), 0,
                                  {s.ints[0]});
          return ref_interleave(in[0], s.ints[1], {s.ints[0]});
        },
        same);
    r.errors = {err("can not be negative", [] { return repeat_interleave(ones({2}), -1); })};
    rows.push_back(r);
  }
  {
    // ints = dim, repeats...
    OpRow r = row(
        "repeat_interleave.tensor", {OpId::RepeatInterleave}, kAll,
        [](DType) {
          return std::vector<Sample>{sample({rnd({3, 2}, 1)}, {0, 1, 0, 3}, "dim 0"),
                                     sample({rnd({2, 4}, 2)}, {1, 2, 2, 0, 1}, "dim 1"),
                                     sample({rnd({2, 4, 3}, 3)}, {-2, 3}, "single repeat"),
                                     sample({rnd({2000, 30}, 4)}, {1, 2}, "large")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          std::vector<int64_t> reps(s.ints.begin() + 1, s.ints.end());
          return repeat_interleave(in[0], from_vector(reps, TensorOptions(kInt64)), s.ints[0]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return ref_interleave(in[0], s.ints[0], Shape(s.ints.begin() + 1, s.ints.end()));
        },
        same);
    r.errors = {err("same size as input",
                    [] {
                      return repeat_interleave(ones({3}), from_vector<int64_t>({1, 2}), 0);
                    }),
                err("can not be negative",
                    [] {
                      return repeat_interleave(ones({2}), from_vector<int64_t>({1, -2}), 0);
                    }),
                err("Long or Int", [] { return repeat_interleave(ones({2}), ones({2}), 0); })};
    rows.push_back(r);
  }
  return rows;
}

// ---- triangles, diagonals ----
std::vector<OpRow> tri_rows() {
  std::vector<OpRow> rows;
  auto tri_samples = [](DType) {
    std::vector<Sample> v;
    for (int64_t k : {-1, 0, 2, -5})
      v.push_back(sample({rnd({4, 5}, 20 + k)}, {k}, "[4,5] k " + std::to_string(k)));
    v.push_back(sample({rnd({2, 3, 3}, 1)}, {0}, "batched"));
    v.push_back(sample({rnd({0, 3}, 2)}, {0}, "empty"));
    v.push_back(sample({rnd({3, 700, 90}, 3)}, {1}, "large"));
    return v;
  };
  for (bool lower : {true, false}) {
    auto ref = [lower](const std::vector<Tensor>& in, const Sample& s) {
      const Shape sh = shape_of(in[0]);
      const int64_t k = s.ints[0];
      return ref_index_map(in[0], sh, [&](const Shape& o) {
        const int64_t i = o[o.size() - 2], j = o.back();
        const bool keep = lower ? j - i <= k : j - i >= k;
        return keep ? ravel(o, sh) : int64_t(-1);
      });
    };
    OpRow r = row(
        lower ? "tril" : "triu", {lower ? OpId::Tril : OpId::Triu}, kAll, tri_samples,
        [lower](const std::vector<Tensor>& in, const Sample& s) {
          return lower ? tril(in[0], s.ints[0]) : triu(in[0], s.ints[0]);
        },
        ref, same);
    r.errors = {err("at least 2 dimensions",
                    [lower] { return lower ? tril(ones({3})) : triu(ones({3})); })};
    rows.push_back(r);
    rows.push_back(row(
        lower ? "tril_" : "triu_", {lower ? OpId::Tril : OpId::Triu}, kAll, tri_samples,
        [lower](const std::vector<Tensor>& in, const Sample& s) {
          Tensor y = in[0];  // a fresh tensor per call: modify in place (strided when noncontig)
          return lower ? y.tril_(s.ints[0]) : y.triu_(s.ints[0]);
        },
        ref, same));
  }
  {
    OpRow r = row(
        "diag_embed", {OpId::DiagEmbed}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({3}, 1)}, {0, -2, -1}, "1-D"),
              sample({rnd({2, 3}, 2)}, {1, -2, -1}, "offset 1"),
              sample({rnd({2, 3}, 3)}, {-2, 0, 2}, "offset -2 dims 0 2"),
              sample({rnd({2, 3}, 4)}, {0, 2, 0}, "dims 2 0"),
          };
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return diag_embed(in[0], s.ints[0], s.ints[1], s.ints[2]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const Shape xs = shape_of(in[0]);
          const int64_t nd = in[0].dim() + 1, off = s.ints[0];
          int64_t d1 = s.ints[1] < 0 ? s.ints[1] + nd : s.ints[1];
          int64_t d2 = s.ints[2] < 0 ? s.ints[2] + nd : s.ints[2];
          const int64_t n = xs.back() + std::abs(off);
          Shape os;
          for (int64_t d = 0, k = 0; d < nd; ++d) os.push_back(d == d1 || d == d2 ? n : xs[k++]);
          return ref_index_map(in[0], os, [&](const Shape& o) {
            const int64_t a = o[d1], b = o[d2];
            if (b - a != off) return int64_t(-1);
            Shape i;
            for (int64_t d = 0; d < nd; ++d)
              if (d != d1 && d != d2) i.push_back(o[d]);
            i.push_back(off >= 0 ? a : b);
            return ravel(i, xs);
          });
        },
        same);
    r.errors = {err("cannot be identical", [] { return diag_embed(ones({3}), 0, 0, -2); })};
    rows.push_back(r);
  }
  {
    OpRow r = row(
        "diag", {OpId::DiagEmbed}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({3}, 1)}, {0}, "1-D"),          sample({rnd({3}, 2)}, {-2}, "1-D k -2"),
              sample({rnd({3, 4}, 3)}, {0}, "2-D"),       sample({rnd({3, 4}, 4)}, {2}, "2-D k 2"),
              sample({rnd({3, 4}, 5)}, {-1}, "2-D k -1"), sample({rnd({3, 4}, 6)}, {9}, "2-D k 9")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) { return diag(in[0], s.ints[0]); },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const int64_t k = s.ints[0];
          const Shape xs = shape_of(in[0]);
          if (in[0].dim() == 1) {
            const int64_t n = xs[0] + std::abs(k);
            return ref_index_map(in[0], {n, n}, [&](const Shape& o) {
              return o[1] - o[0] == k ? (k >= 0 ? o[0] : o[1]) : int64_t(-1);
            });
          }
          const int64_t r0 = k >= 0 ? 0 : -k, c0 = k >= 0 ? k : 0;
          const int64_t len = std::max<int64_t>(0, std::min(xs[0] - r0, xs[1] - c0));
          return ref_index_map(in[0], {len},
                               [&](const Shape& o) { return (r0 + o[0]) * xs[1] + c0 + o[0]; });
        },
        same);
    r.errors = {err("1D or 2D", [] { return diag(ones({2, 2, 2})); })};
    rows.push_back(r);
  }
  {
    OpRow r = row(
        "block_diag", {OpId::Cat}, kAll,
        [](DType) {
          return std::vector<Sample>{
              sample({rnd({2, 3}, 1), rnd({}, 2), rnd({3}, 3), rnd({1, 2}, 4)}, {}, "mixed"),
              sample({rnd({2, 2}, 5)}, {}, "one"),
              sample({rnd({0, 2}, 6), rnd({2, 0}, 7)}, {}, "empty blocks")};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return block_diag(in); },
        [](const std::vector<Tensor>& in, const Sample&) {
          int64_t R = 0, Cc = 0;
          std::vector<Shape> sh;
          for (const Tensor& t : in) {
            sh.push_back(t.dim() == 2 ? shape_of(t) : Shape{1, t.numel()});
            R += sh.back()[0];
            Cc += sh.back()[1];
          }
          Vals r(R * Cc, C(0));
          int64_t r0 = 0, c0 = 0;
          for (size_t k = 0; k < in.size(); ++k) {
            const Vals v = values(in[k]);
            for (int64_t i = 0; i < sh[k][0]; ++i)
              for (int64_t j = 0; j < sh[k][1]; ++j)
                r[(r0 + i) * Cc + c0 + j] = v[i * sh[k][1] + j];
            r0 += sh[k][0];
            c0 += sh[k][1];
          }
          return from_values(r, {R, Cc}, in[0].dtype());
        },
        same);
    r.errors = {err("2 or fewer dimensions", [] { return block_diag({ones({1, 1, 1})}); })};
    rows.push_back(r);
  }
  return rows;
}

// ---- pad ----
// ints = pads...; scalars[0] = value; desc starts with the mode.
std::vector<OpRow> pad_rows() {
  std::vector<OpRow> rows;
  for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    auto samples = [mode](DType) {
      std::vector<Sample> v;
      v.push_back(sample({rnd({2, 5}, 1)}, {2, 1}, "1 dim"));
      v.push_back(sample({rnd({1, 2, 4, 5}, 2)}, {1, 2, 3, 0}, "2 dims"));
      v.push_back(sample({rnd({2, 3, 4, 5}, 3)}, {0, 1, 1, 0}, "2 dims batched"));
      v.push_back(sample({rnd({1, 2, 3, 4, 3}, 4)}, {1, 1, 2, 0, 0, 2}, "3 dims"));
      v.push_back(sample({rnd({2, 6}, 5)}, {-1, 2}, "negative left"));
      v.push_back(sample({rnd({2, 6}, 6)}, {3, -2}, "negative right"));
      if (mode == "constant") {
        v.push_back(sample({rnd({3}, 7)}, {0, 0}, "nothing"));
        v.push_back(sample({rnd({}, 8)}, {}, "0-dim"));
        v.push_back(sample({rnd({2, 3}, 9)}, {1, 1, 2, 0}, "all dims"));
        v.push_back(sample({rnd({0, 3}, 10)}, {1, 1, 1, 1}, "empty"));
        v.back().scalars = {0.0};
      }
      return v;
    };
    OpRow r = row(
        "pad." + mode, {OpId::Cat}, kAll, samples,
        [mode](const std::vector<Tensor>& in, const Sample& s) {
          const Scalar v = s.scalars.empty() ? Scalar(1.0) : s.scalars[0];
          return mode == "constant" ? pad(in[0], s.ints, mode, v) : pad(in[0], s.ints, mode);
        },
        [mode](const std::vector<Tensor>& in, const Sample& s) {
          // Negative pads crop first (as PyTorch: the far edge's reflection is unchanged and
          // circular padding wraps within the cropped data); then each padded index maps into
          // the cropped range [lo, lo + m) by the mode's rule.
          const Shape xs = shape_of(in[0]);
          const int64_t nd = static_cast<int64_t>(xs.size()), np = s.ints.size() / 2;
          Shape os = xs, left(nd, 0), lo(nd, 0), m = xs;
          for (int64_t i = 0; i < np; ++i) {
            const int64_t d = nd - 1 - i, l = s.ints[2 * i], r = s.ints[2 * i + 1];
            left[d] = std::max<int64_t>(l, 0);
            lo[d] = std::max<int64_t>(-l, 0);
            m[d] = xs[d] - lo[d] - std::max<int64_t>(-r, 0);
            os[d] = xs[d] + l + r;
          }
          const double fill = s.scalars.empty() ? 1.0 : s.scalars[0].to<double>();
          return ref_index_map(
              in[0], os,
              [&](const Shape& o) {
                Shape i(nd);
                for (int64_t d = 0; d < nd; ++d) {
                  int64_t p = o[d] - left[d];
                  const int64_t n = m[d];
                  if (p < 0 || p >= n) {
                    if (mode == "constant") return int64_t(-1);
                    if (mode == "reflect") p = p < 0 ? -p : 2 * (n - 1) - p;
                    if (mode == "replicate") p = p < 0 ? 0 : n - 1;
                    if (mode == "circular") p = ((p % n) + n) % n;
                  }
                  i[d] = lo[d] + p;
                }
                return ravel(i, xs);
              },
              C(fill));
        },
        same);
    if (mode == "constant")
      r.errors = {err("divisible by 2", [] { return pad(ones({3}), {1}); }),
                  err("padding length",
                      [] {
                        return pad(ones({3}), {1, 1, 1, 1});
                      }),
                  err("negative output size",
                      [] {
                        return pad(ones({3}), {-2, -2});
                      }),
                  err("padding mode", [] {
                    return pad(ones({3}), {1, 1}, "mirror");
                  })};
    if (mode == "reflect")
      r.errors = {err("less than",
                      [] {
                        return pad(ones({1, 3}), {3, 0}, "reflect");
                      }),
                  err("input", [] {
                    return pad(ones({3}), {1, 1}, "reflect");
                  })};
    if (mode == "circular")
      r.errors = {err("wrapping", [] { return pad(ones({1, 3}), {4, 0}, "circular"); })};
    rows.push_back(r);
  }
  return rows;
}

KILN_OP_ROWS(cat_rows);
KILN_OP_ROWS(reorder_rows);
KILN_OP_ROWS(repeat_rows);
KILN_OP_ROWS(tri_rows);
KILN_OP_ROWS(pad_rows);
KILN_OP_ROWS(grid_rows);

}  // namespace
}  // namespace kiln::testing
