// CPU kernels of the ternary elementwise primitives (where, clamp, lerp, addcmul, addcdiv).
#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

void register_ternary_kernels(KernelRegistry& r) {
  constexpr uint32_t kFC = kFloatMask | kComplexMask;
  r.set(OpId::Where, kCPU, &ternary_kernel<fn::Where, kNumericMask, bool>);
  r.set(OpId::Clamp, kCPU, &ternary_kernel<fn::Clamp, kIntMask | kFloatMask>);
  r.set(OpId::Lerp, kCPU, &ternary_kernel<fn::Lerp, kFC>);
  r.set(OpId::Addcmul, kCPU, &ternary_kernel<fn::Addcmul, kNumericMask & ~kBoolMask>);
  r.set(OpId::Addcdiv, kCPU, &ternary_kernel<fn::Addcdiv, kFC>);
}

}  // namespace kiln::cpu
