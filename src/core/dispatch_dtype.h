// dispatch_types<Mask>(dtype, op, f): calls f.template operator()<T>() for the C++ type of dtype,
// instantiating only the types in Mask; other dtypes raise "[op] ... not supported".
#pragma once

#include <cstdint>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln::detail {

constexpr uint32_t dtype_bit(DType d) { return 1u << static_cast<int>(d); }
constexpr uint32_t kBoolMask = dtype_bit(DType::Bool);
constexpr uint32_t kIntMask = dtype_bit(DType::UInt8) | dtype_bit(DType::Int8) |
                              dtype_bit(DType::Int16) | dtype_bit(DType::Int32) |
                              dtype_bit(DType::Int64);
constexpr uint32_t kReducedFloatMask = dtype_bit(DType::Float16) | dtype_bit(DType::BFloat16);
constexpr uint32_t kFloatMask =
    kReducedFloatMask | dtype_bit(DType::Float32) | dtype_bit(DType::Float64);
constexpr uint32_t kComplexMask = dtype_bit(DType::Complex64) | dtype_bit(DType::Complex128);
constexpr uint32_t kFloat8Mask = dtype_bit(DType::Float8_e4m3fn) | dtype_bit(DType::Float8_e5m2);
// The usual arithmetic set: everything but float8.
constexpr uint32_t kNumericMask = kBoolMask | kIntMask | kFloatMask | kComplexMask;
constexpr uint32_t kAllMask = kNumericMask | kFloat8Mask;
constexpr uint32_t kRealMask = kBoolMask | kIntMask | kFloatMask;

[[noreturn]] void throw_dtype_unsupported(const char* op, DType d);

template <class T>
struct TypeTag {
  using type = T;
};

template <uint32_t Mask, class F>
decltype(auto) dispatch_types(DType d, const char* op, F&& f) {
  switch (d) {
#define KILN_DISPATCH_CASE(T, E, N)                    \
  case DType::E:                                       \
    if constexpr ((Mask & dtype_bit(DType::E)) != 0) { \
      return f.template operator()<T>();               \
    }                                                  \
    break;
    KILN_FORALL_DTYPES(KILN_DISPATCH_CASE)
#undef KILN_DISPATCH_CASE
  }
  throw_dtype_unsupported(op, d);
}

}  // namespace kiln::detail
