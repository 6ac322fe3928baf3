// Front ends of quantile/nanquantile, unique/unique_consecutive, searchsorted, bucketize, histc
// and bincount, with their Tensor methods.
#include <cmath>

#include "core/wrap_dim.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/scan.h"
#include "kiln/type_promotion.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/shape_util.h"

namespace kiln {

namespace {

// ---- quantile ----
int interpolation_code(std::string_view s, const char* op) {
  if (s == "linear") return 0;
  if (s == "lower") return 1;
  if (s == "higher") return 2;
  if (s == "midpoint") return 3;
  if (s == "nearest") return 4;
  KILN_ERROR("[", op,
             "] interpolation must be one of linear, lower, higher, midpoint or nearest. "
             "Got ",
             s);
}

Tensor quantile_impl(const Tensor& x, const Tensor& q, bool q_scalar, std::optional<int64_t> dim,
                     bool keepdim, std::string_view interpolation, bool ignore_nan) {
  const char* op = ignore_nan ? "nanquantile" : "quantile";
  detail::check_defined(x, op);
  detail::check_defined(q, op);
  KILN_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, "[", op,
             "] input tensor must be either float or double dtype, got ", dtype_name(x.dtype()));
  KILN_CHECK(x.numel() > 0, "[", op, "] input tensor must be non-empty");
  KILN_CHECK(q.dim() <= 1, "[", op, "] q must be a scalar or 1D tensor, got ", q.dim(), " dims");
  KILN_CHECK(q_scalar || q.dtype() == x.dtype(), "[", op,
             "] q tensor must be same dtype as the input tensor (", dtype_name(x.dtype()),
             "), got ", dtype_name(q.dtype()));
  const int mode = interpolation_code(interpolation, op);
  Tensor qd = detail::reshape_any(q.to(Device(kCPU)).to(DType::Float64).contiguous(), {-1});
  const double* qp = qd.data_ptr<double>();
  for (int64_t i = 0; i < qd.numel(); ++i)
    KILN_CHECK(qp[i] >= 0 && qp[i] <= 1, "[", op, "] q values must be in the range [0, 1], got ",
               qp[i]);
  const bool q1d = q.dim() == 1;
  Tensor x2 = dim ? x : detail::reshape_any(x, {-1});
  const int64_t d = dim ? detail::wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), op) : 0;
  DimVector shape(x2.sizes());
  if (x2.dim() > 0) shape[d] = 1;
  shape.push_back(qd.numel());
  OpCall c(OpId::Quantile);
  c.attrs.i0 = d;
  c.attrs.i1 = mode;
  c.attrs.flag = ignore_nan;
  c.compute = x.dtype();
  c.in.push_back(x2);
  c.in.push_back(qd);
  c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  Tensor r = detail::run1(c);
  r = q1d ? r.movedim({-1}, {0}) : r.squeeze(-1);
  const int64_t off = q1d ? 1 : 0;
  if (!dim) {
    if (keepdim) {
      DimVector ks;
      if (q1d) ks.push_back(qd.numel());
      for (int64_t i = 0; i < x.dim(); ++i) ks.push_back(1);
      return r.reshape(ks).contiguous();
    }
    return r.squeeze(off).contiguous();
  }
  if (!keepdim && x2.dim() > 0) r = r.squeeze(d + off);
  return r.contiguous();
}

