// CPU kernels of the elementwise primitives: one line each, binding a functor to its dtypes.
#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

void register_elementwise_kernels(KernelRegistry& r) {
  r.set(OpId::Abs, kCPU, &unary_kernel<fn::Abs, kNumericMask>);
  r.set(OpId::Neg, kCPU, &unary_kernel<fn::Neg, kNumericMask & ~kBoolMask>);
  r.set(OpId::Exp, kCPU, &unary_kernel<fn::Exp, kFloatMask | kComplexMask>);
  r.set(OpId::Add, kCPU, &binary_kernel<fn::Add, kNumericMask>);
  r.set(OpId::Sub, kCPU, &binary_kernel<fn::Sub, kNumericMask & ~kBoolMask>);
  r.set(OpId::Mul, kCPU, &binary_kernel<fn::Mul, kNumericMask>);
  r.set(OpId::Div, kCPU, &binary_kernel<fn::Div, kFloatMask | kComplexMask>);
}

}  // namespace kiln::cpu
