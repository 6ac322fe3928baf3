// Op-table rows for einsum (one row per equation pattern, plus its error cases), tensordot, kron
// and linear. The einsum reference enumerates every assignment of the labels (brute force).
#include <algorithm>
#include <map>

#include "op_db/matmul_rows_util.h"

namespace kiln::testing {
namespace {

using namespace matmul_rows;  // NOLINT

// ---- einsum reference: brute force over every assignment of the labels ----
// Labels: letters as their char code; the j-th ellipsis dim (right-aligned) as 1000 + j.
Arr ref_einsum(const std::string& eq0, const std::vector<Arr>& ops) {
  std::string eq;
  for (char ch : eq0)
    if (ch != ' ') eq.push_back(ch);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',')
      terms.emplace_back();
    else
      terms.back().push_back(ch);
  }
  auto letters = [](const std::string& t) {
    return static_cast<int64_t>(std::count_if(t.begin(), t.end(), [](char c) { return c != '.'; }));
  };
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].find("...") != std::string::npos)
      ell = std::max<int64_t>(ell, static_cast<int64_t>(ops[i].shape.size()) - letters(terms[i]));
  auto expand = [&](const std::string& t, int64_t k) {
    std::vector<int> out;
    for (size_t p = 0; p < t.size(); ++p) {
      if (t[p] == '.') {
        for (int64_t e = 0; e < k; ++e) out.push_back(static_cast<int>(1000 + ell - k + e));
        p += 2;
      } else {
        out.push_back(t[p]);
      }
    }
    return out;
  };
  std::vector<std::vector<int>> labels;
  std::map<int, int64_t> size;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t k = static_cast<int64_t>(ops[i].shape.size()) - letters(terms[i]);
    labels.push_back(expand(terms[i], k));
    for (size_t d = 0; d < labels[i].size(); ++d) {
      int l = labels[i][d];
      int64_t sz = ops[i].shape[d];
      if (!size.count(l) || size[l] == 1) size[l] = sz;
      if (l < 1000) ++count[l];
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    out_labels = expand(eq.substr(arrow + 2), ell);
  } else {
    for (int64_t e = 0; e < ell; ++e) out_labels.push_back(static_cast<int>(1000 + e));
    for (auto [l, c] : count)  // std::map: ascending char codes, upper case first
      if (c == 1) out_labels.push_back(l);
  }
  std::vector<int> all;
  for (auto [l, sz] : size) all.push_back(l);
  Shape all_shape, out_shape;
  for (int l : all) all_shape.push_back(size[l]);
  for (int l : out_labels) out_shape.push_back(size[l]);
  Arr out{std::vector<C>(numel_of(out_shape), C(0)), out_shape};
  if (numel_of(all_shape) == 0) return out;
  std::vector<int64_t> idx(all.size(), 0);
  std::map<int, size_t> slot;
  for (size_t i = 0; i < all.size(); ++i) slot[all[i]] = i;
  do {
    C prod = 1;
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t lin = 0;
      for (size_t d = 0; d < labels[i].size(); ++d) {
        int64_t sz = ops[i].shape[d];
        lin = lin * sz + (sz == 1 ? 0 : idx[slot[labels[i][d]]]);
      }
      prod *= ops[i].v[lin];
    }
    int64_t o = 0;
    for (size_t d = 0; d < out_labels.size(); ++d) o = o * out_shape[d] + idx[slot[out_labels[d]]];
    out.v[o] += prod;
  } while (next_index(idx, all_shape));
  return out;
}

OpFn einsum_ref(std::string eq) {
  return [eq](const std::vector<Tensor>& in, const Sample&) {
    std::vector<Arr> a;
    for (const Tensor& t : in) a.push_back(arr(t));
    return to_tensor(ref_einsum(eq, a), master_of(in));
  };
}

