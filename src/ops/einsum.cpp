// einsum: parses the equation (explicit/implicit output, ellipsis, repeated indices), aligns every
// operand to one global dim order as a view, then contracts pairwise from left to right through
// Bmm (permute + reshape to [batch, rows, K] x [batch, K, cols]).
#include <algorithm>
#include <string>
#include <vector>

#include "kiln/ops/linalg.h"
#include "ops/matmul_call.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace {

constexpr int kNumLabels = 52;
constexpr int64_t kMaxEinsumDims = 64;

// 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51: label order is ASCII order (implicit output sorting).
int label_index(char ch) { return ch >= 'a' ? 26 + (ch - 'a') : ch - 'A'; }
char label_char(int l) { return static_cast<char>(l >= 26 ? 'a' + (l - 26) : 'A' + l); }
bool is_label(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

struct Term {
  std::vector<int> labels;
  int ellipsis_at = -1;  // position in labels where "..." stands, or -1
};

// Parses one subscript term (spaces already removed); `start` is its index in the equation.
Term parse_term(const std::string& eq, size_t start, size_t end, const char* what, size_t which) {
  Term t;
  for (size_t i = start; i < end; ++i) {
    char ch = eq[i];
    if (ch == '.') {
      KILN_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', "[einsum] found '.' for ",
                 what, " ", which, " that is not part of any ellipsis");
      KILN_CHECK(t.ellipsis_at < 0, "[einsum] found more than one ellipsis ('...') for ", what, " ",
                 which);
      t.ellipsis_at = static_cast<int>(t.labels.size());
      i += 2;
    } else {
      KILN_CHECK(is_label(ch), "[einsum] invalid subscript '", ch, "' at index ", i,
                 " of the equation \"", eq, "\": subscripts must be in [a-zA-Z]");
      t.labels.push_back(label_index(ch));
    }
  }
  return t;
}

// Contracts two aligned operands (same rank, size 1 where a dim is absent). Dims in `sum` are
// summed out; the rest are kept. The result is aligned the same way.
Tensor contract(Tensor l, Tensor r, const std::vector<bool>& sum) {
  int64_t nd = l.dim();
  DimVector lsum, rsum;
  for (int64_t g = 0; g < nd; ++g) {
    if (!sum[g]) continue;
    bool lp = l.size(g) != 1, rp = r.size(g) != 1;
    if (lp && !rp) lsum.push_back(g);
    if (rp && !lp) rsum.push_back(g);
  }
  if (!lsum.empty()) l = detail::sum_keepdim("einsum", l, lsum);
  if (!rsum.empty()) r = detail::sum_keepdim("einsum", r, rsum);
  DimVector bd, ld, rd, kd, rest;
  for (int64_t g = 0; g < nd; ++g) {
    bool lp = l.size(g) != 1, rp = r.size(g) != 1;
    if (!lp && !rp)
      rest.push_back(g);
    else if (sum[g])
      kd.push_back(g);
    else if (lp && rp)
      bd.push_back(g);
    else
      (lp ? ld : rd).push_back(g);
  }
  auto size_of = [](const Tensor& t, const DimVector& ds) {
    int64_t p = 1;
    for (int64_t d : ds) p *= t.size(d);
    return p;
  };
  // Dims absent from a side (size 1 there) still take part in its permutation.
  DimVector pl, pr;
  for (const DimVector* part : {&bd, &ld, &kd, &rd, &rest}) pl.append(part->begin(), part->end());
  for (const DimVector* part : {&bd, &kd, &rd, &ld, &rest}) pr.append(part->begin(), part->end());
  int64_t nb = size_of(l, bd), m = size_of(l, ld), k = size_of(l, kd), n = size_of(r, rd);
  Tensor out = detail::run_bmm(detail::merge_reshape(l.permute(pl), {nb, m, k}),
                               detail::merge_reshape(r.permute(pr), {nb, k, n}));
  // [nb, m, n] is contiguous over (bd..., ld..., rd...): give each global dim its stride.
  DimVector sizes(nd, 1), strides(nd, 0);
  int64_t st = 1;
  for (const DimVector* part : {&rd, &ld, &bd})
    for (size_t j = part->size(); j-- > 0;) {
      int64_t g = (*part)[j];
      sizes[g] = (part == &rd ? r : l).size(g);
      strides[g] = st;
      st *= std::max<int64_t>(sizes[g], 1);
    }
  return detail::make_view(out, sizes, strides, out.storage_offset());
}

}  // namespace