// ---- unique ----
std::tuple<Tensor, Tensor, Tensor> unique_impl(const Tensor& x, bool consecutive, bool want_inv,
                                               bool want_counts, std::optional<int64_t> dim) {
  const char* op = consecutive ? "unique_consecutive" : "unique";
  detail::check_defined(x, op);
  KILN_CHECK(!x.is_complex(), "[", op, "] does not support complex inputs (got ",
             dtype_name(x.dtype()), ")");
  Tensor x2;
  int64_t d = 0;
  DimVector moved;  // the shape of x with dim moved to the front
  if (dim) {
    d = detail::wrap_dim(*dim, x.dim(), op);
    Tensor mv = x.movedim({d}, {0});
    moved = DimVector(mv.sizes());
    int64_t m = 1;
    for (int64_t i = 1; i < mv.dim(); ++i) m *= mv.size(i);
    x2 = mv.contiguous().reshape({x.size(d), m});
  } else {
    x2 = detail::reshape_any(x, {x.numel(), 1}).contiguous();
  }
  const int64_t n = x2.size(0);
  const TensorOptions i64 = TensorOptions(DType::Int64).device(x.device());
  OpCall c(OpId::Unique);
  c.attrs.flag = consecutive;
  c.compute = x.dtype();
  c.in.push_back(x2);
  c.out.push_back(detail::make_output(x2.sizes(), x.dtype(), x.device()));
  c.out.push_back(detail::make_output({n}, DType::Int64, x.device()));
  c.out.push_back(detail::make_output({n}, DType::Int64, x.device()));
  c.out.push_back(detail::make_output({}, DType::Int64, x.device()));
  detail::run(c);
  const int64_t k = c.out[3].item<int64_t>();
  Tensor values = c.out[0].narrow(0, 0, k);
  if (dim) {
    moved[0] = k;
    values = values.reshape(moved).movedim({0}, {d}).contiguous();
  } else {
    values = values.reshape({k}).contiguous();
  }
  Tensor inv = want_inv ? (dim ? c.out[1] : c.out[1].reshape(x.sizes())) : empty({0}, i64);
  Tensor counts = want_counts ? c.out[2].narrow(0, 0, k).contiguous() : empty({0}, i64);
  return {values, inv, counts};
}

// ---- searchsorted ----
Tensor searchsorted_impl(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                         std::optional<std::string_view> side, const Tensor& sorter) {
  detail::check_defined(seq, "searchsorted");
  detail::check_defined(values, "searchsorted");
  if (side) {
    KILN_CHECK(*side == "left" || *side == "right",
               "[searchsorted] side can only be 'left' or 'right' but got ", *side);
    KILN_CHECK(!(right && *side == "left"),
               "[searchsorted] side and right can't be set to "
               "opposites, got side of left while right was True");
    right = *side == "right";
  }
  KILN_CHECK(seq.dim() >= 1,
             "[searchsorted] boundaries tensor should be 1 dimension or the first "
             "N-1 dimensions of boundaries tensor and input value tensor must match, but we got "
             "boundaries tensor ",
             seq.sizes(), " and input value tensor ", values.sizes());
  if (seq.dim() > 1) {
    bool ok = values.dim() == seq.dim();
    for (int64_t i = 0; ok && i + 1 < seq.dim(); ++i) ok = seq.size(i) == values.size(i);
    KILN_CHECK(ok,
               "[searchsorted] boundaries tensor should be 1 dimension or the first N-1 "
               "dimensions of boundaries tensor and input value tensor must match, but we got "
               "boundaries tensor ",
               seq.sizes(), " and input value tensor ", values.sizes());
  }
  KILN_CHECK(seq.device() == values.device(),
             "[searchsorted] boundaries and input value tensors "
             "should be on the same device, got ",
             seq.device().str(), " and ", values.device().str());
  KILN_CHECK(!seq.is_complex() && !values.is_complex() && seq.dtype() != DType::Bool &&
                 values.dtype() != DType::Bool,
             "[searchsorted] does not support ", dtype_name(seq.dtype()), " boundaries and ",
             dtype_name(values.dtype()), " values");
  OpCall c(OpId::SearchSorted);
  if (sorter.defined()) {
    KILN_CHECK(sorter.device() == seq.device(),
               "[searchsorted] sorter must be on the same device as the boundaries (",
               seq.device().str(), "), but it is on ", sorter.device().str());
    KILN_CHECK(sorter.dtype() == DType::Int64,
               "[searchsorted] sorter must be a tensor of long "
               "dtype, got ",
               dtype_name(sorter.dtype()));
    KILN_CHECK(sorter.sizes() == seq.sizes(),
               "[searchsorted] boundary and sorter must have the "
               "same size, got ",
               seq.sizes(), " and ", sorter.sizes());
    if (sorter.numel() > 0) {
      const int64_t lo = amin(sorter).item<int64_t>(), hi = amax(sorter).item<int64_t>();
      KILN_CHECK(lo >= 0 && hi < seq.size(-1),
                 "[searchsorted] sorter index out of range: values "
                 "in [",
                 lo, ", ", hi, "] for a sequence of length ", seq.size(-1));
    }
  }
  detail::ResultTypeState rs;
  rs.add(seq);
  rs.add(values);
  const DType dt = rs.result();
  c.attrs.i0 = seq.dim() == 1 ? 1 : 0;
  c.attrs.i1 = sorter.defined() ? 1 : 0;
  c.attrs.flag = right;
  c.compute = dt;
  c.in.push_back(seq.dtype() == dt ? seq : seq.to(dt));
  c.in.push_back(values.dtype() == dt ? values : values.to(dt));
  if (sorter.defined()) c.in.push_back(sorter);
  c.out.push_back(detail::make_output(values.sizes(), out_int32 ? DType::Int32 : DType::Int64,
                                      values.device()));
  return detail::run1(c);
}

}  // namespace

Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                std::string_view interpolation) {
  return quantile_impl(x, full({}, q, TensorOptions(DType::Float64)), true, dim, keepdim,
                       interpolation, false);
}
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                std::string_view interpolation) {
  return quantile_impl(x, q, false, dim, keepdim, interpolation, false);
}
Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation) {
  return quantile_impl(x, full({}, q, TensorOptions(DType::Float64)), true, dim, keepdim,
                       interpolation, true);
}
Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation) {
  return quantile_impl(x, q, false, dim, keepdim, interpolation, true);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool sorted, bool return_inverse,
                                          bool return_counts, std::optional<int64_t> dim) {
  (void)sorted;  // always sorted (a valid order for sorted=false)
  return unique_impl(x, false, return_inverse, return_counts, dim);
}
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse,
                                                      bool return_counts,
                                                      std::optional<int64_t> dim) {
  return unique_impl(x, true, return_inverse, return_counts, dim);
}

