// Front ends of the GEMM family over the Bmm primitive: mm, bmm, addmm, baddbmm, addbmm, mv,
// addmv, dot, vdot, matmul (all of PyTorch's cases), linear, their out=/in-place forms and the
// Tensor methods. Shape and dtype checks live here; kind Matmul has no generic infer.
#include <algorithm>
#include <optional>

#include "amp/autocast_state.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/linalg.h"
#include "ops/infer.h"
#include "ops/matmul_call.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace detail {

int64_t prod(IntArrayRef s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

namespace {
// Strides for viewing t as `shape` by merging consecutive dims, if possible.
std::optional<DimVector> merged_strides(const Tensor& t, IntArrayRef shape) {
  IntArrayRef sz = t.sizes(), st = t.strides();
  int64_t nd = t.dim(), i = 0;
  DimVector out(shape.size(), 1);
  for (size_t j = 0; j < shape.size(); ++j) {
    if (shape[j] == 1) continue;
    int64_t p = 1, last = -1;
    while (p < shape[j]) {
      if (i >= nd) return std::nullopt;
      int64_t d = i++;
      if (sz[d] == 1) continue;
      if (last >= 0 && st[last] != st[d] * sz[d]) return std::nullopt;
      p *= sz[d];
      last = d;
    }
    if (p != shape[j]) return std::nullopt;
    out[j] = st[last];
  }
  for (; i < nd; ++i)
    if (sz[i] != 1) return std::nullopt;
  return out;
}
}  // namespace

Tensor merge_reshape(const Tensor& t, IntArrayRef shape) {
  KILN_ASSERT(prod(shape) == t.numel(), "merge_reshape sizes");
  if (t.numel() == 0) {  // no elements: any strides describe it
    DimVector st(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
      st[i] = st[i + 1] * std::max<int64_t>(shape[i + 1], 1);
    return make_view(t, shape, st, t.storage_offset());
  }
  if (auto st = merged_strides(t, shape)) return make_view(t, shape, *st, t.storage_offset());
  Tensor c = empty_impl(t.sizes(), t.dtype(), t.device());
  c.copy_(t);
  return c.view(shape);
}

void check_gemm_dtype(const char* op, DType d) {
  KILN_CHECK(d != DType::Bool && !is_float8(d), "[", op, "] not implemented for dtype ",
             dtype_name(d));
}

void check_gemm_operands(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "[", op, "] got an undefined tensor");
  KILN_CHECK(a.device() == b.device(), "[", op,
             "] expected all tensors to be on the same device, but found at least two devices, ",
             a.device().str(), " and ", b.device().str());
  KILN_CHECK(a.dtype() == b.dtype(), "[", op,
             "] expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
             " != ", dtype_name(b.dtype()));
  check_gemm_dtype(op, a.dtype());
}

namespace {

void check_input_operand(const char* op, const Tensor& input, const Tensor& a, IntArrayRef shape) {
  KILN_CHECK(input.device() == a.device(), "[", op,
             "] expected all tensors to be on the same device, but found at least two devices, ",
             input.device().str(), " and ", a.device().str());
  KILN_CHECK(input.dtype() == a.dtype(), "[", op,
             "] expected input and the matrices to have the same dtype, but got: ",
             dtype_name(input.dtype()), " != ", dtype_name(a.dtype()));
  bool ok = input.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 0; ok && i < input.dim(); ++i) {
    int64_t s = input.size(input.dim() - 1 - i);
    ok = s == 1 || s == shape[shape.size() - 1 - i];
  }
  KILN_CHECK(ok, "[", op, "] input of shape ", input.sizes(),
             " cannot be broadcast to the result shape ", shape);
}

// The in-place target must have the result's shape exactly.
void check_inplace_self(const char* op, const Tensor& self, IntArrayRef shape) {
  KILN_CHECK(self.sizes() == shape, "[", op, "] self of shape ", self.sizes(),
             " doesn't match the result shape ", shape);
}

// The input of an add* op expanded to the result shape (undefined stays undefined); callers add
// the batch (and column) dims run_bmm expects.
Tensor expand_input(const Tensor& input, IntArrayRef shape) {
  return input.defined() ? input.expand(shape) : Tensor();
}

}  // namespace

