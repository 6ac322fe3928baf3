// CPU kernels of the comparison, logical, bitwise and min/max binary primitives: one line each,
// binding a functor (kernels/functors_binary.h) to its dtypes.
#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

void register_compare_kernels(KernelRegistry& r) {
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  r.set(OpId::Maximum, kCPU, &binary_kernel<fn::Maximum, kRealMask>);
  r.set(OpId::Minimum, kCPU, &binary_kernel<fn::Minimum, kRealMask>);
  r.set(OpId::Fmax, kCPU, &binary_kernel<fn::Fmax, kRealMask>);
  r.set(OpId::Fmin, kCPU, &binary_kernel<fn::Fmin, kRealMask>);
  r.set(OpId::ClampMin, kCPU, &binary_kernel<fn::ClampMin, kIntMask | kFloatMask>);
  r.set(OpId::ClampMax, kCPU, &binary_kernel<fn::ClampMax, kIntMask | kFloatMask>);
  r.set(OpId::Eq, kCPU, &binary_kernel<fn::Eq, kNumericMask>);
  r.set(OpId::Ne, kCPU, &binary_kernel<fn::Ne, kNumericMask>);
  r.set(OpId::Lt, kCPU, &binary_kernel<fn::Lt, kRealMask>);
  r.set(OpId::Le, kCPU, &binary_kernel<fn::Le, kRealMask>);
  r.set(OpId::Gt, kCPU, &binary_kernel<fn::Gt, kRealMask>);
  r.set(OpId::Ge, kCPU, &binary_kernel<fn::Ge, kRealMask>);
  r.set(OpId::LogicalAnd, kCPU, &binary_kernel<fn::LogicalAnd, kNumericMask>);
  r.set(OpId::LogicalOr, kCPU, &binary_kernel<fn::LogicalOr, kNumericMask>);
  r.set(OpId::LogicalXor, kCPU, &binary_kernel<fn::LogicalXor, kNumericMask>);
  r.set(OpId::BitwiseAnd, kCPU, &binary_kernel<fn::BitwiseAnd, kIB>);
  r.set(OpId::BitwiseOr, kCPU, &binary_kernel<fn::BitwiseOr, kIB>);
  r.set(OpId::BitwiseXor, kCPU, &binary_kernel<fn::BitwiseXor, kIB>);
  r.set(OpId::BitwiseLeftShift, kCPU, &binary_kernel<fn::BitwiseLeftShift, kIntMask>);
  r.set(OpId::BitwiseRightShift, kCPU, &binary_kernel<fn::BitwiseRightShift, kIntMask>);
}

}  // namespace kiln::cpu
