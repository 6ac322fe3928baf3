// CPU kernels of sum, mean, nansum, nanmean and prod. The front end (ops/reduce.cpp) casts the
// input to the requested dtype; the output is int64 for bool/integer inputs, else the input's.
#include "core/dispatch_dtype.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/cpu/reduce_ops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

namespace {

template <class Out>
Out* out_ptr(const OpCall& c, int i = 0) {
  KILN_ASSERT(c.out[i].dtype() == dtype_of<Out>(), "reduction output dtype mismatch");
  return static_cast<Out*>(c.out[i].data_ptr());
}

template <bool kNan, bool kMean>
void sum_kernel(OpCall& c) {
  constexpr uint32_t mask = kMean ? (kFloatMask | kComplexMask) : (kNan ? kRealMask : kNumericMask);
  dispatch_types<mask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::SumOp<T, kNan && !std::is_integral_v<T>, kMean> op;
    op.out = out_ptr<typename decltype(op)::Out>(c);
    op.count = reduced_count(c);
    red::reduce(op, c, 1);
  });
}

void nanmean_kernel(OpCall& c) {
  dispatch_types<kFloatMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::NanMeanOp<T> op;
    op.out = out_ptr<T>(c);
    red::reduce(op, c, 1);
  });
}

void prod_kernel(OpCall& c) {
  dispatch_types<kNumericMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::ProdOp<T> op;
    op.out = out_ptr<typename decltype(op)::Out>(c);
    red::reduce(op, c, 1);
  });
}

}  // namespace

void register_reduce_sum_kernels(KernelRegistry& r) {
  r.set(OpId::Sum, kCPU, &sum_kernel<false, false>);
  r.set(OpId::Mean, kCPU, &sum_kernel<false, true>);
  r.set(OpId::NanSum, kCPU, &sum_kernel<true, false>);
  r.set(OpId::NanMean, kCPU, &nanmean_kernel);
  r.set(OpId::Prod, kCPU, &prod_kernel);
}

}  // namespace kiln::cpu