void prepare_out(const char* op, Tensor& out, IntArrayRef shape, DType dtype, Device device) {
  KILN_CHECK(out.defined(), "[", op, "] out is an undefined tensor");
  KILN_CHECK(out.dtype() == dtype, "[", op, "] expected out tensor to have dtype ",
             dtype_name(dtype), ", but got ", dtype_name(out.dtype()), " instead");
  KILN_CHECK(out.device() == device, "[", op, "] expected out tensor on ", device.str(),
             " but it is on ", out.device().str());
  if (out.sizes() != shape) {
    KILN_CHECK(out.numel() == 0, "[", op, "] output with shape ", out.sizes(),
               " doesn't match the result shape ", shape);
    resize_impl(out, shape);
  }
  for (int64_t d = 0; d < out.dim(); ++d)
    KILN_CHECK(out.size(d) <= 1 || out.stride(d) != 0, "[", op,
               "] unsupported operation: more than one element of the written-to tensor refers "
               "to a single memory location");
}

Tensor run_bmm(const Tensor& a, const Tensor& b, const Tensor& c, const Scalar& beta,
               const Scalar& alpha, const Tensor& out, bool inplace, bool conj_a) {
  KILN_ASSERT(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0) && a.size(2) == b.size(1),
              "run_bmm shapes");
  DimVector shape{a.size(0), a.size(1), b.size(2)};
  OpCall call(OpId::Bmm);
  call.in.push_back(a);
  call.in.push_back(b);
  if (c.defined()) call.in.push_back(c.expand(shape));
  call.attrs.s0 = alpha;
  call.attrs.has_s0 = true;
  call.attrs.s1 = beta;
  call.attrs.has_s1 = true;
  call.attrs.flag = conj_a;
  call.compute = a.dtype();
  if (out.defined()) {
    KILN_ASSERT(out.sizes() == IntArrayRef(shape) && out.dtype() == a.dtype(), "run_bmm out");
    call.out.push_back(out);
    call.provided_out = true;
    call.inplace = inplace;
  } else {
    call.out.push_back(make_output(shape, a.dtype(), a.device()));
  }
  return run1(call);
}

