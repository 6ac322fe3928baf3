// CPU reduction kernels: the family's registration, and any/all (bool results; uint8 stays
// uint8 as in PyTorch).
#include "kernels/cpu/reduce_kernels.h"

#include "core/dispatch_dtype.h"
#include "kernels/cpu/reduce_ops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

int64_t reduced_count(const OpCall& c) {
  const Tensor& x = c.in[0];
  int64_t n = 1;
  for (int64_t d : c.attrs.ints)
    if (x.dim() > 0) n *= x.sizes()[d];
  return n;
}

namespace {

template <bool kAll>
void any_all_kernel(OpCall& c) {
  dispatch_types<kNumericMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    if (c.out[0].dtype() == DType::UInt8) {
      red::AnyAllOp<T, kAll, uint8_t> op;
      op.out = static_cast<uint8_t*>(c.out[0].data_ptr());
      red::reduce(op, c, 1);
    } else {
      KILN_ASSERT(c.out[0].dtype() == DType::Bool, "any/all output must be bool or uint8");
      red::AnyAllOp<T, kAll, bool> op;
      op.out = static_cast<bool*>(c.out[0].data_ptr());
      red::reduce(op, c, 1);
    }
  });
}

}  // namespace

void register_reduce_kernels(KernelRegistry& r) {
  register_reduce_sum_kernels(r);
  register_reduce_minmax_kernels(r);
  register_reduce_stats_kernels(r);
  r.set(OpId::Any, kCPU, &any_all_kernel<false>);
  r.set(OpId::All, kCPU, &any_all_kernel<true>);
}

}  // namespace kiln::cpu
