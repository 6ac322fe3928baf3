// GPU add / sub / mul of a float32 tensor with a bfloat16 or float16 one into float32 (autocast's
// residual adds: the float32 stream plus a half-precision block output), converting each operand
// as it is loaded (Note [Mixed-precision binary kernels]).
#include "kernels/gpu/binary_mixed.h"
#include "kernels/gpu/elementwise.cuh"

namespace kiln::gpu {

// Note [Mixed-precision binary kernels]
// The generic path casts every input to the compute dtype first (elem_cast_inputs): for
// float32 + bfloat16 that is a cast kernel writing a float32 temporary (read 2 B, write 4 B per
// element) and then the float32 kernel reading it back. Here the kernel reads the bfloat16 (or
// float16) operand as it is and converts in registers: one launch and 10 instead of 16 bytes of
// traffic per element. The conversion is exact and the arithmetic is the float32 functor's, so
// the result is bit-identical to the generic path (and to the CPU's). Only float32 outputs of
// two device operands whose dtypes are {float32, bfloat16/float16} in either order take it.
namespace {

bool half_or_bf16(DType d) { return d == DType::BFloat16 || d == DType::Float16; }

template <template <class> class F, class A0, class T>
void launch_mixed(OpCall& c) {
  using Op = Apply<F<float>, float, float, float, true>;
  elem_launch<2, Op, float, A0, T>(c, Op{F<float>(elem_params(c.attrs))});
}

template <template <class> class F>
bool run_mixed(OpCall& c) {
  if (c.in.size() != 2 || c.compute != DType::Float32 || c.out[0].dtype() != DType::Float32)
    return false;
  const Tensor &a = c.in[0], &b = c.in[1];
  if (a.is_cpu() || b.is_cpu()) return false;
  const DType da = a.dtype(), db = b.dtype();
  if (da == DType::Float32 && half_or_bf16(db)) {
    if (db == DType::BFloat16)
      launch_mixed<F, float, BFloat16>(c);
    else
      launch_mixed<F, float, Half>(c);
    return true;
  }
  if (db == DType::Float32 && half_or_bf16(da)) {
    if (da == DType::BFloat16)
      launch_mixed<F, BFloat16, float>(c);
    else
      launch_mixed<F, Half, float>(c);
    return true;
  }
  return false;
}

}  // namespace

bool gpu_binary_mixed(OpId op, OpCall& c) {
  switch (op) {
    case OpId::Add:
      return run_mixed<fn::Add>(c);
    case OpId::Sub:
      return run_mixed<fn::Sub>(c);
    case OpId::Mul:
      return run_mixed<fn::Mul>(c);
    default:
      return false;
  }
}

}  // namespace kiln::gpu