Tensor addmm_core(const char* op, const Tensor& input, const Tensor& a, const Tensor& b,
                  const Scalar& beta, const Scalar& alpha, Tensor* out, bool inplace) {
  check_gemm_operands(op, a, b);
  KILN_CHECK(a.dim() == 2 && b.dim() == 2, "[", op, "] expected 2-D matrices, but got ", a.dim(),
             "-D and ", b.dim(), "-D tensors of shapes ", a.sizes(), " and ", b.sizes());
  KILN_CHECK(a.size(1) == b.size(0), "[", op, "] mat1 and mat2 shapes cannot be multiplied (",
             a.size(0), "x", a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  DimVector shape{a.size(0), b.size(1)};
  if (input.defined()) check_input_operand(op, input, a, shape);
  Tensor c = expand_input(input, shape);
  if (c.defined()) c = c.unsqueeze(0);
  if (out == nullptr) return run_bmm(a.unsqueeze(0), b.unsqueeze(0), c, beta, alpha).squeeze(0);
  if (inplace)
    check_inplace_self(op, *out, shape);
  else
    prepare_out(op, *out, shape, a.dtype(), a.device());
  run_bmm(a.unsqueeze(0), b.unsqueeze(0), c, beta, alpha, out->unsqueeze(0), inplace);
  return *out;
}

Tensor addmv_core(const char* op, const Tensor& input, const Tensor& mat, const Tensor& vec,
                  const Scalar& beta, const Scalar& alpha, Tensor* out, bool inplace) {
  check_gemm_operands(op, mat, vec);
  KILN_CHECK(mat.dim() == 2 && vec.dim() == 1, "[", op,
             "] expected a 2-D matrix and a 1-D vector, but got shapes ", mat.sizes(), " and ",
             vec.sizes());
  KILN_CHECK(mat.size(1) == vec.size(0), "[", op, "] size mismatch: matrix of shape ", mat.sizes(),
             " cannot be multiplied with a vector of shape ", vec.sizes());
  DimVector shape{mat.size(0)};
  if (input.defined()) check_input_operand(op, input, mat, shape);
  Tensor c = expand_input(input, shape);
  if (c.defined()) c = c.unsqueeze(1).unsqueeze(0);
  Tensor a3 = mat.unsqueeze(0), b3 = vec.unsqueeze(1).unsqueeze(0);
  if (out == nullptr) return run_bmm(a3, b3, c, beta, alpha).view(shape);
  if (inplace)
    check_inplace_self(op, *out, shape);
  else
    prepare_out(op, *out, shape, mat.dtype(), mat.device());
  run_bmm(a3, b3, c, beta, alpha, out->unsqueeze(1).unsqueeze(0), inplace);
  return *out;
}

namespace {

Tensor baddbmm_core(const char* op, const Tensor& input, const Tensor& a, const Tensor& b,
                    const Scalar& beta, const Scalar& alpha, Tensor* out, bool inplace) {
  check_gemm_operands(op, a, b);
  KILN_CHECK(a.dim() == 3 && b.dim() == 3, "[", op, "] expected 3-D tensors, but got ", a.dim(),
             "-D and ", b.dim(), "-D tensors of shapes ", a.sizes(), " and ", b.sizes());
  KILN_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "[", op,
             "] expected batch2 of shape [", a.size(0), ", ", a.size(2),
             ", *] for batch1 of shape ", a.sizes(), ", but got ", b.sizes());
  DimVector shape{a.size(0), a.size(1), b.size(2)};
  if (input.defined()) check_input_operand(op, input, a, shape);
  Tensor c = expand_input(input, shape);
  if (out == nullptr) return run_bmm(a, b, c, beta, alpha);
  if (inplace)
    check_inplace_self(op, *out, shape);
  else
    prepare_out(op, *out, shape, a.dtype(), a.device());
  run_bmm(a, b, c, beta, alpha, *out, inplace);
  return *out;
}

Tensor dot_core(const char* op, const Tensor& a, const Tensor& b, bool conj_a) {
  KILN_CHECK(a.defined() && b.defined(), "[", op, "] got an undefined tensor");
  KILN_CHECK(a.dim() == 1 && b.dim() == 1, "[", op, "] 1D tensors expected, but got ", a.dim(),
             "D and ", b.dim(), "D tensors");
  KILN_CHECK(a.size(0) == b.size(0), "[", op, "] inconsistent tensor size, expected tensor [",
             a.size(0), "] and src [", b.size(0), "] to have the same number of elements, but got ",
             a.size(0), " and ", b.size(0), " elements respectively");
  KILN_CHECK(a.dtype() == b.dtype(), "[", op,
             "] expected both vectors to have same dtype, but found ", dtype_name(a.dtype()),
             " and ", dtype_name(b.dtype()));
  check_gemm_operands(op, a, b);
  return run_bmm(a.unsqueeze(0).unsqueeze(0), b.unsqueeze(1).unsqueeze(0), Tensor(), 0, 1, Tensor(),
                 false, conj_a && a.is_complex())
      .view(IntArrayRef{});
}

}  // namespace

