// Strided matrix descriptors and the OpenBLAS calls behind the Bmm kernel: GEMM/GEMV for float,
// double, complex<float>, complex<double>, with the transpose flags read from the strides.
#pragma once

#include <cstdint>

#include "kiln/complex.h"

namespace kiln::cpu {

// Element (i, j) of a matrix lives at p + i * rs + j * cs (strides in elements).
struct MatDesc {
  void* p;
  int64_t rows, cols, rs, cs;
  MatDesc t() const { return {p, cols, rows, cs, rs}; }
};

// The leading dimension when BLAS can read m as a row-major matrix without a copy, else -1.
// Size-1 dims may have any stride.
int64_t row_major_ld(const MatDesc& m);
// True when BLAS can read m directly: row-major, or the transpose of a row-major matrix.
inline bool blas_readable(const MatDesc& m) {
  return row_major_ld(m) >= 0 || row_major_ld(m.t()) >= 0;
}

// c = alpha * a @ b + beta * c for one matrix (beta == 0: c is not read). a and b must be
// blas_readable; c row-major or the transpose of one. Dispatches to GEMV when c has one row or
// column. T is float, double, complex<float> or complex<double>.
template <class T>
void blas_gemm(const MatDesc& a, const MatDesc& b, const MatDesc& c, T alpha, T beta);

// Keeps OpenBLAS's thread count equal to kiln::get_num_threads() (cheap when unchanged).
void sync_blas_threads();

}  // namespace kiln::cpu
