// CPU kernels of amax, amin, max/min over a dim (values and int64 indices), argmax and argmin.
// NaN is the extreme of both; ties and repeated NaNs give the first index.
#include "core/dispatch_dtype.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/cpu/reduce_ops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

namespace {

template <bool kMax>
void extreme_kernel(OpCall& c) {
  dispatch_types<kRealMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    KILN_ASSERT(c.out[0].dtype() == dtype_of<T>(), "amax/amin output dtype mismatch");
    red::ExtremeOp<T, kMax> op;
    op.out = static_cast<T*>(c.out[0].data_ptr());
    red::reduce(op, c, 1);
  });
}

// out = (values, indices) when kValues, else (indices).
template <bool kMax, bool kValues>
void arg_kernel(OpCall& c) {
  dispatch_types<kRealMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::ArgOp<T, kMax> op;
    if constexpr (kValues) {
      KILN_ASSERT(c.out[0].dtype() == dtype_of<T>() && c.out[1].dtype() == DType::Int64,
                  "max/min.dim output dtypes");
      op.values = static_cast<T*>(c.out[0].data_ptr());
      op.indices = static_cast<int64_t*>(c.out[1].data_ptr());
    } else {
      KILN_ASSERT(c.out[0].dtype() == DType::Int64, "argmax/argmin output dtype");
      op.indices = static_cast<int64_t*>(c.out[0].data_ptr());
    }
    red::reduce(op, c, kValues ? 2 : 1);
  });
}

}  // namespace

void register_reduce_minmax_kernels(KernelRegistry& r) {
  r.set(OpId::Amax, kCPU, &extreme_kernel<true>);
  r.set(OpId::Amin, kCPU, &extreme_kernel<false>);
  r.set(OpId::MaxDim, kCPU, &arg_kernel<true, true>);
  r.set(OpId::MinDim, kCPU, &arg_kernel<false, true>);
  r.set(OpId::ArgMax, kCPU, &arg_kernel<true, false>);
  r.set(OpId::ArgMin, kCPU, &arg_kernel<false, false>);
}

}  // namespace kiln::cpu
