// Global settings of GPU math, as in PyTorch: the float32 matmul precision (TF32 tensor cores).
#pragma once

#include <string>

namespace kiln {

// "highest" (the default: float32 matmuls on the GPU compute in float32), "high" (TF32 tensor
// cores, about 10 mantissa bits per product, float32 accumulation) or "medium" (kiln treats it as
// "high"; PyTorch may use bfloat16 there). Other strings throw kiln::Error. CPU matmuls are
// unaffected. Same names as torch.set_float32_matmul_precision.
void set_float32_matmul_precision(const std::string& precision);
std::string get_float32_matmul_precision();

namespace detail {
// True when float32 GPU matmuls may use TF32 (precision "high" or "medium").
bool float32_matmul_allows_tf32();
}  // namespace detail

}  // namespace kiln