Tensor einsum(std::string_view equation, ArrayRef<Tensor> operands) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq.push_back(ch);
  size_t nops = operands.size();
  KILN_CHECK(nops > 0, "[einsum] must provide at least one operand");
  for (size_t i = 0; i < nops; ++i) {
    KILN_CHECK(operands[i].defined(), "[einsum] operand ", i, " is an undefined tensor");
    KILN_CHECK(operands[i].device() == operands[0].device(),
               "[einsum] expected all operands on "
               "one device, but operand ",
               i, " is on ", operands[i].device().str(), " and operand 0 on ",
               operands[0].device().str());
    KILN_CHECK(operands[i].dtype() == operands[0].dtype(),
               "[einsum] expected all operands to "
               "have the same dtype, but operand 0 is ",
               dtype_name(operands[0].dtype()), " and operand ", i, " is ",
               dtype_name(operands[i].dtype()));
  }

  // ---- parse ----
  size_t arrow = eq.find("->");
  std::string rhs = arrow == std::string::npos ? "" : eq.substr(arrow + 2);
  KILN_CHECK(arrow == std::string::npos || rhs.find("->") == std::string::npos,
             "[einsum] the equation \"", eq, "\" has more than one '->'");
  size_t lhs_len = arrow == std::string::npos ? eq.size() : arrow;
  std::vector<Term> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs_len; ++i) {
    if (i == lhs_len || eq[i] == ',') {
      terms.push_back(parse_term(eq, start, i, "operand", terms.size()));
      start = i + 1;
    }
  }
  KILN_CHECK(terms.size() == nops, "[einsum] ", nops, " operands were provided but the equation \"",
             eq, "\" specifies ", terms.size());

  // Ellipsis dims: broadcast across operands, right-aligned.
  int64_t ell = 0;
  int label_count[kNumLabels] = {};
  for (size_t i = 0; i < nops; ++i) {
    const Term& t = terms[i];
    int64_t nl = static_cast<int64_t>(t.labels.size()), nd = operands[i].dim();
    if (t.ellipsis_at >= 0) {
      KILN_CHECK(nd >= nl, "[einsum] the number of subscripts in the equation (", nl,
                 ") is more than the number of dimensions (", nd, ") for operand ", i);
      ell = std::max(ell, nd - nl);
    } else {
      KILN_CHECK(nd == nl, "[einsum] the number of subscripts in the equation (", nl,
                 ") does not match the number of dimensions (", nd, ") for operand ", i,
                 " and no ellipsis was given");
    }
    for (int l : t.labels) ++label_count[l];
  }

  // Global dims: ellipsis dims first, then every used label in label order.
  int gpos[kNumLabels];
  int64_t ndims = ell;
  for (int l = 0; l < kNumLabels; ++l) gpos[l] = label_count[l] ? static_cast<int>(ndims++) : -1;
  KILN_CHECK(ndims <= kMaxEinsumDims, "[einsum] too many dimensions (", ndims, ")");

  std::vector<int64_t> out_dims;  // global dims of the output, in order
  if (arrow != std::string::npos) {
    Term o = parse_term(eq, arrow + 2, eq.size(), "the output", 0);
    bool seen[kNumLabels] = {};
    for (size_t p = 0; p <= o.labels.size(); ++p) {
      if (static_cast<int>(p) == o.ellipsis_at)
        for (int64_t e = 0; e < ell; ++e) out_dims.push_back(e);
      if (p == o.labels.size()) break;
      int l = o.labels[p];
      KILN_CHECK(gpos[l] >= 0, "[einsum] output subscript ", label_char(l),
                 " does not appear in the equation for any input operand");
      KILN_CHECK(!seen[l], "[einsum] output subscript ", label_char(l),
                 " appears more than once in the output");
      seen[l] = true;
      out_dims.push_back(gpos[l]);
    }
  } else {
    for (int64_t e = 0; e < ell; ++e) out_dims.push_back(e);
    for (int l = 0; l < kNumLabels; ++l)
      if (label_count[l] == 1) out_dims.push_back(gpos[l]);
  }
  std::vector<bool> in_out(ndims, false);
  for (int64_t g : out_dims) in_out[g] = true;

  // ---- align every operand as a view: [ndims], size 1 where absent, diagonals taken ----
  std::vector<Tensor> ops;
  DimVector gsize(ndims, 1);
  std::vector<int> gsize_from(ndims, -1);
  for (size_t i = 0; i < nops; ++i) {
    const Tensor& t = operands[i];
    const Term& term = terms[i];
    DimVector sizes(ndims, 1), strides(ndims, 0);
    std::vector<bool> seen(ndims, false);
    int64_t k = t.dim() - static_cast<int64_t>(term.labels.size());  // dims under "..."
    int64_t d = 0;
    for (size_t p = 0; p <= term.labels.size(); ++p) {
      if (static_cast<int>(p) == term.ellipsis_at)
        for (int64_t e = 0; e < k; ++e, ++d) {
          sizes[ell - k + e] = t.size(d);
          strides[ell - k + e] = t.stride(d);
        }
      if (p == term.labels.size()) break;
      int64_t g = gpos[term.labels[p]];
      if (seen[g]) {
        KILN_CHECK(sizes[g] == t.size(d), "[einsum] subscript ", label_char(term.labels[p]),
                   " is repeated for operand ", i, " but the sizes don't match, ", sizes[g],
                   " != ", t.size(d));
        strides[g] += t.stride(d);
      } else {
        seen[g] = true;
        sizes[g] = t.size(d);
        strides[g] = t.stride(d);
      }
      ++d;
    }
    for (int64_t g = 0; g < ndims; ++g) {
      if (sizes[g] == 1) continue;
      if (gsize_from[g] >= 0 && gsize[g] != sizes[g]) {
        if (g < ell)
          KILN_ERROR("[einsum] operands do not broadcast: ellipsis dimension ", g - ell,
                     " has size ", gsize[g], " in operand ", gsize_from[g], " and ", sizes[g],
                     " in operand ", i);
        for (int l = 0; l < kNumLabels; ++l)
          if (gpos[l] == g)
            KILN_ERROR("[einsum] operands do not broadcast: subscript ", label_char(l),
                       " has size ", gsize[g], " in operand ", gsize_from[g], " and ", sizes[g],
                       " in operand ", i);
      }
      gsize[g] = sizes[g];
      gsize_from[g] = static_cast<int>(i);
    }
    ops.push_back(detail::make_view(t, sizes, strides, t.storage_offset()));
  }

  // ---- contract left to right; a dim is summed once no later operand and no output needs it ----
  auto needed_after = [&](size_t i, int64_t g) {
    if (in_out[g]) return true;
    for (size_t j = i + 1; j < nops; ++j)
      if (ops[j].size(g) != 1) return true;
    return false;
  };
  Tensor result = ops[0];
  DimVector first_sum;
  for (int64_t g = 0; g < ndims; ++g)
    if (result.size(g) != 1 && !needed_after(0, g)) first_sum.push_back(g);
  if (!first_sum.empty()) result = detail::sum_keepdim("einsum", result, first_sum);
  for (size_t i = 1; i < nops; ++i) {
    detail::check_gemm_dtype("einsum", result.dtype());
    std::vector<bool> sum(ndims);
    for (int64_t g = 0; g < ndims; ++g) sum[g] = !needed_after(i, g);
    result = contract(result, ops[i], sum);
  }

  // ---- the output: a view selecting out_dims (every other dim has size 1 by now) ----
  DimVector sizes, strides;
  for (int64_t g : out_dims) {
    sizes.push_back(result.size(g));
    strides.push_back(result.stride(g));
  }
  return detail::make_view(result, sizes, strides, result.storage_offset());
}

}  // namespace kiln
