// Front ends of the scans: cumsum, cumprod (and in-place forms), cummax, cummin, logcumsumexp,
// and the composite diff; with their Tensor methods.
#include "kiln/ops/scan.h"

#include "core/wrap_dim.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/shape_util.h"

namespace kiln {

namespace {

// dim of a scan: 0-dim tensors accept 0 and -1.
int64_t scan_dim(const Tensor& x, int64_t dim, const char* op) {
  return detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
}

// cumsum / cumprod: bool and integer inputs accumulate into int64 unless dtype= is given, in
// which case the input is cast first (as PyTorch).
Tensor cum_impl(OpId id, const Tensor& x, int64_t dim, std::optional<DType> dtype,
                Tensor* inplace) {
  const char* op = op_name(id);
  detail::check_defined(x, op);
  dim = scan_dim(x, dim, op);
  DType out_dt = dtype ? *dtype : (is_integral(x.dtype(), true) ? DType::Int64 : x.dtype());
  if (inplace != nullptr && !dtype) out_dt = x.dtype();
  Tensor in = x.dtype() == out_dt ? x : x.to(out_dt);
  OpCall c(id);
  c.attrs.i0 = dim;
  c.attrs.dtype = dtype;
  c.compute = out_dt;
  c.in.push_back(in);
  if (inplace != nullptr) {
    c.provided_out = c.inplace = true;
    c.out.push_back(detail::check_provided_out(c, *inplace, x.sizes(), out_dt, x.device()));
  } else {
    c.out.push_back(detail::make_output(x.sizes(), out_dt, x.device()));
  }
  return detail::run1(c);
}

std::tuple<Tensor, Tensor> cum_extreme(OpId id, const Tensor& x, int64_t dim) {
  const char* op = op_name(id);
  detail::check_defined(x, op);
  KILN_CHECK(!x.is_complex(), "[", op, "] does not support complex inputs (got ",
             dtype_name(x.dtype()), ")");
  dim = scan_dim(x, dim, op);
  OpCall c(id);
  c.attrs.i0 = dim;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output(x.sizes(), x.dtype(), x.device()));
  c.out.push_back(detail::make_output(x.sizes(), DType::Int64, x.device()));
  detail::run(c);
  return {c.out[0], c.out[1]};
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cum_impl(OpId::CumSum, x, dim, dtype, nullptr);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cum_impl(OpId::CumProd, x, dim, dtype, nullptr);
}
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return cum_extreme(OpId::CumMax, x, dim);
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return cum_extreme(OpId::CumMin, x, dim);
}

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  detail::check_defined(x, "logcumsumexp");
  KILN_CHECK(x.is_floating_point() || x.is_complex(),
             "[logcumsumexp] expects a floating point or complex input, got ",
             dtype_name(x.dtype()));
  dim = scan_dim(x, dim, "logcumsumexp");
  OpCall c(OpId::LogCumSumExp);
  c.attrs.i0 = dim;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output(x.sizes(), x.dtype(), x.device()));
  return detail::run1(c);
}

Tensor diff(const Tensor& x, int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append) {
  detail::check_defined(x, "diff");
  KILN_CHECK(x.dim() >= 1, "[diff] expects input to be at least one-dimensional");
  KILN_CHECK(n >= 0, "[diff] order must be non-negative but got ", n);
  dim = detail::wrap_dim(dim, x.dim(), "diff");
  std::vector<Tensor> parts;
  for (const Tensor* p : {&prepend, &append}) {
    if (!p->defined()) continue;
    KILN_CHECK(p->dim() == x.dim(),
               "[diff] expects prepend or append to be the same dimension "
               "as input (",
               x.dim(), "), got ", p->dim());
  }
  Tensor y = x;
  if (prepend.defined() || append.defined()) {
    if (prepend.defined()) parts.push_back(prepend);
    parts.push_back(x);
    if (append.defined()) parts.push_back(append);
    y = cat(parts, dim);
  }
  if (n == 0) return y.is_same(x) ? x.clone() : y;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = y.size(dim);
    if (len == 0) break;
    Tensor hi = y.narrow(dim, 1, len - 1), lo = y.narrow(dim, 0, len - 1);
    y = y.dtype() == DType::Bool ? logical_xor(hi, lo) : sub(hi, lo);
  }
  return y.is_same(x) ? x.clone() : y;
}

// ---- Tensor methods ----
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const {
  return kiln::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const {
  return kiln::cumprod(*this, dim, dtype);
}
Tensor& Tensor::cumsum_(int64_t dim, std::optional<DType> dtype) {
  cum_impl(OpId::CumSum, *this, dim, dtype, this);
  return *this;
}
Tensor& Tensor::cumprod_(int64_t dim, std::optional<DType> dtype) {
  cum_impl(OpId::CumProd, *this, dim, dtype, this);
  return *this;
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return kiln::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return kiln::cummin(*this, dim); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return kiln::logcumsumexp(*this, dim); }
Tensor Tensor::diff(int64_t n, int64_t dim, const Tensor& prepend, const Tensor& append) const {
  return kiln::diff(*this, n, dim, prepend, append);
}

}  // namespace kiln
