// CPU kernels of the binary arithmetic primitives (add ... pow, atan2, hypot, copysign): one
// line each, binding a functor (kernels/functors_binary.h) to its dtypes. Integer division
// kernels first check the divisor for zeros, as functors cannot throw.
#include <atomic>

#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

namespace {

// PyTorch raises ZeroDivisionError for integer div (trunc/floor), remainder and fmod by zero.
// The check runs before the kernel, so a failing call leaves out=/in-place tensors untouched.
void check_integer_divisor(const OpCall& c) {
  if (!is_integral(c.compute, false) || c.out[0].numel() == 0) return;
  const Tensor& b = c.in[1];
  std::atomic<bool> zero{false};
  dispatch_types<kIntMask | kBoolMask>(b.dtype(), op_name(c.op), [&]<class T>() {
    StridedIter it;
    it.add(b);
    it.build(b.sizes());
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        if (*reinterpret_cast<const T*>(d[0] + i * s[0]) == T(0)) {
          zero.store(true, std::memory_order_relaxed);
          return;
        }
    });
  });
  KILN_CHECK(!zero.load(), "[", op_name(c.op), "] integer division by zero (ZeroDivisionError)");
}

template <template <class> class F, uint32_t Mask>
void int_division_kernel(OpCall& c) {
  check_integer_divisor(c);
  binary_kernel<F, Mask>(c);
}

}  // namespace

void register_elementwise_kernels(KernelRegistry& r) {
  constexpr uint32_t kIF = kIntMask | kFloatMask;
  r.set(OpId::Add, kCPU, &binary_kernel<fn::Add, kNumericMask>);
  r.set(OpId::Sub, kCPU, &binary_kernel<fn::Sub, kNumericMask & ~kBoolMask>);
  r.set(OpId::Mul, kCPU, &binary_kernel<fn::Mul, kNumericMask>);
  r.set(OpId::Div, kCPU, &binary_kernel<fn::Div, kFloatMask | kComplexMask>);
  r.set(OpId::DivTrunc, kCPU, &int_division_kernel<fn::DivTrunc, kIF>);
  r.set(OpId::DivFloor, kCPU, &int_division_kernel<fn::DivFloor, kIF>);
  r.set(OpId::Remainder, kCPU, &int_division_kernel<fn::Remainder, kIF>);
  r.set(OpId::Fmod, kCPU, &int_division_kernel<fn::Fmod, kIF>);
  r.set(OpId::Pow, kCPU, &binary_kernel<fn::Pow, kNumericMask & ~kBoolMask>);
  r.set(OpId::Atan2, kCPU, &binary_kernel<fn::Atan2, kFloatMask>);
  r.set(OpId::Hypot, kCPU, &binary_kernel<fn::Hypot, kFloatMask>);
  r.set(OpId::Copysign, kCPU, &binary_kernel<fn::Copysign, kFloatMask>);
}

}  // namespace kiln::cpu
