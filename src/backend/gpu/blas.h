// GPU matrix products through cuBLASLt (hipBLASLt on AMD): the Bmm primitive's GPU kernel and the
// internal matmul-with-epilogue entry (bias, GELU and their gradients) for later fusion.
#pragma once

#include "ops/op.h"

namespace kiln::gpu {

// Note [GPU Bmm]
// out[b] = alpha * op(A[b]) @ B[b] + beta * C[b] (the Bmm contract of kernels/cpu/
// matmul_kernels.cpp) for float16, bfloat16, float32 (TF32 under
// set_float32_matmul_precision("high")), float64, complex64 and complex128, accumulating in
// float32/float64. Row-major operands are read in place as the transposed column-major matrices
// cuBLASLt expects (any batch stride, 0 included, and either unit row or unit column stride);
// others are copied first. Integer matmuls raise an error, as PyTorch's CUDA matmul does. The
// workspace (32 MiB) comes from the caching allocator on the current stream; algorithm choices are
// cached per shape, and for large problems (>= 1e10 flops) the heuristic's first 24 candidates are
// timed once and the fastest kept (not during graph capture).
void bmm_kernel(OpCall& c);

// Note [GPU matmul epilogues]
// matmul_epilogue(a [M, K], b [K, N], bias, e, aux) returns out [M, N] = e(a @ b), computed by one
// cuBLASLt call (float16, bfloat16, float32; float32 accumulation; a and b in any layout bmm
// reads). GELU is the tanh approximation (gelu(x, "tanh")). With g = a @ b:
//   Bias        out = g + bias                       bias [N] (input)
//   Gelu        out = gelu(g)                        aux (if non-null) <- g
//   GeluBias    out = gelu(g + bias)                 aux (if non-null) <- g + bias
//   DGelu       out = g * gelu'(*aux)                *aux [M, N] (input: the saved pre-activation)
//   DGeluBGrad  as DGelu, and bias <- out summed over rows          bias [N] (output)
//   BGradA      out = g, bias <- a summed over its columns (K)      bias [M] (output)
//   BGradB      out = g, bias <- b summed over its rows (K)         bias [N] (output)
// Output vectors are contiguous tensors of the operands' dtype that the caller allocates. Aux
// tensors written here are [M, N] views of rows padded to a multiple of 8 elements (the libraries'
// rule); an aux passed in must have unit column stride and a row stride divisible by 8.
// bmm_kernel uses the Bias epilogue by itself for a bias row broadcast over the rows of one product
// with beta = 1 (linear and addmm with a 1-D bias): cuBLASLt reads the [N] vector instead of a
// materialized [M, N] C. KILN_LT_BIAS_EPILOGUE=0 turns that off (for measurements).
enum class Epilogue { Bias, Gelu, GeluBias, DGelu, DGeluBGrad, BGradA, BGradB };
Tensor matmul_epilogue(const Tensor& a, const Tensor& b, const Tensor& bias, Epilogue e,
                       Tensor* aux = nullptr);

}  // namespace kiln::gpu
