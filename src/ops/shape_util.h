// Private helpers shared by the shape / scan front ends (src/ops/shape*.cpp, scan*.cpp, sort*.cpp).
#pragma once

#include <vector>

#include "kiln/tensor.h"
#include "ops/reduce_util.h"  // detail::check_defined

namespace kiln::detail {

// Throws naming op unless all tensors are on the first one's device.
void check_same_device(const std::vector<Tensor>& ts, const char* op);
// Throws naming op and the position of the first undefined tensor.
void check_defined_list(const std::vector<Tensor>& ts, const char* op);
// x.reshape(shape), also for 0-dim x (Tensor::reshape of a 0-dim tensor fails in view.cpp today).
inline Tensor reshape_any(const Tensor& x, IntArrayRef shape) {
  return x.dim() == 0 ? x.unsqueeze(0).reshape(shape) : x.reshape(shape);
}

}  // namespace kiln::detail
