// infer(): output shapes/dtypes/devices of an op call, with the errors for bad input.
#pragma once

#include "ops/op.h"

namespace kiln::detail {

// The infer function for an op kind (ops of kind Custom-infer set their own in OpDef).
InferFn default_infer(OpKind kind);

// Unary/Binary/Ternary: broadcasting, result_type by the op's DTypeRule, device checks,
// output allocation (or checks of a provided out=/in-place tensor).
void infer_elementwise(OpCall& c);

// Broadcast shape of two shapes (PyTorch rules); throws naming op and both shapes.
DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b);

// The device all of c.in share; 0-dim CPU tensors count as scalars and may sit beside cuda ones.
Device common_device(const OpCall& c);

// Allocates an output (symbolic while tracing). `like` (may be undefined) lends its stride
// order when it is dense and non-overlapping and has the same shape.
Tensor make_output(IntArrayRef shape, DType dtype, Device device, const Tensor& like = Tensor());

// Checks a caller-provided out/in-place tensor: shape must match (an empty out= tensor is resized)
// and the computed dtype must be castable to it. Returns the tensor the kernel should write:
// `out` itself, or a temporary of `dtype` that run() copies into `out` afterwards.
Tensor check_provided_out(OpCall& c, Tensor& out, IntArrayRef shape, DType dtype, Device device);

}  // namespace kiln::detail
