// Front ends of sort, argsort, msort, topk, kthvalue, median/nanmedian and mode, with their
// Tensor methods. Outputs of the one-value-per-line ops are allocated with keepdim shape and
// squeezed afterwards.
#include "core/wrap_dim.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/scan.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/shape_util.h"

namespace kiln {

namespace {

int64_t line_dim(const Tensor& x, int64_t dim, const char* op) {
  return detail::wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
}

void check_sortable(const Tensor& x, const char* op) {
  detail::check_defined(x, op);
  KILN_CHECK(!x.is_complex(), "[", op, "] does not support complex inputs (got ",
             dtype_name(x.dtype()), ")");
  KILN_CHECK(x.dtype() != DType::Float8_e4m3fn && x.dtype() != DType::Float8_e5m2, "[", op,
             "] does not support ", dtype_name(x.dtype()), " inputs");
}

// (values, indices) of one value per line, keepdim shape, squeezed unless keepdim.
std::tuple<Tensor, Tensor> pick(OpId id, const Tensor& x, int64_t dim, bool keepdim, int64_t k,
                                bool flag) {
  const char* op = op_name(id);
  DimVector shape(x.sizes());
  if (x.dim() > 0) shape[dim] = 1;
  OpCall c(id);
  c.attrs.i0 = dim;
  c.attrs.i1 = k;
  c.attrs.flag = flag;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  c.out.push_back(detail::make_output(shape, DType::Int64, x.device()));
  (void)op;
  detail::run(c);
  if (keepdim || x.dim() == 0) return {c.out[0], c.out[1]};
  return {c.out[0].squeeze(dim), c.out[1].squeeze(dim)};
}

void check_nonempty_dim(const Tensor& x, int64_t dim, const char* op) {
  KILN_CHECK(x.dim() == 0 || x.size(dim) > 0, "[", op, "] expected reduction dim ", dim,
             " to have non-zero size (input shape ", x.sizes(), ")");
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim,
                                bool descending) {
  check_sortable(x, "sort");
  (void)stable;  // the sort is always stable
  dim = line_dim(x, dim, "sort");
  OpCall c(OpId::Sort);
  c.attrs.i0 = dim;
  c.attrs.flag = descending;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output(x.sizes(), x.dtype(), x.device()));
  c.out.push_back(detail::make_output(x.sizes(), DType::Int64, x.device()));
  detail::run(c);
  return {c.out[0], c.out[1]};
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  return sort(x, std::optional<bool>(false), dim, descending);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort(x, std::optional<bool>(stable), dim, descending));
}

Tensor msort(const Tensor& x) { return std::get<0>(sort(x, 0, false)); }

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  check_sortable(x, "topk");
  (void)sorted;  // always sorted (a valid order for sorted=false)
  dim = line_dim(x, dim, "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  KILN_CHECK(k >= 0 && k <= n, "[topk] selected index k (", k, ") out of range for dimension ", dim,
             " of size ", n);
  DimVector shape(x.sizes());
  if (x.dim() > 0) shape[dim] = k;
  OpCall c(OpId::TopK);
  c.attrs.i0 = dim;
  c.attrs.i1 = k;
  c.attrs.flag = largest;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  c.out.push_back(detail::make_output(shape, DType::Int64, x.device()));
  detail::run(c);
  return {c.out[0], c.out[1]};
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  check_sortable(x, "kthvalue");
  dim = line_dim(x, dim, "kthvalue");
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  KILN_CHECK(k >= 1 && k <= n, "[kthvalue] selected number k (", k, ") out of range for dimension ",
             dim, " of size ", n);
  return pick(OpId::KthValue, x, dim, keepdim, k, false);
}

std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  check_sortable(x, "median");
  dim = line_dim(x, dim, "median");
  check_nonempty_dim(x, dim, "median");
  return pick(OpId::Median, x, dim, keepdim, 0, false);
}

std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  check_sortable(x, "nanmedian");
  dim = line_dim(x, dim, "nanmedian");
  check_nonempty_dim(x, dim, "nanmedian");
  return pick(OpId::Median, x, dim, keepdim, 0, true);
}

namespace {
Tensor median_all(const Tensor& x, bool ignore_nan) {
  const char* op = ignore_nan ? "nanmedian" : "median";
  check_sortable(x, op);
  if (x.numel() == 0) {
    KILN_CHECK(x.is_floating_point(), "[", op, "] of an empty ", dtype_name(x.dtype()),
               " tensor is undefined");
    return full({}, std::numeric_limits<double>::quiet_NaN(), x.options());
  }
  return std::get<0>(pick(OpId::Median, detail::reshape_any(x, {-1}), 0, false, 0, ignore_nan));
}
}  // namespace

Tensor median(const Tensor& x) { return median_all(x, false); }
Tensor nanmedian(const Tensor& x) { return median_all(x, true); }

std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  check_sortable(x, "mode");
  dim = line_dim(x, dim, "mode");
  check_nonempty_dim(x, dim, "mode");
  return pick(OpId::Mode, x, dim, keepdim, 0, false);
}

// ---- Tensor methods ----
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return kiln::sort(*this, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim,
                                        bool descending) const {
  return kiln::sort(*this, stable, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return kiln::argsort(*this, dim, descending, stable);
}
Tensor Tensor::msort() const { return kiln::msort(*this); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return kiln::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return kiln::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return kiln::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return kiln::median(*this, dim, keepdim);
}
Tensor Tensor::nanmedian() const { return kiln::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
  return kiln::nanmedian(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const {
  return kiln::mode(*this, dim, keepdim);
}

}  // namespace kiln
