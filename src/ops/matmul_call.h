// Internal helpers of the matmul family: operand checks, the Bmm primitive call, and the
// building blocks (mm/mv/matmul with the caller's op name, sums through Bmm) shared by the
// composites in matmul.cpp, matmul_products.cpp and einsum.cpp.
#pragma once

#include "kiln/tensor.h"

namespace kiln::detail {

// Rejects dtypes the GEMM family does not implement (bool, float8), as PyTorch's CPU does.
void check_gemm_dtype(const char* op, DType d);
// Both defined, on one device, of one dtype (no promotion: PyTorch's rule), and supported.
void check_gemm_operands(const char* op, const Tensor& a, const Tensor& b);

// Runs the Bmm primitive: alpha * a @ b + beta * c over a [B, M, K], b [B, K, N]; c (undefined
// for none) must broadcast to [B, M, N]. `out` undefined: a new contiguous [B, M, N] tensor;
// else the caller's (checked) tensor, which may be c itself when `inplace`.
Tensor run_bmm(const Tensor& a, const Tensor& b, const Tensor& c = Tensor(), const Scalar& beta = 0,
               const Scalar& alpha = 1, const Tensor& out = Tensor(), bool inplace = false,
               bool conj_a = false);

// Checks a caller's out= tensor (dtype, device, no internal overlap) and resizes it when empty.
void prepare_out(const char* op, Tensor& out, IntArrayRef shape, DType dtype, Device device);

// beta * input + alpha * a @ b for matrices, errors named `op` (input undefined: none).
Tensor addmm_core(const char* op, const Tensor& input, const Tensor& a, const Tensor& b,
                  const Scalar& beta, const Scalar& alpha, Tensor* out = nullptr,
                  bool inplace = false);
// beta * input + alpha * mat @ vec.
Tensor addmv_core(const char* op, const Tensor& input, const Tensor& mat, const Tensor& vec,
                  const Scalar& beta, const Scalar& alpha, Tensor* out = nullptr,
                  bool inplace = false);
// matmul with errors named `op`.
Tensor matmul_core(const char* op, const Tensor& a, const Tensor& b);

// Sum of t over `dims` (distinct, wrapped), kept as size-1 dims; computed by Bmm with a vector
// of ones, so it needs no reduction kernel.
Tensor sum_keepdim(const char* op, const Tensor& t, IntArrayRef dims);

// Product of sizes.
int64_t prod(IntArrayRef s);

// t reshaped to `shape` where each new dim merges consecutive dims of t: a view when the strides
// allow it (expanded stride-0 batch dims included), else a row-major contiguous copy.
Tensor merge_reshape(const Tensor& t, IntArrayRef shape);

}  // namespace kiln::detail
