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
void register_index_kernels(KernelRegistry& r);        // index_kernels.cu
void register_shape_kernels(KernelRegistry& r);        // shape_kernels.cu
void register_scan_kernels(KernelRegistry& r);         // scan_kernels.cu
void register_sort_kernels(KernelRegistry& r);         // sort_kernels.cu
void register_nn_kernels(KernelRegistry& r);           // nn_kernels.cu
void register_conv_kernels(KernelRegistry& r);         // conv_kernels.cu
void register_attention_kernels(KernelRegistry& r);    // attention/attention_kernels.cu
void register_foreach_kernels(KernelRegistry& r);      // foreach_kernels.cu (optim)
void register_linear_gelu_hooks();                     // linear_gelu.cu (nn linear_gelu)

void register_op_kernels(KernelRegistry& r) {
  register_unary_math_kernels(r);
  register_unary_math2_kernels(r);
  register_unary_misc_kernels(r);
  register_binary_kernels(r);
  register_compare_kernels(r);
  register_ternary_kernels(r);
  register_reduce_kernels(r);
  register_index_kernels(r);
  register_shape_kernels(r);
  register_scan_kernels(r);
  register_sort_kernels(r);
  register_nn_kernels(r);
  register_conv_kernels(r);
  register_attention_kernels(r);
  register_foreach_kernels(r);
  register_linear_gelu_hooks();
  r.set(OpId::Bmm, kCUDA, &bmm_kernel);  // backend/gpu/blas.cu
}

}  // namespace kiln::gpu
