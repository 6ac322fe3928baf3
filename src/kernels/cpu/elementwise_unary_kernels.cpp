// CPU kernels of the unary elementwise primitives: one line each, binding a functor
// (kernels/functors_unary.h) to the dtypes it computes in.
#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

void register_unary_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  r.set(OpId::Abs, kCPU, &unary_kernel<fn::Abs, kNumericMask & ~kBoolMask>);
  r.set(OpId::Neg, kCPU, &unary_kernel<fn::Neg, kNumericMask & ~kBoolMask>);
  r.set(OpId::Sign, kCPU, &unary_kernel<fn::Sign, kRealMask>);
  r.set(OpId::Sgn, kCPU, &unary_kernel<fn::Sgn, kNumericMask>);
  r.set(OpId::Exp, kCPU, &unary_kernel<fn::Exp, kFC>);
  r.set(OpId::Exp2, kCPU, &unary_kernel<fn::Exp2, kFC>);
  r.set(OpId::Expm1, kCPU, &unary_kernel<fn::Expm1, kFC>);
  r.set(OpId::Log, kCPU, &unary_kernel<fn::Log, kFC>);
  r.set(OpId::Log2, kCPU, &unary_kernel<fn::Log2, kFC>);
  r.set(OpId::Log10, kCPU, &unary_kernel<fn::Log10, kFC>);
  r.set(OpId::Log1p, kCPU, &unary_kernel<fn::Log1p, kFC>);
  r.set(OpId::Sqrt, kCPU, &unary_kernel<fn::Sqrt, kFC>);
  r.set(OpId::Rsqrt, kCPU, &unary_kernel<fn::Rsqrt, kFC>);
  r.set(OpId::Square, kCPU, &unary_kernel<fn::Square, kNumericMask & ~kBoolMask>);
  r.set(OpId::Reciprocal, kCPU, &unary_kernel<fn::Reciprocal, kFC>);
  r.set(OpId::Sin, kCPU, &unary_kernel<fn::Sin, kFC>);
  r.set(OpId::Cos, kCPU, &unary_kernel<fn::Cos, kFC>);
  r.set(OpId::Tan, kCPU, &unary_kernel<fn::Tan, kFC>);
  r.set(OpId::Asin, kCPU, &unary_kernel<fn::Asin, kFC>);
  r.set(OpId::Acos, kCPU, &unary_kernel<fn::Acos, kFC>);
  r.set(OpId::Atan, kCPU, &unary_kernel<fn::Atan, kFC>);
  r.set(OpId::Sinh, kCPU, &unary_kernel<fn::Sinh, kFC>);
  r.set(OpId::Cosh, kCPU, &unary_kernel<fn::Cosh, kFC>);
  r.set(OpId::Tanh, kCPU, &unary_kernel<fn::Tanh, kFC>);
  r.set(OpId::Asinh, kCPU, &unary_kernel<fn::Asinh, kFC>);
  r.set(OpId::Acosh, kCPU, &unary_kernel<fn::Acosh, kFC>);
  r.set(OpId::Atanh, kCPU, &unary_kernel<fn::Atanh, kFC>);
  r.set(OpId::Sigmoid, kCPU, &unary_kernel<fn::Sigmoid, kFC>);
  r.set(OpId::Logit, kCPU, &unary_kernel<fn::Logit, kFloatMask>);
  r.set(OpId::Erf, kCPU, &unary_kernel<fn::Erf, kFloatMask>);
  r.set(OpId::Erfc, kCPU, &unary_kernel<fn::Erfc, kFloatMask>);
  r.set(OpId::Erfinv, kCPU, &unary_kernel<fn::Erfinv, kFloatMask>);
  r.set(OpId::Lgamma, kCPU, &unary_kernel<fn::Lgamma, kFloatMask>);
  r.set(OpId::Digamma, kCPU, &unary_kernel<fn::Digamma, kFloatMask>);
  r.set(OpId::Floor, kCPU, &unary_kernel<fn::Floor, kIF>);
  r.set(OpId::Ceil, kCPU, &unary_kernel<fn::Ceil, kIF>);
  r.set(OpId::Round, kCPU, &unary_kernel<fn::Round, kIF>);
  r.set(OpId::RoundDecimals, kCPU, &unary_kernel<fn::RoundDecimals, kFloatMask>);
  r.set(OpId::Trunc, kCPU, &unary_kernel<fn::Trunc, kIF>);
  r.set(OpId::Frac, kCPU, &unary_kernel<fn::Frac, kFloatMask>);
  r.set(OpId::Relu, kCPU, &unary_kernel<fn::Relu, kIF>);
  r.set(OpId::Gelu, kCPU, &unary_kernel<fn::Gelu, kFloatMask>);
  r.set(OpId::GeluTanh, kCPU, &unary_kernel<fn::GeluTanh, kFloatMask>);
  r.set(OpId::Silu, kCPU, &unary_kernel<fn::Silu, kFC>);
  r.set(OpId::Softplus, kCPU, &unary_kernel<fn::Softplus, kFloatMask>);
  r.set(OpId::Isnan, kCPU, &unary_kernel<fn::Isnan, kNumericMask>);
  r.set(OpId::Isinf, kCPU, &unary_kernel<fn::Isinf, kNumericMask>);
  r.set(OpId::Isfinite, kCPU, &unary_kernel<fn::Isfinite, kNumericMask>);
  r.set(OpId::Isposinf, kCPU, &unary_kernel<fn::Isposinf, kRealMask>);
  r.set(OpId::Isneginf, kCPU, &unary_kernel<fn::Isneginf, kRealMask>);
  r.set(OpId::NanToNum, kCPU, &unary_kernel<fn::NanToNum, kNumericMask>);
  r.set(OpId::LogicalNot, kCPU, &unary_kernel<fn::LogicalNot, kNumericMask>);
  r.set(OpId::BitwiseNot, kCPU, &unary_kernel<fn::BitwiseNot, kIntMask | kBoolMask>);
  r.set(OpId::ConjPhysical, kCPU, &unary_kernel<fn::Conj, kNumericMask>);
  r.set(OpId::Angle, kCPU, &unary_kernel<fn::Angle, kFC>);
}

}  // namespace kiln::cpu