Tensor searchsorted(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  return searchsorted_impl(seq, values, out_int32, right, side, sorter);
}
Tensor searchsorted(const Tensor& seq, const Scalar& value, bool out_int32, bool right,
                    std::optional<std::string_view> side, const Tensor& sorter) {
  detail::check_defined(seq, "searchsorted");
  KILN_CHECK(seq.dim() == 1,
             "[searchsorted] input value can be a scalar only when boundaries "
             "tensor dimension is 1, but we got boundaries tensor dim(",
             seq.dim(), ")");
  Tensor v = detail::wrap_scalar(value);
  if (!seq.is_cpu()) v = v.to(seq.device());
  return searchsorted_impl(seq, v, out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
  detail::check_defined(boundaries, "bucketize");
  KILN_CHECK(boundaries.dim() == 1,
             "[bucketize] boundaries tensor must be 1 dimension, but got "
             "dim(",
             boundaries.dim(), ")");
  return searchsorted_impl(boundaries, x, out_int32, right, std::nullopt, Tensor());
}
Tensor bucketize(const Scalar& x, const Tensor& boundaries, bool out_int32, bool right) {
  detail::check_defined(boundaries, "bucketize");
  KILN_CHECK(boundaries.dim() == 1,
             "[bucketize] boundaries tensor must be 1 dimension, but got "
             "dim(",
             boundaries.dim(), ")");
  return searchsorted(boundaries, x, out_int32, right);
}

Tensor histc(const Tensor& x, int64_t bins, const Scalar& min, const Scalar& max) {
  detail::check_defined(x, "histc");
  KILN_CHECK(
      x.is_floating_point() && x.dtype() != DType::Float8_e4m3fn && x.dtype() != DType::Float8_e5m2,
      "[histc] only supports floating point inputs, got ", dtype_name(x.dtype()));
  KILN_CHECK(bins > 0, "[histc] bins must be > 0, got ", bins);
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && x.numel() > 0) {
    lo = amin(x).item<double>();
    hi = amax(x).item<double>();
  }
  if (lo == hi) lo -= 1, hi += 1;
  KILN_CHECK(std::isfinite(lo) && std::isfinite(hi), "[histc] range of [", lo, ", ", hi,
             "] is not finite");
  KILN_CHECK(lo < hi, "[histc] max must be larger than min (got min ", lo, ", max ", hi, ")");
  OpCall c(OpId::Histc);
  c.attrs.s0 = lo;
  c.attrs.s1 = hi;
  c.attrs.has_s0 = c.attrs.has_s1 = true;
  c.attrs.i0 = bins;
  c.compute = x.dtype();
  c.in.push_back(x);
  c.out.push_back(detail::make_output({bins}, x.dtype(), x.device()));
  return detail::run1(c);
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  detail::check_defined(x, "bincount");
  KILN_CHECK(x.dim() == 1 && is_integral(x.dtype(), false),
             "[bincount] only supports 1-d "
             "non-negative integral inputs, got a ",
             x.dim(), "-d ", dtype_name(x.dtype()), " tensor");
  KILN_CHECK(minlength >= 0, "[bincount] minlength should be >= 0, got ", minlength);
  KILN_CHECK(!weights.defined() || (weights.dim() == 1 && weights.size(0) == x.size(0)),
             "[bincount] weights should be 1-d and have the same length as input (", x.size(0),
             "), got shape ", (weights.defined() ? weights.sizes() : IntArrayRef()));
  const DType out_dt = !weights.defined()                  ? DType::Int64
                       : weights.dtype() == DType::Float32 ? DType::Float32
                                                           : DType::Float64;
  int64_t len = minlength;
  if (x.numel() > 0) {
    const int64_t lo = amin(x).item<int64_t>();
    KILN_CHECK(lo >= 0, "[bincount] only supports 1-d non-negative integral inputs, got value ",
               lo);
    len = std::max(len, amax(x).item<int64_t>() + 1);
  }
  OpCall c(OpId::BinCount);
  c.compute = out_dt;
  c.in.push_back(x.to(DType::Int64));
  if (weights.defined()) c.in.push_back(weights.to(out_dt));
  c.out.push_back(detail::make_output({len}, out_dt, x.device()));
  return detail::run1(c);
}

