// GPU kernels of the remaining unary math primitives over real and complex floats:
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_unary_math2_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  r.set(OpId::Acos, kCUDA, &gpu_unary<fn::Acos, kFC>);
  r.set(OpId::Atan, kCUDA, &gpu_unary<fn::Atan, kFC>);
  r.set(OpId::Sinh, kCUDA, &gpu_unary<fn::Sinh, kFC>);
  r.set(OpId::Cosh, kCUDA, &gpu_unary<fn::Cosh, kFC>);
  r.set(OpId::Tanh, kCUDA, &gpu_unary<fn::Tanh, kFC>);
  r.set(OpId::Asinh, kCUDA, &gpu_unary<fn::Asinh, kFC>);
  r.set(OpId::Acosh, kCUDA, &gpu_unary<fn::Acosh, kFC>);
  r.set(OpId::Atanh, kCUDA, &gpu_unary<fn::Atanh, kFC>);
  r.set(OpId::Sigmoid, kCUDA, &gpu_unary<fn::Sigmoid, kFC>);
  r.set(OpId::Silu, kCUDA, &gpu_unary<fn::Silu, kFC, true>);
  r.set(OpId::Angle, kCUDA, &gpu_unary<fn::Angle, kFC>);
}

}  // namespace kiln::gpu
