// GPU kernels of the binary arithmetic primitives (add ... copysign):
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"
#include "kernels/gpu/binary_mixed.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_binary_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  // Add, Sub, Mul: float32 with a bfloat16/float16 operand first tries the mixed-precision
  // kernels (Note [Mixed-precision binary kernels]).
  r.set(OpId::Add, kCUDA, [](OpCall& c) {
    if (!gpu_binary_mixed(OpId::Add, c)) gpu_binary<fn::Add, kNumericMask, true>(c);
  });
  r.set(OpId::Sub, kCUDA, [](OpCall& c) {
    if (!gpu_binary_mixed(OpId::Sub, c)) gpu_binary<fn::Sub, kNumericMask & ~kBoolMask, true>(c);
  });
  r.set(OpId::Mul, kCUDA, [](OpCall& c) {
    if (!gpu_binary_mixed(OpId::Mul, c)) gpu_binary<fn::Mul, kNumericMask, true>(c);
  });
  r.set(OpId::Div, kCUDA, &gpu_binary<fn::Div, kFloatMask | kComplexMask, true>);
  r.set(OpId::DivTrunc, kCUDA, &gpu_binary<fn::DivTrunc, kIF>);
  r.set(OpId::DivFloor, kCUDA, &gpu_binary<fn::DivFloor, kIF>);
  r.set(OpId::Remainder, kCUDA, &gpu_binary<fn::Remainder, kIF>);
  r.set(OpId::Fmod, kCUDA, &gpu_binary<fn::Fmod, kIF>);
  r.set(OpId::Pow, kCUDA, &gpu_binary<fn::Pow, kNumericMask & ~kBoolMask>);
  r.set(OpId::Atan2, kCUDA, &gpu_binary<fn::Atan2, kFloatMask>);
  r.set(OpId::Hypot, kCUDA, &gpu_binary<fn::Hypot, kFloatMask>);
  r.set(OpId::Copysign, kCUDA, &gpu_binary<fn::Copysign, kFloatMask>);
}

}  // namespace kiln::gpu