// ---- Tensor methods ----
Tensor Tensor::quantile(double q, std::optional<int64_t> dim, bool keepdim,
                        std::string_view interpolation) const {
  return kiln::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::quantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                        std::string_view interpolation) const {
  return kiln::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(double q, std::optional<int64_t> dim, bool keepdim,
                           std::string_view interpolation) const {
  return kiln::nanquantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                           std::string_view interpolation) const {
  return kiln::nanquantile(*this, q, dim, keepdim, interpolation);
}
std::tuple<Tensor, Tensor, Tensor> Tensor::unique(bool sorted, bool return_inverse,
                                                  bool return_counts,
                                                  std::optional<int64_t> dim) const {
  return kiln::unique(*this, sorted, return_inverse, return_counts, dim);
}
std::tuple<Tensor, Tensor, Tensor> Tensor::unique_consecutive(bool return_inverse,
                                                              bool return_counts,
                                                              std::optional<int64_t> dim) const {
  return kiln::unique_consecutive(*this, return_inverse, return_counts, dim);
}
Tensor Tensor::histc(int64_t bins, const Scalar& min, const Scalar& max) const {
  return kiln::histc(*this, bins, min, max);
}
Tensor Tensor::bincount(const Tensor& weights, int64_t minlength) const {
  return kiln::bincount(*this, weights, minlength);
}

}  // namespace kiln
