// The GPU kernels of every op family (elementwise, reductions, matmul, ...): one call per family.
#include "backend/gpu/vendor.h"

#include "backend/gpu/blas.h"
#include "dispatch/registry.h"

namespace kiln::gpu {

using ::kiln::detail::KernelRegistry;
void register_unary_math_kernels(KernelRegistry& r);   // unary_math_kernels.cu
void register_unary_math2_kernels(KernelRegistry& r);  // unary_math2_kernels.cu
void register_unary_misc_kernels(KernelRegistry& r);   // unary_misc_kernels.cu
void register_binary_kernels(KernelRegistry& r);       // binary_kernels.cu
void register_compare_kernels(KernelRegistry& r);      // compare_kernels.cu
void register_ternary_kernels(KernelRegistry& r);      // ternary_kernels.cu
void register_reduce_kernels(KernelRegistry& r);       // reduce_kernels.cu

void register_op_kernels(KernelRegistry& r) {
  register_unary_math_kernels(r);
  register_unary_math2_kernels(r);
  register_unary_misc_kernels(r);
  register_binary_kernels(r);
  register_compare_kernels(r);
  register_ternary_kernels(r);
  register_reduce_kernels(r);
  r.set(OpId::Bmm, kCUDA, &bmm_kernel);  // backend/gpu/blas.cu
}

}  // namespace kiln::gpu
