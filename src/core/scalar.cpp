// Scalar helpers: dtype, negation, equality, printing.
#include "kiln/scalar.h"

namespace kiln {

DType Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool:
      return DType::Bool;
    case Kind::Int:
      return DType::Int64;
    case Kind::Float:
      return get_default_dtype();
    case Kind::Complex:
      return get_default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64;
  }
  return DType::Float32;
}

Scalar Scalar::operator-() const {
  switch (kind_) {
    case Kind::Bool:
    case Kind::Int:
      return Scalar(-i_);
    case Kind::Float:
      return Scalar(-d_);
    case Kind::Complex:
      return Scalar(complex<double>(-c_.real(), -c_.imag()));
  }
  return *this;
}

bool Scalar::equal(const Scalar& o) const {
  if (is_complex() || o.is_complex()) return to_complex() == o.to_complex();
  if (is_floating_point() || o.is_floating_point()) return to_double() == o.to_double();
  return to_int() == o.to_int();
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return os << (s.to<bool>() ? "true" : "false");
    case Scalar::Kind::Int:
      return os << s.to_int();
    case Scalar::Kind::Float:
      return os << s.to_double();
    case Scalar::Kind::Complex: {
      auto c = s.to_complex();
      return os << "(" << c.real() << (c.imag() < 0 ? "" : "+") << c.imag() << "j)";
    }
  }
  return os;
}

}  // namespace kiln
