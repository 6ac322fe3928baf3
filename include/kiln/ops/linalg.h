// Matrix products: matmul, mm, bmm, addmm, addmv, baddbmm, addbmm, dot, vdot, mv, outer, inner,
// tensordot, kron, einsum, linear. Semantics, shapes and errors follow PyTorch.
#pragma once

#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

// Note [Matmul dtypes]: the GEMM family (mm, bmm, addmm, matmul, dot, mv, tensordot, einsum,
// linear, ...) needs all tensor operands of one dtype, as PyTorch does ("expected m1 and m2 to
// have the same dtype"); there is no type promotion. Supported: float16, bfloat16 (multiplied in
// float32 and rounded once), float32, float64, complex64, complex128 (OpenBLAS), and the integer
// dtypes (exact, wrapping like PyTorch). bool and float8 raise "not implemented", as on
// PyTorch's CPU. outer and kron are elementwise products and promote like mul. C++ has no `@`:
// use matmul(a, b) or a.matmul(b).

// The matrix product with PyTorch's rules: 1-D . 1-D is a dot product (0-dim result); 2-D . 1-D a
// matrix-vector product; a 1-D first operand is treated as a row [1, n] and a 1-D second operand
// as a column [n, 1], the added dim being removed afterwards; N-D operands are batches of
// matrices whose batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b);
// [n, m] @ [m, p] -> [n, p].
Tensor mm(const Tensor& a, const Tensor& b);
Tensor& mm_out(Tensor& out, const Tensor& a, const Tensor& b);
// [b, n, m] @ [b, m, p] -> [b, n, p] (no broadcasting).
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor& bmm_out(Tensor& out, const Tensor& a, const Tensor& b);
// beta * input + alpha * (m1 @ m2); input broadcasts to [n, p]. beta == 0 ignores input (NaNs
// in it are not propagated).
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor& addmm_out(Tensor& out, const Tensor& input, const Tensor& m1, const Tensor& m2,
                  const Scalar& beta = 1, const Scalar& alpha = 1);
// beta * input + alpha * (mat @ vec); input broadcasts to [n].
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, const Scalar& beta = 1,
             const Scalar& alpha = 1);
// beta * input + alpha * bmm(b1, b2); input broadcasts to [b, n, p].
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
               const Scalar& alpha = 1);
// beta * input + alpha * sum_i b1[i] @ b2[i]; input broadcasts to [n, p].
Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
              const Scalar& alpha = 1);
// Dot product of two 1-D tensors of equal length (0-dim result).
Tensor dot(const Tensor& a, const Tensor& b);
// As dot, conjugating the first argument (complex).
Tensor vdot(const Tensor& a, const Tensor& b);
// [n, m] @ [m] -> [n].
Tensor mv(const Tensor& mat, const Tensor& vec);
// Outer product of two 1-D tensors: out[i][j] = a[i] * b[j] (promotes like mul). ger is an alias.
Tensor outer(const Tensor& a, const Tensor& b);
Tensor ger(const Tensor& a, const Tensor& b);
// Sum product over the last dims: shape a.shape[:-1] + b.shape[:-1]; a 0-dim operand multiplies.
Tensor inner(const Tensor& a, const Tensor& b);
// Contracts the last `dims` dims of a with the first `dims` of b.
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
// Contracts a's dims_a with b's dims_b (pairwise); result: a's free dims then b's free dims.
// A contracted size of 1 on one side is summed out on the other (as PyTorch).
Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b);
// Kronecker product (operands padded with leading size-1 dims to the same rank).
Tensor kron(const Tensor& a, const Tensor& b);
// Einstein summation, numpy/PyTorch notation: "ij,jk->ik", repeated indices within an operand
// take diagonals ("ii->i"), indices absent from the output are summed ("ii->" is the trace),
// "..." stands for broadcast batch dims, and without "->" the output holds "..." then the
// indices that appear once, in alphabetical order (upper case first). Operands are contracted
// pairwise from left to right through bmm.
Tensor einsum(std::string_view equation, ArrayRef<Tensor> operands);
// input @ weight^T + bias: input [*, in], weight [out, in] (or [in]: output [*]), bias [out] or
// undefined for none.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace kiln
