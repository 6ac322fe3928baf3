// CPU kernels of the nn op family (src/ops/defs/nn.def): one register function per kernel file,
// all called by register_nn_kernels (nn_kernels.cpp), and small helpers they share.
#pragma once

#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "ops/op.h"

namespace kiln::cpu {

void register_nn_norm_kernels(detail::KernelRegistry& r);  // nn_norm_kernels.cpp
void register_nn_loss_kernels(detail::KernelRegistry& r);  // nn_loss_kernels.cpp
void register_nn_conv_kernels(detail::KernelRegistry& r);  // nn_conv_kernels.cpp
void register_nn_pool_kernels(detail::KernelRegistry& r);  // nn_pool_kernels.cpp
void register_nn_fused_kernels(
    detail::KernelRegistry& r);  // nn_fused_kernels.cpp (cross_entropy_loss, native_dropout)

// Typed data pointer of a tensor (its storage offset included).
template <class T>
inline T* nn_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

// Rows per parallel chunk so that a chunk holds about kGrainSize elements.
inline int64_t nn_row_grain(int64_t row_len) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, row_len));
}

}  // namespace kiln::cpu
