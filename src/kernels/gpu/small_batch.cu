// The kernel behind deferred small elementwise ops (Note [Deferred small launches],
// backend/gpu/small_ops.h): one block runs a batch of SmallEntry in order, each through the same
// functor the op's own kernel uses (kernels/functors.h), a barrier between entries.
#include "kernels/gpu/small_batch.cuh"

#include "backend/gpu/vendor.h"

#include "backend/gpu/runtime.h"
#include "kernels/convert.h"

namespace kiln::gpu {
namespace {

constexpr int kSmallBlock = 128;

struct SmallBatch {
  int count;
  SmallEntry e[kSmallCapacity];
};
static_assert(sizeof(SmallBatch) <= 4096, "a kernel's parameters are at most 4 KB");

// The batch is read in place from the parameter space, not copied per thread.
#if defined(KILN_GPU_BACKEND_CUDA)
#define KILN_SMALL_PARAM const __grid_constant__
#else
#define KILN_SMALL_PARAM const
#endif

template <class T>
__device__ __forceinline__ T small_operand(const SmallEntry& e, int k, int i) {
  if (e.mode[k] == kSmallHostScalar) {
    T v;
    memcpy(&v, e.scalar[k], sizeof(T));
    return v;
  }
  return reinterpret_cast<const T*>(e.in[k])[e.mode[k] == kSmallDense ? i : 0];
}

template <class T, class F, int N>
__device__ void small_apply(const SmallEntry& e) {
  using C = ::kiln::detail::opmath_t<T>;
  const F& f = *reinterpret_cast<const F*>(e.fn);
  T* out = reinterpret_cast<T*>(e.out);
  for (int i = static_cast<int>(threadIdx.x); i < e.n; i += kSmallBlock) {
    const C x0 = ::kiln::detail::convert<C>(small_operand<T>(e, 0, i));
    if constexpr (N == 1)
      out[i] = ::kiln::detail::convert<T>(f(x0));
    else
      out[i] =
          ::kiln::detail::convert<T>(f(x0, ::kiln::detail::convert<C>(small_operand<T>(e, 1, i))));
  }
}

template <class T>
__device__ void small_run(const SmallEntry& e) {
  using C = ::kiln::detail::opmath_t<T>;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  switch (e.code) {
    case kSmallAdd:
      small_apply<T, fn::Add<C>, 2>(e);
      break;
    case kSmallSub:
      small_apply<T, fn::Sub<C>, 2>(e);
      break;
    case kSmallMul:
      small_apply<T, fn::Mul<C>, 2>(e);
      break;
    case kSmallRelu:
      small_apply<T, fn::Relu<C>, 1>(e);
      break;
    default:
      if constexpr (kFloat) {
        switch (e.code) {
          case kSmallDiv:
            small_apply<T, fn::Div<C>, 2>(e);
            break;
          case kSmallSilu:
            small_apply<T, fn::Silu<C>, 1>(e);
            break;
          case kSmallGelu:
            small_apply<T, fn::Gelu<C>, 1>(e);
            break;
          case kSmallGeluTanh:
            small_apply<T, fn::GeluTanh<C>, 1>(e);
            break;
          default:
            break;
        }
      }
  }
}

__global__ void __launch_bounds__(kSmallBlock) small_batch_kernel(KILN_SMALL_PARAM SmallBatch b) {
  for (int k = 0; k < b.count; ++k) {
    if (k > 0) __syncthreads();  // an entry may read what the ones before it wrote
    const SmallEntry& e = b.e[k];
    switch (static_cast<DType>(e.dtype)) {
      case DType::Float32:
        small_run<float>(e);
        break;
      case DType::Float64:
        small_run<double>(e);
        break;
      case DType::Float16:
        small_run<Half>(e);
        break;
      case DType::BFloat16:
        small_run<BFloat16>(e);
        break;
      case DType::Int32:
        small_run<int32_t>(e);
        break;
      case DType::Int64:
        small_run<int64_t>(e);
        break;
      default:
        break;
    }
  }
}

}  // namespace

void small_batch_launch(const unsigned char* bytes, int count, uintptr_t stream) {
  SmallBatch b;
  b.count = count;
  std::memcpy(static_cast<void*>(b.e), bytes, sizeof(SmallEntry) * static_cast<size_t>(count));
  small_batch_kernel<<<1, kSmallBlock, 0, reinterpret_cast<gpuStream_t>(stream)>>>(b);
  check_launch("small elementwise ops", stream);
}

}  // namespace kiln::gpu
