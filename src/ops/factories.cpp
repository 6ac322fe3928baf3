// Public factories: empty, zeros, ones, full, arange, linspace, logspace, eye, *_like, tensor().
#include "kiln/ops/factories.h"

#include <cmath>
#include <cstring>

#include "autograd/meta.h"
#include "kiln/ops/elementwise.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

DType TensorOptions::dtype_or_default() const { return dtype_.value_or(get_default_dtype()); }

namespace {
Tensor finish(Tensor t, const TensorOptions& o);
}

Tensor empty(IntArrayRef size, const TensorOptions& o) {
  return finish(detail::empty_impl(size, o.dtype_or_default(), o.device_), o);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) {
  return finish(detail::empty_strided_impl(size, stride, o.dtype_or_default(), o.device_), o);
}

Tensor zeros(IntArrayRef size, const TensorOptions& o) {
  return full(size, 0, o.dtype(o.dtype_or_default()));
}
Tensor ones(IntArrayRef size, const TensorOptions& o) {
  return full(size, 1, o.dtype(o.dtype_or_default()));
}

namespace {
DType dtype_of_scalar(const Scalar& s) {
  if (s.is_bool()) return DType::Bool;
  if (s.is_integral()) return DType::Int64;
  if (s.is_complex())
    return get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
  return get_default_dtype();
}

Tensor finish(Tensor t, const TensorOptions& o) {
  KILN_CHECK(
      !o.requires_grad_ || is_floating_point(t.dtype()) || is_complex(t.dtype()),
      "[factory] only tensors of floating point and complex dtype can require gradients, got ",
      dtype_name(t.dtype()));
  if (o.requires_grad_) detail::set_requires_grad(t, true);
  return t;
}
}  // namespace

Tensor full(IntArrayRef size, const Scalar& v, const TensorOptions& o) {
  DType dt = o.dtype_.value_or(dtype_of_scalar(v));
  Tensor t = detail::empty_impl(size, dt, o.device_);
  t.fill_(v);
  return finish(t, o);
}

Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  bool all_int = !start.is_floating_point() && !end.is_floating_point() &&
                 !step.is_floating_point() && !start.is_complex() && !end.is_complex() &&
                 !step.is_complex();
  DType dt = o.dtype_.value_or(all_int ? DType::Int64 : get_default_dtype());
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(st != 0, "[arange] step must be nonzero");
  KILN_CHECK(std::isfinite(s) && std::isfinite(e), "[arange] unsupported range: ", s, " -> ", e);
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "[arange] upper bound and larger bound inconsistent with step sign (start ", s,
             ", end ", e, ", step ", st, ")");
  int64_t n;
  if (all_int) {
    int64_t a = start.to_int(), b = end.to_int(), c = step.to_int();
    n = c > 0 ? (b - a + c - 1) / c : (a - b + (-c) - 1) / (-c);
  } else {
    n = static_cast<int64_t>(std::ceil((e - s) / st));
  }
  Tensor t = detail::empty_impl({n}, dt, o.device_);
  OpCall c(OpId::Arange);
  c.out.push_back(t);
  c.provided_out = true;
  c.attrs.s0 = start;
  c.attrs.s1 = step;
  detail::run(c);
  return finish(t, o);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  KILN_CHECK(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  DType dt = o.dtype_.value_or(
      (start.is_complex() || end.is_complex())
          ? (get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64)
          : get_default_dtype());
  Tensor t = detail::empty_impl({steps}, dt, o.device_);
  if (steps == 0) return finish(t, o);
  OpCall c(OpId::Linspace);
  c.out.push_back(t);
  c.provided_out = true;
  c.attrs.s0 = start;
  c.attrs.s1 = end;
  detail::run(c);
  return finish(t, o);
}

Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base,
                const TensorOptions& o) {
  DType dt = o.dtype_or_default();
  // base ** x evaluated in float64 on the host (exact for integral results such as 10^2).
  Tensor e = linspace(start, end, steps, TensorOptions(DType::Float64));
  double* p = e.data_ptr<double>();
  for (int64_t i = 0; i < steps; ++i) p[i] = std::pow(base, p[i]);
  return finish(e.to(o.device_, dt), o);
}

Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  KILN_CHECK(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, o.dtype(o.dtype_or_default()).requires_grad(false));
  if (n > 0 && m > 0) t.diagonal().fill_(1);
  return finish(t, o);
}

Tensor empty_like(const Tensor& t, const TensorOptions& o) {
  return empty(t.sizes(), o.dtype(o.dtype_.value_or(t.dtype()))
                              .device(o.device_.is_cpu() && !t.is_cpu() ? t.device() : o.device_));
}
Tensor zeros_like(const Tensor& t, const TensorOptions& o) { return empty_like(t, o).zero_(); }
Tensor ones_like(const Tensor& t, const TensorOptions& o) { return empty_like(t, o).fill_(1); }
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) {
  return empty_like(t, o).fill_(v);
}

