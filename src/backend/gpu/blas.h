// GPU matrix products through cuBLASLt (hipBLASLt on AMD): the Bmm primitive's GPU kernel.
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

}  // namespace kiln::gpu
