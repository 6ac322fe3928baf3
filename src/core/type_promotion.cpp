// result_type and can_cast (PyTorch's three-priority promotion: dims, 0-dim, wrapped scalars).
#include "kiln/type_promotion.h"

namespace kiln {

namespace {
DType promote_opt(const std::optional<DType>& a, DType b) { return a ? promote_types(*a, b) : b; }

// Mirrors PyTorch's combine_categories: `higher` wins unless `lower` is of a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  DType h = *higher, l = *lower;
  if (is_complex(h)) return h;
  if (is_complex(l)) return is_floating_point(h) ? to_complex(h) : l;
  if (is_floating_point(h)) return h;
  if (h == DType::Bool || is_floating_point(l)) return promote_types(h, l);
  return h;
}

DType scalar_dtype_for_promotion(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return DType::Bool;
    case Scalar::Kind::Int:
      return DType::Int64;
    case Scalar::Kind::Float:
      return get_default_dtype();
    case Scalar::Kind::Complex:
      return get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
  }
  return DType::Float32;
}
}  // namespace

namespace detail {

void ResultTypeState::add(const Tensor& t) {
  if (!t.defined()) return;
  if (t.impl()->is_wrapped_number()) {
    DType d = t.dtype();
    if (is_complex(d))
      d = get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
    else if (is_floating_point(d))
      d = get_default_dtype();
    wrapped_result = promote_opt(wrapped_result, d);
  } else if (t.dim() == 0) {
    zero_result = promote_opt(zero_result, t.dtype());
  } else {
    dim_result = promote_opt(dim_result, t.dtype());
  }
}

void ResultTypeState::add(const Scalar& s) {
  wrapped_result = promote_opt(wrapped_result, scalar_dtype_for_promotion(s));
}

DType ResultTypeState::result() const {
  auto r = combine(dim_result, combine(zero_result, wrapped_result));
  return r ? *r : get_default_dtype();
}

}  // namespace detail

DType result_type(const Tensor& a, const Tensor& b) {
  detail::ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}
DType result_type(const Tensor& a, const Scalar& b) {
  detail::ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}
DType result_type(const Scalar& a, const Tensor& b) { return result_type(b, a); }
DType result_type(const Scalar& a, const Scalar& b) {
  detail::ResultTypeState s;
  s.add(a);
  s.add(b);
  return s.result();
}

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating_point(from) && is_integral(to, false)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

}  // namespace kiln