// ---- tensor({...}) ----
namespace {
void collect_shape(const TensorData& d, DimVector& shape, size_t depth) {
  if (d.is_scalar()) return;
  int64_t n = static_cast<int64_t>(d.list().size());
  if (shape.size() <= depth) shape.push_back(n);
  if (n > 0) collect_shape(d.list()[0], shape, depth + 1);
}

void collect_values(const TensorData& d, const DimVector& shape, size_t depth,
                    std::vector<Scalar>& out, std::optional<Scalar::Kind>& kind) {
  if (d.is_scalar()) {
    KILN_CHECK(depth == shape.size(), "[tensor] ragged nested list: expected a list at depth ",
               depth);
    Scalar::Kind k = d.scalar().kind();
    if (!kind || static_cast<int>(k) > static_cast<int>(*kind)) kind = k;
    out.push_back(d.scalar());
    return;
  }
  KILN_CHECK(depth < shape.size() && static_cast<int64_t>(d.list().size()) == shape[depth],
             "[tensor] ragged nested list: expected sequence of length ",
             depth < shape.size() ? shape[depth] : 0, " at dim ", depth, " (got ", d.list().size(),
             ")");
  for (const auto& e : d.list()) collect_values(e, shape, depth + 1, out, kind);
}
}  // namespace

Tensor tensor(const TensorData& data, const TensorOptions& o) {
  DimVector shape;
  collect_shape(data, shape, 0);
  std::vector<Scalar> vals;
  std::optional<Scalar::Kind> kind;
  collect_values(data, shape, 0, vals, kind);
  DType natural = DType::Float32;
  if (kind) {
    switch (*kind) {
      case Scalar::Kind::Bool:
        natural = DType::Bool;
        break;
      case Scalar::Kind::Int:
        natural = DType::Int64;
        break;
      case Scalar::Kind::Float:
        natural = get_default_dtype();
        break;
      case Scalar::Kind::Complex:
        natural = get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
        break;
    }
  } else {
    natural = get_default_dtype();  // torch.tensor([]) is float32
  }
  DType dt = o.dtype_.value_or(natural);
  Tensor cpu = detail::empty_impl(shape, DType::Complex128, Device(kCPU));
  auto* p = static_cast<complex<double>*>(cpu.data_ptr());
  for (size_t i = 0; i < vals.size(); ++i) p[i] = vals[i].to_complex();
  Tensor out;
  if (dt == DType::Complex128 || is_complex(dt)) {
    out = cpu.to(o.device_, dt);
  } else {
    // Go through float64 / int64 so that large integers stay exact.
    if (is_integral(dt, true)) {
      Tensor ints = detail::empty_impl(shape, DType::Int64, Device(kCPU));
      auto* q = static_cast<int64_t*>(ints.data_ptr());
      for (size_t i = 0; i < vals.size(); ++i)
        q[i] = vals[i].is_floating_point() ? static_cast<int64_t>(vals[i].to_double())
                                           : vals[i].to_int();
      if (dt == DType::Bool)
        for (size_t i = 0; i < vals.size(); ++i) q[i] = vals[i].to<bool>();
      out = ints.to(o.device_, dt);
    } else {
      Tensor dbl = detail::empty_impl(shape, DType::Float64, Device(kCPU));
      auto* q = static_cast<double*>(dbl.data_ptr());
      for (size_t i = 0; i < vals.size(); ++i) q[i] = vals[i].to_double();
      out = dbl.to(o.device_, dt);
    }
  }
  if (out.is_same(cpu)) out = out.clone();
  return finish(out, o);
}

namespace detail {
Tensor from_raw_copy(const void* data, int64_t count, DType dtype, IntArrayRef shape,
                     const TensorOptions& o) {
  Tensor t = empty_impl(shape, dtype, Device(kCPU));
  KILN_CHECK(t.numel() == count, "[from_vector] shape ", shape, " needs ", t.numel(),
             " elements but the vector has ", count);
  if (count) std::memcpy(t.data_ptr(), data, static_cast<size_t>(count) * element_size(dtype));
  return finish(t.to(o.device_, o.dtype_.value_or(dtype)), o);
}
}  // namespace detail

Tensor from_blob(void* data, IntArrayRef size, const TensorOptions& o) {
  return from_blob(data, size, std::function<void(void*)>(), o);
}

Tensor from_blob(void* data, IntArrayRef size, std::function<void(void*)> deleter,
                 const TensorOptions& o) {
  DimVector st(size.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(size.size()) - 1; i >= 0; --i) {
    st[i] = s;
    s *= std::max<int64_t>(size[i], 1);
  }
  return from_blob(data, size, st, std::move(deleter), o);
}

Tensor from_blob(void* data, IntArrayRef size, IntArrayRef strides,
                 std::function<void(void*)> deleter, const TensorOptions& o) {
  KILN_CHECK(size.size() == strides.size(), "[from_blob] sizes ", size, " and strides ", strides,
             " have different lengths");
  DType dt = o.dtype_.value_or(DType::Float32);
  int64_t n = detail::storage_elements_needed(size, strides);
  KILN_CHECK(data != nullptr || n == 0, "[from_blob] null data pointer for a non-empty tensor");
  Storage st = make_storage_from_blob(data, static_cast<size_t>(n) * element_size(dt), o.device_,
                                      std::move(deleter));
  auto impl = detail::Ref<detail::TensorImpl>::make(std::move(st), dt, o.device_);
  impl->set_sizes_and_strides(size, strides, 0);
  return finish(Tensor(std::move(impl)), o);
}

}  // namespace kiln
