// The CPU column of the kernel registry: every op family's register function, called once.
#include "dispatch/registry.h"

namespace kiln::cpu {
void register_copy_kernels(detail::KernelRegistry& r);
void register_elementwise_kernels(detail::KernelRegistry& r);
void register_unary_kernels(detail::KernelRegistry& r);
void register_compare_kernels(detail::KernelRegistry& r);
void register_ternary_kernels(detail::KernelRegistry& r);
void register_reduce_kernels(detail::KernelRegistry& r);
void register_matmul_kernels(detail::KernelRegistry& r);
void register_random_kernels(detail::KernelRegistry& r);
void register_index_kernels(detail::KernelRegistry& r);
void register_shape_kernels(detail::KernelRegistry& r);
void register_scan_kernels(detail::KernelRegistry& r);
void register_nn_kernels(detail::KernelRegistry& r);
void register_attention_kernels(detail::KernelRegistry& r);
void register_foreach_kernels(detail::KernelRegistry& r);  // multi-tensor kernels (optim)
}  // namespace kiln::cpu

namespace kiln::detail {

void register_cpu_kernels(KernelRegistry& r) {
  cpu::register_copy_kernels(r);
  cpu::register_elementwise_kernels(r);
  cpu::register_unary_kernels(r);
  cpu::register_compare_kernels(r);
  cpu::register_ternary_kernels(r);
  cpu::register_reduce_kernels(r);
  cpu::register_matmul_kernels(r);
  cpu::register_random_kernels(r);
  cpu::register_index_kernels(r);
  cpu::register_shape_kernels(r);
  cpu::register_scan_kernels(r);
  cpu::register_nn_kernels(r);
  cpu::register_attention_kernels(r);
  cpu::register_foreach_kernels(r);
}

}  // namespace kiln::detail
