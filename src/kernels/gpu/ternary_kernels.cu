// GPU kernels of the ternary primitives (where, clamp, lerp, addcmul, addcdiv):
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_ternary_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  r.set(OpId::Where, kCUDA, &gpu_ternary<fn::Where, kNumericMask, bool>);
  r.set(OpId::Clamp, kCUDA, &gpu_ternary<fn::Clamp, kIntMask | kFloatMask>);
  r.set(OpId::Lerp, kCUDA, &gpu_ternary<fn::Lerp, kFC>);
  r.set(OpId::Addcmul, kCUDA, &gpu_ternary<fn::Addcmul, kNumericMask & ~kBoolMask>);
  r.set(OpId::Addcdiv, kCUDA, &gpu_ternary<fn::Addcdiv, kFC>);
}

}  // namespace kiln::gpu
