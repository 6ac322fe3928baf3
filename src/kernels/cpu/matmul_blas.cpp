// OpenBLAS GEMM/GEMV wrappers for the Bmm kernel: layout detection from strides, transpose flags,
// GEMV for matrix-vector shapes, and OpenBLAS's thread count kept in step with kiln's.
#include "kernels/cpu/matmul_blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <type_traits>

#include "kiln/error.h"
#include "kiln/parallel.h"

namespace kiln::cpu {

int64_t row_major_ld(const MatDesc& m) {
  if (m.cols > 1 && m.cs != 1) return -1;
  int64_t min_ld = std::max<int64_t>(m.cols, 1);
  if (m.rows <= 1) return min_ld;
  return m.rs >= min_ld ? m.rs : -1;
}

void sync_blas_threads() {
  static std::atomic<int> current{-1};
  int n = get_num_threads();
  if (current.load(std::memory_order_relaxed) != n) {
    openblas_set_num_threads(n);
    current.store(n, std::memory_order_relaxed);
  }
}

namespace {

// How BLAS reads a matrix: its transpose flag, leading dimension and stored shape.
struct BlasLayout {
  CBLAS_TRANSPOSE trans;
  blasint ld;
};

blasint to_blasint(int64_t v) {
  KILN_CHECK(v <= INT_MAX, "[bmm] a matrix dimension or stride of ", v,
             " exceeds the range of the BLAS integer type");
  return static_cast<blasint>(v);
}

BlasLayout layout_of(const MatDesc& m) {
  int64_t ld = row_major_ld(m);
  if (ld >= 0) return {CblasNoTrans, to_blasint(ld)};
  ld = row_major_ld(m.t());
  KILN_ASSERT(ld >= 0, "matrix not readable by BLAS");
  return {CblasTrans, to_blasint(ld)};
}

// The increment of a vector of n elements with stride s, or 0 when BLAS cannot take it.
blasint vec_inc(int64_t n, int64_t s) {
  if (n <= 1) return 1;
  return s == 0 ? 0 : to_blasint(s);
}

template <class T>
void gemm_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, T alpha,
               const T* a, blasint lda, const T* b, blasint ldb, T beta, T* c, blasint ldc) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if constexpr (std::is_same_v<T, complex<float>>) {
    cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  } else {
    static_assert(std::is_same_v<T, complex<double>>);
    cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
  }
}

template <class T>
void gemv_call(CBLAS_TRANSPOSE ta, blasint m, blasint n, T alpha, const T* a, blasint lda,
               const T* x, blasint incx, T beta, T* y, blasint incy) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemv(CblasRowMajor, ta, m, n, alpha, a, lda, x, incx, beta, y, incy);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemv(CblasRowMajor, ta, m, n, alpha, a, lda, x, incx, beta, y, incy);
  } else if constexpr (std::is_same_v<T, complex<float>>) {
    cblas_cgemv(CblasRowMajor, ta, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  } else {
    cblas_zgemv(CblasRowMajor, ta, m, n, &alpha, a, lda, x, incx, &beta, y, incy);
  }
}

// y (len a.rows, stride incy) = alpha * a @ x + beta * y.
template <class T>
void gemv(const MatDesc& a, const T* x, blasint incx, T alpha, T beta, T* y, blasint incy) {
  BlasLayout la = layout_of(a);
  // Row-major storage of a (NoTrans) is rows x cols; of a^T (Trans) it is cols x rows.
  blasint sm = to_blasint(la.trans == CblasNoTrans ? a.rows : a.cols);
  blasint sn = to_blasint(la.trans == CblasNoTrans ? a.cols : a.rows);
  gemv_call<T>(la.trans, sm, sn, alpha, static_cast<const T*>(a.p), la.ld, x, incx, beta, y, incy);
}

}  // namespace

template <class T>
void blas_gemm(const MatDesc& a, const MatDesc& b, const MatDesc& c, T alpha, T beta) {
  if (row_major_ld(c) < 0) {  // write c^T = b^T a^T instead
    blas_gemm<T>(b.t(), a.t(), c.t(), alpha, beta);
    return;
  }
  int64_t m = c.rows, n = c.cols, k = a.cols;
  T* cp = static_cast<T*>(c.p);
  if (n == 1) {  // matrix @ vector
    blasint incx = vec_inc(k, b.rs), incy = vec_inc(m, c.rs);
    if (incx != 0 && incy != 0) {
      gemv<T>(a, static_cast<const T*>(b.p), incx, alpha, beta, cp, incy);
      return;
    }
  } else if (m == 1) {  // vector @ matrix: c^T = b^T a^T
    blasint incx = vec_inc(k, a.cs), incy = vec_inc(n, c.cs);
    if (incx != 0 && incy != 0) {
      gemv<T>(b.t(), static_cast<const T*>(a.p), incx, alpha, beta, cp, incy);
      return;
    }
  }
  BlasLayout la = layout_of(a), lb = layout_of(b);
  gemm_call<T>(la.trans, lb.trans, to_blasint(m), to_blasint(n), to_blasint(k), alpha,
               static_cast<const T*>(a.p), la.ld, static_cast<const T*>(b.p), lb.ld, beta, cp,
               to_blasint(row_major_ld(c)));
}

template void blas_gemm<float>(const MatDesc&, const MatDesc&, const MatDesc&, float, float);
template void blas_gemm<double>(const MatDesc&, const MatDesc&, const MatDesc&, double, double);
template void blas_gemm<complex<float>>(const MatDesc&, const MatDesc&, const MatDesc&,
                                        complex<float>, complex<float>);
template void blas_gemm<complex<double>>(const MatDesc&, const MatDesc&, const MatDesc&,
                                         complex<double>, complex<double>);

}  // namespace kiln::cpu
