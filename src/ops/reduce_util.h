// Shared pieces of the reduction front ends: dim wrapping and output shapes, output allocation
// (out=, dtype copy-back), the empty-dim check, and the call builder.
#pragma once

#include "ops/op.h"

namespace kiln::detail {

// Reduced dims (wrapped, unique, ascending; all dims when `dim` is empty; none for a 0-dim
// input, whose dims 0 and -1 are accepted) and the output shape.
struct ReduceDims {
  DimVector dims;
  DimVector shape;
};
ReduceDims reduce_dims(const Tensor& x, IntArrayRef dim, bool keepdim, const char* op);

// Throws PyTorch's error when a reduced dim has size 0 (ops without an identity).
void check_nonempty(const Tensor& x, IntArrayRef dims, const char* op);
// Number of elements each output reduces.
int64_t reduced_numel(const Tensor& x, IntArrayRef dims);

// Appends an output to c: the caller's `provided` tensor (shape-checked, resized when empty,
// through a temporary of `natural` plus a copy-back when its dtype differs), else a new tensor
// of `final_dtype` (through a temporary when it differs from the kernel's `natural` dtype).
void add_reduce_output(OpCall& c, Tensor* provided, IntArrayRef shape, DType natural,
                       DType final_dtype);

// An OpCall for primitive `id` reducing x over rd.
OpCall reduce_call(OpId id, const Tensor& x, const ReduceDims& rd, bool keepdim);

void check_defined(const Tensor& x, const char* op);

}  // namespace kiln::detail
