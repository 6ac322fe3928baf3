// GPU kernels of the comparison, min/max, logical and bitwise binary primitives:
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_compare_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  r.set(OpId::Maximum, kCUDA, &gpu_binary<fn::Maximum, kRealMask>);
  r.set(OpId::Minimum, kCUDA, &gpu_binary<fn::Minimum, kRealMask>);
  r.set(OpId::Fmax, kCUDA, &gpu_binary<fn::Fmax, kRealMask>);
  r.set(OpId::Fmin, kCUDA, &gpu_binary<fn::Fmin, kRealMask>);
  r.set(OpId::ClampMin, kCUDA, &gpu_binary<fn::ClampMin, kIntMask | kFloatMask>);
  r.set(OpId::ClampMax, kCUDA, &gpu_binary<fn::ClampMax, kIntMask | kFloatMask>);
  r.set(OpId::Eq, kCUDA, &gpu_binary<fn::Eq, kNumericMask>);
  r.set(OpId::Ne, kCUDA, &gpu_binary<fn::Ne, kNumericMask>);
  r.set(OpId::Lt, kCUDA, &gpu_binary<fn::Lt, kRealMask>);
  r.set(OpId::Le, kCUDA, &gpu_binary<fn::Le, kRealMask>);
  r.set(OpId::Gt, kCUDA, &gpu_binary<fn::Gt, kRealMask>);
  r.set(OpId::Ge, kCUDA, &gpu_binary<fn::Ge, kRealMask>);
  r.set(OpId::LogicalAnd, kCUDA, &gpu_binary<fn::LogicalAnd, kNumericMask>);
  r.set(OpId::LogicalOr, kCUDA, &gpu_binary<fn::LogicalOr, kNumericMask>);
  r.set(OpId::LogicalXor, kCUDA, &gpu_binary<fn::LogicalXor, kNumericMask>);
  r.set(OpId::BitwiseAnd, kCUDA, &gpu_binary<fn::BitwiseAnd, kIB>);
  r.set(OpId::BitwiseOr, kCUDA, &gpu_binary<fn::BitwiseOr, kIB>);
  r.set(OpId::BitwiseXor, kCUDA, &gpu_binary<fn::BitwiseXor, kIB>);
  r.set(OpId::BitwiseLeftShift, kCUDA, &gpu_binary<fn::BitwiseLeftShift, kIntMask>);
  r.set(OpId::BitwiseRightShift, kCUDA, &gpu_binary<fn::BitwiseRightShift, kIntMask>);
}

}  // namespace kiln::gpu
