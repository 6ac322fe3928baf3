// CPU kernels of var_mean/std_mean (out = (var or std, mean); s0 = correction), norm
// (s0 = p, any real p including +-inf) and logsumexp.
#include <cmath>

#include "core/dispatch_dtype.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/cpu/reduce_stats_ops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

namespace {

template <bool kSqrt>
void var_mean_kernel(OpCall& c) {
  dispatch_types<kFloatMask | kComplexMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::WelfordOp<T> op;
    using Out0 = typename red::WelfordOp<T>::Out0;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<Out0>() && c.out[1].dtype() == dtype_of<T>(),
                "var_mean output dtypes");
    op.var = static_cast<Out0*>(c.out[0].data_ptr());
    op.mean = static_cast<T*>(c.out[1].data_ptr());
    op.correction = c.attrs.s0.to<double>();
    op.take_sqrt = kSqrt;
    red::reduce(op, c, 2);
  });
}

template <class T, red::NormKind K>
void norm_run(OpCall& c, double p) {
  red::NormOp<T, K> op;
  using Out = typename red::NormOp<T, K>::Out;
  KILN_ASSERT(c.out[0].dtype() == dtype_of<Out>(), "norm output dtype");
  op.out = static_cast<Out*>(c.out[0].data_ptr());
  op.p = p;
  red::reduce(op, c, 1);
}

void norm_kernel(OpCall& c) {
  const double p = c.attrs.s0.to<double>();
  dispatch_types<kFloatMask | kComplexMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    using K = red::NormKind;
    if (p == 0)
      norm_run<T, K::Zero>(c, p);
    else if (p == 1)
      norm_run<T, K::One>(c, p);
    else if (p == 2)
      norm_run<T, K::Two>(c, p);
    else if (std::isinf(p) && p > 0)
      norm_run<T, K::Inf>(c, p);
    else if (std::isinf(p))
      norm_run<T, K::NegInf>(c, p);
    else
      norm_run<T, K::General>(c, p);
  });
}

void logsumexp_kernel(OpCall& c) {
  dispatch_types<kFloatMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    KILN_ASSERT(c.out[0].dtype() == dtype_of<T>(), "logsumexp output dtype");
    red::LseOp<T> op;
    op.out = static_cast<T*>(c.out[0].data_ptr());
    red::reduce(op, c, 1);
  });
}

}  // namespace

void register_reduce_stats_kernels(KernelRegistry& r) {
  r.set(OpId::VarMean, kCPU, &var_mean_kernel<false>);
  r.set(OpId::StdMean, kCPU, &var_mean_kernel<true>);
  r.set(OpId::Norm, kCPU, &norm_kernel);
  r.set(OpId::LogSumExp, kCPU, &logsumexp_kernel);
}

}  // namespace kiln::cpu
