// DType names, the PyTorch promotion lattice, and the default float dtype.
#include <atomic>

#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln {

const char* dtype_name(DType t) {
  switch (t) {
#define KILN_DTYPE_NAME(T, E, N) \
  case DType::E:                 \
    return #N;
    KILN_FORALL_DTYPES(KILN_DTYPE_NAME)
#undef KILN_DTYPE_NAME
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

namespace {
int int_rank(DType t) {  // int8 < int16 < int32 < int64 (uint8 handled apart)
  switch (t) {
    case DType::Int8:
      return 0;
    case DType::Int16:
      return 1;
    case DType::Int32:
      return 2;
    default:
      return 3;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_float8(a) || is_float8(b))
    KILN_ERROR("[promote_types] promotion for float8 types is not supported, attempted to promote ",
               dtype_name(a), " and ", dtype_name(b));
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    DType c = is_complex(a) ? a : b, o = is_complex(a) ? b : a;
    if (c == DType::Complex128 || o == DType::Complex128 || o == DType::Float64)
      return DType::Complex128;
    return DType::Complex64;
  }
  if (is_floating_point(a) || is_floating_point(b)) {
    if (!is_floating_point(a)) return b;
    if (!is_floating_point(b)) return a;
    if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
    return DType::Float32;  // the remaining mixed pairs: {f16, bf16, f32}
  }
  // both integral, different
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType s = a == DType::UInt8 ? b : a;
    return s == DType::Int8 ? DType::Int16 : s;
  }
  return int_rank(a) > int_rank(b) ? a : b;
}

namespace {
std::atomic<DType> g_default_dtype{DType::Float32};
}

DType get_default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }

void set_default_dtype(DType t) {
  KILN_CHECK(
      t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16,
      "[set_default_dtype] only floating point types are supported as the default type, got ",
      dtype_name(t));
  g_default_dtype.store(t, std::memory_order_relaxed);
}

}  // namespace kiln
