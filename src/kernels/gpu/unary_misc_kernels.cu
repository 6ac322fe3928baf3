// GPU kernels of the other unary primitives (abs, sign, rounding, erf, gelu, isnan, ...):
// one line each, binding a functor (kernels/functors*.h) to the dtypes of its CPU kernel.
#include "kernels/gpu/elementwise.cuh"

#include "dispatch/registry.h"

namespace kiln::gpu {

using namespace ::kiln::detail;  // dtype masks

void register_unary_misc_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  constexpr uint32_t kIB = kIntMask | kBoolMask;
  (void)kFC;
  (void)kIF;
  (void)kIB;
  r.set(OpId::Abs, kCUDA, &gpu_unary<fn::Abs, kNumericMask & ~kBoolMask>);
  r.set(OpId::Neg, kCUDA, &gpu_unary<fn::Neg, kNumericMask & ~kBoolMask>);
  r.set(OpId::Sign, kCUDA, &gpu_unary<fn::Sign, kRealMask>);
  r.set(OpId::Sgn, kCUDA, &gpu_unary<fn::Sgn, kNumericMask>);
  r.set(OpId::Square, kCUDA, &gpu_unary<fn::Square, kNumericMask & ~kBoolMask>);
  r.set(OpId::Logit, kCUDA, &gpu_unary<fn::Logit, kFloatMask>);
  r.set(OpId::Erf, kCUDA, &gpu_unary<fn::Erf, kFloatMask>);
  r.set(OpId::Erfc, kCUDA, &gpu_unary<fn::Erfc, kFloatMask>);
  r.set(OpId::Erfinv, kCUDA, &gpu_unary<fn::Erfinv, kFloatMask>);
  r.set(OpId::Lgamma, kCUDA, &gpu_unary<fn::Lgamma, kFloatMask>);
  r.set(OpId::Digamma, kCUDA, &gpu_unary<fn::Digamma, kFloatMask>);
  r.set(OpId::Floor, kCUDA, &gpu_unary<fn::Floor, kIF>);
  r.set(OpId::Ceil, kCUDA, &gpu_unary<fn::Ceil, kIF>);
  r.set(OpId::Round, kCUDA, &gpu_unary<fn::Round, kIF>);
  r.set(OpId::RoundDecimals, kCUDA, &gpu_unary<fn::RoundDecimals, kFloatMask>);
  r.set(OpId::Trunc, kCUDA, &gpu_unary<fn::Trunc, kIF>);
  r.set(OpId::Frac, kCUDA, &gpu_unary<fn::Frac, kFloatMask>);
  r.set(OpId::Relu, kCUDA, &gpu_unary<fn::Relu, kIF, true>);
  r.set(OpId::Gelu, kCUDA, &gpu_unary<fn::Gelu, kFloatMask, true>);
  r.set(OpId::GeluTanh, kCUDA, &gpu_unary<fn::GeluTanh, kFloatMask, true>);
  r.set(OpId::Softplus, kCUDA, &gpu_unary<fn::Softplus, kFloatMask>);
  r.set(OpId::Isnan, kCUDA, &gpu_unary<fn::Isnan, kNumericMask>);
  r.set(OpId::Isinf, kCUDA, &gpu_unary<fn::Isinf, kNumericMask>);
  r.set(OpId::Isfinite, kCUDA, &gpu_unary<fn::Isfinite, kNumericMask>);
  r.set(OpId::Isposinf, kCUDA, &gpu_unary<fn::Isposinf, kRealMask>);
  r.set(OpId::Isneginf, kCUDA, &gpu_unary<fn::Isneginf, kRealMask>);
  r.set(OpId::NanToNum, kCUDA, &gpu_unary<fn::NanToNum, kNumericMask>);
  r.set(OpId::LogicalNot, kCUDA, &gpu_unary<fn::LogicalNot, kNumericMask>);
  r.set(OpId::BitwiseNot, kCUDA, &gpu_unary<fn::BitwiseNot, kIntMask | kBoolMask>);
  r.set(OpId::ConjPhysical, kCUDA, &gpu_unary<fn::Conj, kNumericMask>);
}

}  // namespace kiln::gpu
