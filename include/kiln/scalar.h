// Scalar: a number passed to ops (bool, integer, floating or complex), like a Python number.
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln {

// Scalars take part in type promotion as Python numbers do: they never widen a tensor's
// category width (tensor<float16> + 2.5 stays float16) but may raise its category
// (tensor<int32> + 2.5 is float32, the default dtype).
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };

  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}              // NOLINT
  Scalar(float v) : kind_(Kind::Float), d_(v) {}                              // NOLINT
  Scalar(double v) : kind_(Kind::Float), d_(v) {}                             // NOLINT
  Scalar(Half v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}           // NOLINT
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}       // NOLINT
  Scalar(Float8_e4m3fn v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT
  Scalar(Float8_e5m2 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}    // NOLINT
  Scalar(complex<float> v) : kind_(Kind::Complex), c_(v.real(), v.imag()) {}  // NOLINT
  Scalar(complex<double> v) : kind_(Kind::Complex), c_(v) {}                  // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  // The dtype a 0-dim tensor holding this value would get: bool, int64, default float, complex
  // of the default float.
  DType dtype() const;

  // Converts to T with C++ conversion rules (complex -> real drops the imaginary part).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, complex<double>> || std::is_same_v<T, complex<float>>) {
      using R = decltype(T().real());
      switch (kind_) {
        case Kind::Complex:
          return T(static_cast<R>(c_.real()), static_cast<R>(c_.imag()));
        case Kind::Float:
          return T(static_cast<R>(d_), R(0));
        default:
          return T(static_cast<R>(i_), R(0));
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      switch (kind_) {
        case Kind::Complex:
          return c_.real() != 0 || c_.imag() != 0;
        case Kind::Float:
          return d_ != 0;
        default:
          return i_ != 0;
      }
    } else {
      switch (kind_) {
        case Kind::Complex:
          return static_cast<T>(c_.real());
        case Kind::Float:
          return static_cast<T>(d_);
        default:
          return static_cast<T>(i_);
      }
    }
  }
  double to_double() const { return to<double>(); }
  int64_t to_int() const { return to<int64_t>(); }
  complex<double> to_complex() const { return to<complex<double>>(); }

  Scalar operator-() const;
  bool equal(const Scalar& o) const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
    complex<double> c_;
  };
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace kiln
