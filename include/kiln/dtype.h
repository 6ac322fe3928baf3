// DType: the 14 element types, declared once in KILN_FORALL_DTYPES (order frozen: files depend on
// it).
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "kiln/complex.h"
#include "kiln/half.h"

namespace kiln {

// _(C++ type, enum name, user-facing name). Never reorder: serialized files store the index.
#define KILN_FORALL_DTYPES(_)                            \
  _(bool, Bool, bool)                                    \
  _(uint8_t, UInt8, uint8)                               \
  _(int8_t, Int8, int8)                                  \
  _(int16_t, Int16, int16)                               \
  _(int32_t, Int32, int32)                               \
  _(int64_t, Int64, int64)                               \
  _(::kiln::Half, Float16, float16)                      \
  _(::kiln::BFloat16, BFloat16, bfloat16)                \
  _(float, Float32, float32)                             \
  _(double, Float64, float64)                            \
  _(::kiln::complex<float>, Complex64, complex64)        \
  _(::kiln::complex<double>, Complex128, complex128)     \
  _(::kiln::Float8_e4m3fn, Float8_e4m3fn, float8_e4m3fn) \
  _(::kiln::Float8_e5m2, Float8_e5m2, float8_e5m2)

enum class DType : int8_t {
#define KILN_DTYPE_ENUM(T, E, N) E,
  KILN_FORALL_DTYPES(KILN_DTYPE_ENUM)
#undef KILN_DTYPE_ENUM
};
constexpr int kNumDTypes = 14;

// PyTorch-style constants: kiln::kFloat32, kiln::kInt64, ...
constexpr DType kBool = DType::Bool, kUInt8 = DType::UInt8, kInt8 = DType::Int8,
                kInt16 = DType::Int16, kInt32 = DType::Int32, kInt64 = DType::Int64,
                kFloat16 = DType::Float16, kHalf = DType::Float16, kBFloat16 = DType::BFloat16,
                kFloat32 = DType::Float32, kFloat = DType::Float32, kFloat64 = DType::Float64,
                kDouble = DType::Float64, kComplex64 = DType::Complex64,
                kComplex128 = DType::Complex128, kFloat8_e4m3fn = DType::Float8_e4m3fn,
                kFloat8_e5m2 = DType::Float8_e5m2, kLong = DType::Int64, kInt = DType::Int32;

const char* dtype_name(DType t);  // "float32"
std::ostream& operator<<(std::ostream& os, DType t);

constexpr int64_t element_size(DType t) {
  constexpr int8_t sizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 1, 1};
  return sizes[static_cast<int>(t)];
}
constexpr bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
constexpr bool is_float8(DType t) { return t == DType::Float8_e4m3fn || t == DType::Float8_e5m2; }
// True for real floating types (float8, float16, bfloat16, float32, float64), as
// torch.is_floating_point.
constexpr bool is_floating_point(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 ||
         t == DType::Float64 || is_float8(t);
}
constexpr bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
constexpr bool is_signed(DType t) { return t != DType::Bool && t != DType::UInt8; }
// complex64 -> float32, complex128 -> float64; other types unchanged.
constexpr DType to_real(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
// float16/bfloat16/float32 -> complex64 (PyTorch maps half to complex32; kiln has none), float64 ->
// complex128.
constexpr DType to_complex(DType t) {
  return t == DType::Float64 ? DType::Complex128 : is_complex(t) ? t : DType::Complex64;
}

// The PyTorch type-promotion lattice (torch.promote_types). Throws for float8 mixed with
// another type, as PyTorch does.
DType promote_types(DType a, DType b);

// The default floating type (torch.get_default_dtype), float32 unless changed.
DType get_default_dtype();
void set_default_dtype(DType t);

// C++ type <-> DType.
template <class T>
struct DTypeOf;
#define KILN_DTYPE_OF(T, E, N)               \
  template <>                                \
  struct DTypeOf<T> {                        \
    static constexpr DType value = DType::E; \
  };
KILN_FORALL_DTYPES(KILN_DTYPE_OF)
#undef KILN_DTYPE_OF
template <class T>
constexpr DType dtype_of() {
  return DTypeOf<std::remove_cv_t<T>>::value;
}

template <DType D>
struct CppTypeOf;
#define KILN_CPP_TYPE_OF(T, E, N) \
  template <>                     \
  struct CppTypeOf<DType::E> {    \
    using type = T;               \
  };
KILN_FORALL_DTYPES(KILN_CPP_TYPE_OF)
#undef KILN_CPP_TYPE_OF
template <DType D>
using cpp_type_t = typename CppTypeOf<D>::type;

}  // namespace kiln
