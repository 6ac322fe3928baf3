// GPU kernels of the unary math primitives over real and complex floats (exp ... atanh):
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_unary_math_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  r.set(OpId::Exp, kCUDA, &gpu_unary<fn::Exp, kFC>);
  r.set(OpId::Exp2, kCUDA, &gpu_unary<fn::Exp2, kFC>);
  r.set(OpId::Expm1, kCUDA, &gpu_unary<fn::Expm1, kFC>);
  r.set(OpId::Log, kCUDA, &gpu_unary<fn::Log, kFC>);
  r.set(OpId::Log2, kCUDA, &gpu_unary<fn::Log2, kFC>);
  r.set(OpId::Log10, kCUDA, &gpu_unary<fn::Log10, kFC>);
  r.set(OpId::Log1p, kCUDA, &gpu_unary<fn::Log1p, kFC>);
  r.set(OpId::Sqrt, kCUDA, &gpu_unary<fn::Sqrt, kFC>);
  r.set(OpId::Rsqrt, kCUDA, &gpu_unary<fn::Rsqrt, kFC>);
  r.set(OpId::Reciprocal, kCUDA, &gpu_unary<fn::Reciprocal, kFC>);
  r.set(OpId::Sin, kCUDA, &gpu_unary<fn::Sin, kFC>);
  r.set(OpId::Cos, kCUDA, &gpu_unary<fn::Cos, kFC>);
  r.set(OpId::Tan, kCUDA, &gpu_unary<fn::Tan, kFC>);
  r.set(OpId::Asin, kCUDA, &gpu_unary<fn::Asin, kFC>);
}

}  // namespace kiln::gpu
