// convert<To>(from): element conversion between any two kiln dtypes (C++ rules; complex -> real
// keeps the real part; anything -> bool is "!= 0", complex -> bool too: 1j is true). Host, device.
#pragma once

#include <type_traits>

#include "kiln/complex.h"
#include "kiln/half.h"

namespace kiln::detail {

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<complex<T>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_v = IsComplex<T>::value;

template <class T>
inline constexpr bool is_reduced_float_v =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_same_v<T, Float8_e4m3fn> ||
    std::is_same_v<T, Float8_e5m2>;

template <class To, class From>
KILN_HD inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<To>) {
    using R = decltype(To().real());
    if constexpr (is_complex_v<From>)
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    else if constexpr (is_reduced_float_v<From>)
      return To(static_cast<R>(static_cast<float>(v)), R(0));
    else
      return To(static_cast<R>(v), R(0));
  } else if constexpr (is_complex_v<From> && std::is_same_v<To, bool>) {
    return v.real() != decltype(v.real())(0) || v.imag() != decltype(v.imag())(0);
  } else if constexpr (is_complex_v<From>) {
    return convert<To>(v.real());
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_reduced_float_v<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_reduced_float_v<To>) {
    if constexpr (std::is_same_v<From, double>)
      return To(v);
    else
      return To(static_cast<float>(v));
  } else if constexpr (is_reduced_float_v<From>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

// The type a kernel computes in for storage type T (float for the 16- and 8-bit floats).
template <class T>
using opmath_t = typename OpMath<T>::type;

}  // namespace kiln::detail