Tensor matmul_core(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "[", op, "] got an undefined tensor");
  int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1, "[", op,
             "] both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db,
             "D");
  int64_t k = a.size(-1);
  int64_t kb = db == 1 ? b.size(0) : b.size(-2);
  KILN_CHECK(k == kb, "[", op, "] shapes ", a.sizes(), " and ", b.sizes(),
             " cannot be multiplied (", k, " != ", kb, ")");
  check_gemm_operands(op, a, b);
  if (da == 1 && db == 1) return dot_core(op, a, b, false);
  if (da == 2 && db == 1) return addmv_core(op, Tensor(), a, b, 0, 1);
  if (da == 2 && db == 2) return addmm_core(op, Tensor(), a, b, 0, 1);
  if (da >= 3 && db <= 2) {
    // Fold a's batch dims into its rows: one GEMM (or GEMV) instead of a batch of them.
    DimVector shape(a.sizes().begin(), a.sizes().end() - 1);
    Tensor a2 = merge_reshape(a, {prod(shape), k});
    Tensor r =
        db == 2 ? addmm_core(op, Tensor(), a2, b, 0, 1) : addmv_core(op, Tensor(), a2, b, 0, 1);
    if (db == 2) shape.push_back(b.size(1));
    return r.view(shape);
  }
  // Batched: a 1-D operand becomes a row [1, k] / column [k, 1]; batch dims broadcast.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = db == 1 ? b.unsqueeze(1) : b;
  IntArrayRef ba = a3.sizes().slice(0, a3.dim() - 2), bb = b3.sizes().slice(0, b3.dim() - 2);
  size_t nd = std::max(ba.size(), bb.size());
  DimVector batch(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t sa = i < nd - ba.size() ? 1 : ba[i - (nd - ba.size())];
    int64_t sb = i < nd - bb.size() ? 1 : bb[i - (nd - bb.size())];
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, "[", op, "] batch dimensions of shapes ", a.sizes(),
               " and ", b.sizes(), " cannot be broadcast (", sa, " vs ", sb, ")");
    batch[i] = sa == 1 ? sb : sa;
  }
  int64_t m = a3.size(-2), n = b3.size(-1), nbatch = prod(batch);
  DimVector ea(batch), eb(batch);
  ea.push_back(m);
  ea.push_back(k);
  eb.push_back(k);
  eb.push_back(n);
  Tensor r = run_bmm(merge_reshape(a3.expand(ea), {nbatch, m, k}),
                     merge_reshape(b3.expand(eb), {nbatch, k, n}));
  DimVector shape(batch);
  shape.push_back(m);
  shape.push_back(n);
  r = r.view(shape);
  if (da == 1) r = r.squeeze(-2);
  if (db == 1) r = r.squeeze(-1);
  return r;
}

Tensor sum_keepdim(const char* op, const Tensor& t, IntArrayRef dims) {
  check_gemm_dtype(op, t.dtype());
  DimVector perm, keep_shape(t.sizes());
  std::vector<bool> summed(t.dim(), false);
  for (int64_t d : dims) summed[d] = true;
  int64_t p = 1, s = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (!summed[d]) {
      perm.push_back(d);
      p *= t.size(d);
    }
  for (int64_t d : dims) {
    perm.push_back(d);
    s *= t.size(d);
    keep_shape[d] = 1;
  }
  Tensor t3 = merge_reshape(t.permute(perm), {1, p, s});
  Tensor ones = kiln::ones({1, s, 1}, TensorOptions(t.dtype()).device(t.device()));
  return run_bmm(t3, ones).view(keep_shape);
}

}  // namespace detail

using detail::addmm_core;
using detail::addmv_core;
using detail::baddbmm_core;

