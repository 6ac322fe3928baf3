// The mixed-precision fast path of the GPU add / sub / mul kernels (binary_mixed_kernels.cu):
// float32 with bfloat16/float16 operands into float32, without casting an input first.
#pragma once

#include "ops/op.h"

namespace kiln::gpu {

// Runs c (an Add, Sub or Mul call) when its operands qualify (Note [Mixed-precision binary
// kernels]); false, with nothing launched, otherwise.
bool gpu_binary_mixed(OpId op, OpCall& c);

}  // namespace kiln::gpu