std::vector<OpRow> contraction_rows() {
  std::vector<OpRow> rows;
  {  // tensordot; ints: {n} for an int dims, or {dims_a..., dims_b...} (even count, size > 1)
    auto td_eq = [](const Sample& s, int64_t na, int64_t nb) {
      std::vector<int64_t> da, db;
      if (s.ints.size() == 1) {
        for (int64_t i = 0; i < s.ints[0]; ++i) {
          da.push_back(na - s.ints[0] + i);
          db.push_back(i);
        }
      } else {
        size_t h = s.ints.size() / 2;
        da.assign(s.ints.begin(), s.ints.begin() + h);
        db.assign(s.ints.begin() + h, s.ints.end());
      }
      std::string ta, tb, out;
      for (int64_t i = 0; i < na; ++i) ta.push_back(static_cast<char>('a' + i));
      for (int64_t i = 0; i < nb; ++i) tb.push_back(static_cast<char>('n' + i));
      for (size_t i = 0; i < da.size(); ++i) tb[db[i]] = ta[da[i]];
      for (char c : ta)
        if (tb.find(c) == std::string::npos) out.push_back(c);
      for (char c : tb)
        if (ta.find(c) == std::string::npos) out.push_back(c);
      return ta + "," + tb + "->" + out;
    };
    OpRow r = gemm_row(
        "tensordot",
        [](DType dt) {
          return std::vector<Sample>{
              sample({{3, 4, 5}, {4, 5, 2}}, dt, "dims=2", {2}),
              sample({{3, 4}, {2, 3}}, dt, "dims=0", {0}),
              sample({{4, 3, 5}, {5, 4, 2}}, dt, "lists {0,2} {1,0}", {0, 2, 1, 0}),
              sample({{3, 1}, {4, 2}}, dt, "size-1 broadcast", {1, 0}),
              sample({{2, 0}, {0, 3}}, dt, "empty", {1}),
              sample({{2, 3}, {2, 3}}, dt, "all dims", {2})};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          if (s.ints.size() == 1) return tensordot(in[0], in[1], s.ints[0]);
          size_t h = s.ints.size() / 2;
          return tensordot(in[0], in[1], IntArrayRef(s.ints.data(), h),
                           IntArrayRef(s.ints.data() + h, h));
        },
        [td_eq](const std::vector<Tensor>& in, const Sample& s) {
          return einsum_ref(td_eq(s, in[0].dim(), in[1].dim()))(in, s);
        });
    r.errors.push_back(
        {"[tensordot] contracted dimensions need to match, but first has size 3 in "
         "dim 1 and second has size 4 in dim 0",
         [] {
           tensordot(zeros({2, 3}), zeros({4, 5}), {1}, {0});
         }});
    r.errors.push_back({"[tensordot] both dimension lists should have same length", [] {
                          tensordot(zeros({2, 3}), zeros({3, 2}), {1}, {0, 1});
                        }});
    r.errors.push_back(
        {"[tensordot] expects dims >= 0", [] { tensordot(zeros({2}), zeros({2}), -1); }});
    rows.push_back(r);
  }
  {
    OpRow r = gemm_row(
        "kron",
        [](DType dt) {
          return std::vector<Sample>{sample({{2, 3}, {4, 5}}, dt), sample({{2}, {3, 2}}, dt),
                                     sample({{}, {3}}, dt), sample({{2, 1, 3}, {2, 2}}, dt),
                                     sample({{0, 2}, {2, 2}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].kron(in[1]); },
        ref2([](const Arr& a0, const Arr& b0, const Sample&) {
          Arr a = a0, b = b0;
          size_t nd = std::max(a.shape.size(), b.shape.size());
          a.shape.insert(a.shape.begin(), nd - a.shape.size(), 1);
          b.shape.insert(b.shape.begin(), nd - b.shape.size(), 1);
          Shape os(nd);
          for (size_t d = 0; d < nd; ++d) os[d] = a.shape[d] * b.shape[d];
          Arr o{std::vector<C>(numel_of(os)), os};
          if (numel_of(os) == 0) return o;
          std::vector<int64_t> ia(nd, 0);
          size_t pa = 0;
          do {
            std::vector<int64_t> ib(nd, 0);
            size_t pb = 0;
            do {
              int64_t lin = 0;
              for (size_t d = 0; d < nd; ++d) lin = lin * os[d] + ia[d] * b.shape[d] + ib[d];
              o.v[lin] = a.v[pa] * b.v[pb];
              ++pb;
            } while (next_index(ib, b.shape));
            ++pa;
          } while (next_index(ia, a.shape));
          return o;
        }));
    r.covers = {OpId::Mul};
    r.skip_noncontiguous.clear();  // elementwise products: exact in any layout
    rows.push_back(r);
  }
  {  // linear; ints {has_bias}
    OpRow r = gemm_row(
        "linear",
        [](DType dt) {
          return std::vector<Sample>{sample({{4, 5}, {3, 5}, {3}}, dt, "bias", {1}),
                                     sample({{2, 4, 5}, {3, 5}, {3}}, dt, "3D input", {1}),
                                     sample({{4, 5}, {3, 5}}, dt, "no bias", {0}),
                                     sample({{5}, {3, 5}, {3}}, dt, "1D input", {1}),
                                     sample({{4, 5}, {5}, {}}, dt, "1D weight", {1}),
                                     sample({{0, 5}, {3, 5}, {3}}, dt, "empty batch", {1}),
                                     sample({{2, 4, 5}, {3, 5}, {4, 3}}, dt, "2D bias", {1})};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return linear(in[0], in[1], s.ints[0] ? in[2] : Tensor());
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          Arr w = arr(in[1]);
          if (w.shape.size() == 2) {  // transpose
            Arr t{{}, {w.shape[1], w.shape[0]}};
            for (int64_t j = 0; j < w.shape[1]; ++j)
              for (int64_t i = 0; i < w.shape[0]; ++i) t.v.push_back(w.v[i * w.shape[1] + j]);
            w = t;
          }
          Arr y = ref_matmul(arr(in[0]), w);
          if (s.ints[0]) y = ref_axpby(arr(in[2]), y, 1, 1);
          return to_tensor(y, master_of(in));
        });
    r.errors.push_back(
        {"[linear] input of shape [4, 6] and weight of shape [3, 5] cannot be "
         "multiplied",
         [] {
           linear(zeros({4, 6}), zeros({3, 5}));
         }});
    r.errors.push_back({"[linear] expected input and bias to have the same dtype", [] {
                          linear(zeros({4, 5}), zeros({3, 5}), zeros({3}, DType::Float64));
                        }});
    rows.push_back(r);
  }

  // einsum: one row per pattern.
  struct Pattern {
    const char* eq;
    std::vector<Shape> shapes;
  };
  const std::vector<Pattern> patterns = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{2, 3}, {3, 4}}},
      {"ii->i", {{4, 4}}},
      {"ii", {{3, 3}}},
      {"ii->", {{5, 5}}},
      {"ij->ji", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ij->j", {{3, 4}}},
      {"i,i->", {{6}, {6}}},
      {"i,j->ij", {{3}, {4}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"...ii->...i", {{3, 4, 4}}},
      {"i...->...", {{4, 2, 3}}},
      {"...ij", {{2, 3, 4}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"ii,i->i", {{3, 3}, {3}}},
      {"iji->j", {{3, 4, 3}}},
      {"bn,anm,bm->ba", {{2, 2}, {3, 2, 4}, {2, 4}}},
      {"ab,ab,ab->", {{3, 4}, {3, 4}, {3, 4}}},
      {"i,i,i->i", {{5}, {5}, {5}}},
      {"Ba,aC", {{2, 3}, {3, 4}}},
      {"...,...->...", {{3, 1}, {4}}},
      {"ij,ij->ij", {{2, 3}, {2, 3}}},
      {"i->", {{0}}},
      {"ij,jk->ik ", {{2, 0}, {0, 3}}},
      {"bij,bkj->bik", {{2, 3, 4}, {1, 5, 4}}},
      {"i j , j", {{2, 3}, {3}}},
  };
  for (const Pattern& pt : patterns) {
    std::vector<Shape> shapes = pt.shapes;
    std::string eq = pt.eq, display = eq;
    std::replace(display.begin(), display.end(), ' ', '_');  // readable test names
    OpRow r = gemm_row(
        "einsum." + display, [shapes](DType dt) { return std::vector<Sample>{sample(shapes, dt)}; },
        [eq](const std::vector<Tensor>& in, const Sample&) { return einsum(eq, in); },
        einsum_ref(eq));
    rows.push_back(r);
  }
  OpRow& e = rows[rows.size() - patterns.size()];
  auto err = [&](const char* contains, std::function<void()> fn) {
    e.errors.push_back({contains, std::move(fn)});
  };
  err("[einsum] 1 operands were provided but the equation \"ij,jk\" specifies 2", [] {
    einsum("ij,jk", {zeros({2, 2})});
  });
  err("[einsum] 2 operands were provided but the equation \"ij,jk,k\" specifies 3", [] {
    einsum("ij,jk,k", {zeros({2, 2}), zeros({2, 2})});
  });
  err("invalid subscript '1'", [] { einsum("i1->i", {zeros({2, 2})}); });
  err("does not match the number of dimensions (3) for operand 0", [] {
    einsum("ij->i", {zeros({2, 2, 2})});
  });
  err("is more than the number of dimensions (1) for operand 0",
      [] { einsum("ij...->i", {zeros({2})}); });
  err("subscript i is repeated for operand 0 but the sizes don't match, 2 != 3", [] {
    einsum("ii->i", {zeros({2, 3})});
  });
  err("output subscript k does not appear", [] { einsum("ij->k", {zeros({2, 2})}); });
  err("output subscript i appears more than once", [] { einsum("ij->ii", {zeros({2, 2})}); });
  err("subscript j has size 3 in operand 0 and 4 in operand 1", [] {
    einsum("ij,jk->ik", {zeros({2, 3}), zeros({4, 5})});
  });
  err("ellipsis dimension", [] { einsum("...,...", {zeros({2}), zeros({3})}); });
  err("not part of any ellipsis", [] { einsum("i..->i", {zeros({2, 2})}); });
  err("more than one ellipsis", [] { einsum("...i...->i", {zeros({2, 2})}); });
  err("expected all operands to have the same dtype", [] {
    einsum("i,i", {zeros({2}), zeros({2}, DType::Float64)});
  });
  err("at least one operand", [] { einsum("i", std::vector<Tensor>{}); });
  err("[einsum] not implemented for dtype bool", [] {
    einsum("ij->i", {zeros({2, 2}, DType::Bool)});
  });
  {  // einsum on strided operands (every other element of each last dim)
    OpRow r = gemm_row(
        "einsum.strided",
        [](DType dt) {
          return std::vector<Sample>{sample({{2, 3, 8}, {2, 4, 10}}, dt, "bij,bjk->bik"),
                                     sample({{4, 8}}, dt, "ii->i")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          std::vector<Tensor> ops;
          for (const Tensor& t : in) ops.push_back(strided(t));
          return einsum(s.desc, ops);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          std::vector<Arr> a;
          for (const Tensor& t : in) a.push_back(every_other(arr(t)));
          return to_tensor(ref_einsum(s.desc, a), master_of(in));
        });
    rows.push_back(r);
  }
  return rows;
}

KILN_OP_ROWS(contraction_rows);

}  // namespace
}  // namespace kiln::testing