namespace {
// Under autocast the public matmul family (not its out= and in-place forms, as in PyTorch) runs
// in the scope's lower precision (Note [autocast lists], src/amp/autocast.cpp): its dtype checks
// come before the op layer's autocast hook, so the operands are cast here.
struct Lowered {
  Tensor a, b, c;
  Lowered(const Tensor& x, const Tensor& y, const Tensor& z = Tensor()) : a(x), b(y), c(z) {
    if (KILN_UNLIKELY(detail::autocast_active()))
      detail::autocast_args(detail::AutocastPolicy::Lower, {&a, &b, &c});
  }
};
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (KILN_UNLIKELY(detail::autocast_active())) {
    Lowered l(a, b);
    return detail::matmul_core("matmul", l.a, l.b);
  }
  return detail::matmul_core("matmul", a, b);
}

Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b) {
  Tensor r = detail::matmul_core("matmul", a, b);
  detail::prepare_out("matmul", out, r.sizes(), r.dtype(), r.device());
  out.copy_(r);
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  Lowered l(a, b);
  return addmm_core("mm", Tensor(), l.a, l.b, 0, 1);
}
Tensor& mm_out(Tensor& out, const Tensor& a, const Tensor& b) {
  addmm_core("mm", Tensor(), a, b, 0, 1, &out);
  return out;
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  Lowered l(a, b);
  return baddbmm_core("bmm", Tensor(), l.a, l.b, 0, 1, nullptr, false);
}
Tensor& bmm_out(Tensor& out, const Tensor& a, const Tensor& b) {
  baddbmm_core("bmm", Tensor(), a, b, 0, 1, &out, false);
  return out;
}

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta,
             const Scalar& alpha) {
  KILN_CHECK(input.defined(), "[addmm] input is an undefined tensor");
  Lowered l(m1, m2, input);
  return addmm_core("addmm", l.c, l.a, l.b, beta, alpha);
}
Tensor& addmm_out(Tensor& out, const Tensor& input, const Tensor& m1, const Tensor& m2,
                  const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(input.defined(), "[addmm] input is an undefined tensor");
  addmm_core("addmm", input, m1, m2, beta, alpha, &out);
  return out;
}
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, const Scalar& beta,
             const Scalar& alpha) {
  KILN_CHECK(input.defined(), "[addmv] input is an undefined tensor");
  Lowered l(mat, vec, input);
  return addmv_core("addmv", l.c, l.a, l.b, beta, alpha);
}
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta,
               const Scalar& alpha) {
  KILN_CHECK(input.defined(), "[baddbmm] input is an undefined tensor");
  Lowered l(b1, b2, input);
  return baddbmm_core("baddbmm", l.c, l.a, l.b, beta, alpha, nullptr, false);
}

namespace {
// addbmm = addmm over the batch folded into K: [n, b*k] @ [b*k, p].
std::pair<Tensor, Tensor> fold_batches(const char* op, const Tensor& b1, const Tensor& b2) {
  detail::check_gemm_operands(op, b1, b2);
  KILN_CHECK(b1.dim() == 3 && b2.dim() == 3, "[", op, "] expected 3-D tensors, but got ", b1.dim(),
             "-D and ", b2.dim(), "-D tensors of shapes ", b1.sizes(), " and ", b2.sizes());
  KILN_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1), "[", op,
             "] expected batch2 of shape [", b1.size(0), ", ", b1.size(2),
             ", *] for batch1 of shape ", b1.sizes(), ", but got ", b2.sizes());
  int64_t nb = b1.size(0), n = b1.size(1), k = b1.size(2), p = b2.size(2);
  return {detail::merge_reshape(b1.permute({1, 0, 2}), {n, nb * k}),
          detail::merge_reshape(b2, {nb * k, p})};
}
}  // namespace

Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta,
              const Scalar& alpha) {
  KILN_CHECK(input.defined(), "[addbmm] input is an undefined tensor");
  Lowered l(b1, b2, input);
  auto [a, b] = fold_batches("addbmm", l.a, l.b);
  return addmm_core("addbmm", l.c, a, b, beta, alpha);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  Lowered l(a, b);
  return detail::dot_core("dot", l.a, l.b, false);
}
Tensor vdot(const Tensor& a, const Tensor& b) {
  Lowered l(a, b);
  return detail::dot_core("vdot", l.a, l.b, true);
}
Tensor mv(const Tensor& mat, const Tensor& vec) {
  Lowered l(mat, vec);
  return addmv_core("mv", Tensor(), l.a, l.b, 0, 1);
}

namespace {
Tensor linear_impl(const Tensor& input, const Tensor& weight, const Tensor& bias);
}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  if (KILN_UNLIKELY(detail::autocast_active())) {
    Lowered l(input, weight, bias);
    return linear_impl(l.a, l.b, l.c);
  }
  return linear_impl(input, weight, bias);
}

