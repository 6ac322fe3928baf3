// Op-table rows for meshgrid, cartesian_prod, broadcast_to and broadcast_tensors (included once
// by shape_rows_test.cpp; several outputs are stacked into one tensor).
#pragma once

#include "op_db/scan_rows_util.h"

namespace kiln::testing::shape_rows {

// ---- grids and broadcasting (several outputs are stacked into one tensor) ----
inline std::vector<OpRow> grid_rows() {
  std::vector<OpRow> rows;
  for (std::string ix : {"ij", "xy"}) {
    OpRow r = row(
        "meshgrid." + ix, {OpId::Cat}, detail::kNumericMask,
        [](DType) {
          return std::vector<Sample>{sample({rnd({3}, 1), rnd({2}, 2)}, {}, "two"),
                                     sample({rnd({2}, 1), rnd({}, 2), rnd({4}, 3)}, {}, "three"),
                                     sample({rnd({3}, 4)}, {}, "one")};
        },
        [ix](const std::vector<Tensor>& in, const Sample&) { return stack(meshgrid(in, ix)); },
        [ix](const std::vector<Tensor>& in, const Sample&) {
          const int64_t k = static_cast<int64_t>(in.size());
          Shape g;
          for (const Tensor& t : in) g.push_back(t.numel());
          if (ix == "xy" && k >= 2) std::swap(g[0], g[1]);
          Shape os = g;
          os.insert(os.begin(), k);
          std::vector<Vals> vs;
          for (const Tensor& t : in) vs.push_back(values(t));
          Vals r(numel_of(os));
          for (int64_t o = 0; o < numel_of(os); ++o) {
            Shape i = unravel(o, os);
            const int64_t which = i[0];
            int64_t pos = which + 1;  // grid dim of input `which`
            if (ix == "xy" && k >= 2 && which < 2) pos = 2 - which;
            r[o] = vs[which][i[pos]];
          }
          return from_values(r, os, in[0].dtype());
        },
        [](DType d) { return d; });
    if (ix == "ij")
      r.errors = {err("indexing", [] { return meshgrid({ones({2})}, "ab"); }), err("0D or 1D", [] {
                    return meshgrid({ones({2, 2})});
                  })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "cartesian_prod", {OpId::Cat}, detail::kNumericMask,
      [](DType) {
        return std::vector<Sample>{sample({rnd({3}, 1), rnd({2}, 2)}, {}, "two"),
                                   sample({rnd({2}, 1), rnd({2}, 2), rnd({3}, 3)}, {}, "three"),
                                   sample({rnd({4}, 4)}, {}, "one")};
      },
      [](const std::vector<Tensor>& in, const Sample&) { return cartesian_prod(in); },
      [](const std::vector<Tensor>& in, const Sample&) {
        const int64_t k = static_cast<int64_t>(in.size());
        Shape g;
        for (const Tensor& t : in) g.push_back(t.numel());
        std::vector<Vals> vs;
        for (const Tensor& t : in) vs.push_back(values(t));
        const int64_t n = numel_of(g);
        Vals r;
        for (int64_t o = 0; o < n; ++o) {
          Shape i = unravel(o, g);
          for (int64_t j = 0; j < k; ++j) r.push_back(vs[j][i[j]]);
        }
        return from_values(r, k == 1 ? Shape{n} : Shape{n, k}, in[0].dtype());
      },
      [](DType d) { return d; }));
  auto bcast_ref = [](const Tensor& x, const Shape& os) {
    const Shape xs = shape_of(x);
    const int64_t off = static_cast<int64_t>(os.size() - xs.size());
    return ref_index_map(x, os, [&](const Shape& o) {
      Shape i(xs.size());
      for (size_t d = 0; d < xs.size(); ++d) i[d] = xs[d] == 1 ? 0 : o[d + off];
      return ravel(i, xs);
    });
  };
  {
    OpRow r = row(
        "broadcast_to", {OpId::Copy}, detail::kNumericMask,
        [](DType) {
          return std::vector<Sample>{sample({rnd({3, 1}, 1)}, {2, 3, 4}, "[3,1] to [2,3,4]"),
                                     sample({rnd({}, 2)}, {2, 2}, "0-dim"),
                                     sample({rnd({1, 4}, 3)}, {0, 4}, "to empty")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return broadcast_to(in[0], s.ints).contiguous();
        },
        [bcast_ref](const std::vector<Tensor>& in, const Sample& s) {
          return bcast_ref(in[0], s.ints);
        },
        [](DType d) { return d; });
    r.errors = {err("broadcast_to", [] { return broadcast_to(ones({3}), {4}); })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "broadcast_tensors", {OpId::Cat}, detail::kNumericMask,
      [](DType) {
        return std::vector<Sample>{sample({rnd({3, 1}, 1), rnd({4}, 2), rnd({}, 3)}, {}, "three")};
      },
      [](const std::vector<Tensor>& in, const Sample&) { return stack(broadcast_tensors(in)); },
      [bcast_ref](const std::vector<Tensor>& in, const Sample&) {
        std::vector<Tensor> b;
        for (const Tensor& t : in) b.push_back(bcast_ref(t, {3, 4}));
        Vals r;
        for (const Tensor& t : b)
          for (const C& v : values(t)) r.push_back(v);
        return from_values(r, {3, 3, 4}, in[0].dtype());
      },
      [](DType d) { return d; }));
  return rows;
}

}  // namespace kiln::testing::shape_rows
