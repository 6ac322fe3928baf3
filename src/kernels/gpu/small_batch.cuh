// Deferred small elementwise ops (Note [Deferred small launches], backend/gpu/small_ops.h): the
// entry an op appends to the pending batch, which functors and dtypes may join one, and the
// launch of a batch (the kernel is in small_batch.cu).
#pragma once

#include <cstring>
#include <type_traits>

#include "backend/gpu/small_ops.h"
#include "kernels/functors.h"
#include "kiln/dtype.h"

namespace kiln::gpu {

// The ops a batch runs: the hot arithmetic and activation functors, on float32/64, float16,
// bfloat16, int32 and int64, with operands of the output's dtype. Anything else is launched
// one kernel per op as before.
enum SmallCode : uint8_t {
  kSmallAdd,
  kSmallSub,
  kSmallMul,
  kSmallDiv,
  kSmallRelu,
  kSmallSilu,
  kSmallGelu,
  kSmallGeluTanh
};
inline constexpr uint8_t kSmallDense = 0, kSmallBroadcast = 1, kSmallHostScalar = 2;

template <class F>
struct SmallCodeOf : std::integral_constant<int, -1> {};
template <class C>
struct SmallCodeOf<fn::Add<C>> : std::integral_constant<int, kSmallAdd> {};
template <class C>
struct SmallCodeOf<fn::Sub<C>> : std::integral_constant<int, kSmallSub> {};
template <class C>
struct SmallCodeOf<fn::Mul<C>> : std::integral_constant<int, kSmallMul> {};
template <class C>
struct SmallCodeOf<fn::Div<C>> : std::integral_constant<int, kSmallDiv> {};
template <class C>
struct SmallCodeOf<fn::Relu<C>> : std::integral_constant<int, kSmallRelu> {};
template <class C>
struct SmallCodeOf<fn::Silu<C>> : std::integral_constant<int, kSmallSilu> {};
template <class C>
struct SmallCodeOf<fn::Gelu<C>> : std::integral_constant<int, kSmallGelu> {};
template <class C>
struct SmallCodeOf<fn::GeluTanh<C>> : std::integral_constant<int, kSmallGeluTanh> {};

template <class T>
constexpr bool small_dtype_ok() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
         std::is_same_v<T, BFloat16> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
}

// One queued op: contiguous operands (dense, one broadcast element, or a host scalar's value),
// and the functor's bytes (fn::X<opmath_t<dtype>>).
struct SmallEntry {
  char* out;
  const char* in[2];
  int32_t n;
  uint8_t code;   // SmallCode
  uint8_t dtype;  // DType
  uint8_t mode[2];
  alignas(16) unsigned char scalar[2][16];
  alignas(16) unsigned char fn[16];
};
inline constexpr int kSmallCapacity =
    static_cast<int>((kSmallBatchBytes - 16) / sizeof(SmallEntry));

// small_batch.cu: launches `count` SmallEntry as one kernel on `stream`.
void small_batch_launch(const unsigned char* bytes, int count, uintptr_t stream);

// Queues the contiguous op `a` (an ElemArgs<N>) running `op` (an Apply<F, O, C0, C, ...>) when
// the batch takes it; false: the caller launches it.
template <int N, class Op, class O, class A0, class T, class Args>
bool small_defer(const Op& op, const Args& a, int device, uintptr_t stream) {
  using F = std::decay_t<decltype(op.f)>;
  constexpr int code = SmallCodeOf<F>::value;
  if constexpr (code < 0 || N > 2 || !small_dtype_ok<T>() || !std::is_same_v<O, T> ||
                !std::is_same_v<A0, T> || sizeof(F) > 16 || !std::is_trivially_copyable_v<F>) {
    return false;
  } else {
    if (a.n > kSmallOpMaxElems) return false;
    SmallEntry e{};
    e.out = a.out;
    e.n = static_cast<int32_t>(a.n);
    e.code = static_cast<uint8_t>(code);
    e.dtype = static_cast<uint8_t>(dtype_of<T>());
    for (int k = 0; k < N; ++k) {
      e.in[k] = a.in[k];
      e.mode[k] = a.mode[k];
      std::memcpy(e.scalar[k], a.scalar[k], 16);
    }
    std::memcpy(e.fn, &op.f, sizeof(F));
    return small_op_defer(&small_batch_launch, kSmallCapacity, device, stream, &e, sizeof(e));
  }
}

}  // namespace kiln::gpu