namespace {
Tensor linear_impl(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const char* op = "linear";
  KILN_CHECK(input.defined() && weight.defined(), "[linear] got an undefined tensor");
  KILN_CHECK(input.dim() >= 1 && (weight.dim() == 1 || weight.dim() == 2), "[", op,
             "] expected input of at least 1 dim and a 1-D or 2-D weight, but got shapes ",
             input.sizes(), " and ", weight.sizes());
  int64_t in = weight.size(-1);
  KILN_CHECK(input.size(-1) == in, "[", op, "] input of shape ", input.sizes(),
             " and weight of shape ", weight.sizes(), " cannot be multiplied (", input.size(-1),
             " != ", in, ")");
  if (bias.defined())
    KILN_CHECK(bias.dtype() == input.dtype(), "[", op,
               "] expected input and bias to have the same dtype, but got: ",
               dtype_name(input.dtype()), " != ", dtype_name(bias.dtype()));
  if (weight.dim() == 2 && input.dim() >= 2 && (!bias.defined() || bias.dim() <= 1)) {
    // Fold the batch into rows and add the bias inside the GEMM (beta = 1).
    DimVector shape(input.sizes().begin(), input.sizes().end() - 1);
    Tensor x2 = detail::merge_reshape(input, {detail::prod(shape), in});
    shape.push_back(weight.size(0));
    return addmm_core(op, bias, x2, weight.t(), bias.defined() ? 1 : 0, 1).view(shape);
  }
  if (weight.dim() == 2 && input.dim() == 1 && (!bias.defined() || bias.dim() <= 1))
    return addmv_core(op, bias, weight, input, bias.defined() ? 1 : 0, 1);
  Tensor r = detail::matmul_core(op, input, weight.dim() == 2 ? weight.t() : weight);
  return bias.defined() ? add(r, bias) : r;
}
}  // namespace

// ---- methods ----
Tensor Tensor::matmul(const Tensor& o) const { return kiln::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return kiln::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return kiln::bmm(*this, o); }
Tensor Tensor::dot(const Tensor& o) const { return kiln::dot(*this, o); }
Tensor Tensor::vdot(const Tensor& o) const { return kiln::vdot(*this, o); }
Tensor Tensor::mv(const Tensor& v) const { return kiln::mv(*this, v); }
Tensor Tensor::addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta,
                     const Scalar& alpha) const {
  return kiln::addmm(*this, m1, m2, beta, alpha);
}
Tensor& Tensor::addmm_(const Tensor& m1, const Tensor& m2, const Scalar& beta,
                       const Scalar& alpha) {
  addmm_core("addmm_", *this, m1, m2, beta, alpha, this, true);
  return *this;
}
Tensor Tensor::addmv(const Tensor& mat, const Tensor& vec, const Scalar& beta,
                     const Scalar& alpha) const {
  return kiln::addmv(*this, mat, vec, beta, alpha);
}
Tensor& Tensor::addmv_(const Tensor& mat, const Tensor& vec, const Scalar& beta,
                       const Scalar& alpha) {
  addmv_core("addmv_", *this, mat, vec, beta, alpha, this, true);
  return *this;
}
Tensor Tensor::baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta,
                       const Scalar& alpha) const {
  return kiln::baddbmm(*this, b1, b2, beta, alpha);
}
Tensor& Tensor::baddbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta,
                         const Scalar& alpha) {
  baddbmm_core("baddbmm_", *this, b1, b2, beta, alpha, this, true);
  return *this;
}
Tensor Tensor::addbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta,
                      const Scalar& alpha) const {
  return kiln::addbmm(*this, b1, b2, beta, alpha);
}
Tensor& Tensor::addbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta,
                        const Scalar& alpha) {
  auto [a, b] = fold_batches("addbmm_", b1, b2);
  addmm_core("addbmm_", *this, a, b, beta, alpha, this, true);
  return *this;
}

}  // namespace kiln
