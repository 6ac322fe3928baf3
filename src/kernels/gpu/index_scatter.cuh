// The GPU scatter engine behind scatter/scatter_add/scatter_reduce/index_add/index_copy/
// index_fill: out[p with dim replaced by idx[p]] op= src[p] for every position p of the index.
// Included by index_kernels.cu only. Note [GPU scatter determinism].
#pragma once

#include "kernels/gpu/index_util.cuh"

namespace kiln::gpu::idx {

// Note [GPU scatter determinism]
// Positions p that differ only in their coordinate j along dim may hit the same output element;
// the CPU applies them in j order. On the GPU:
// - plain stores (scatter, index_copy, index_fill): two passes over the positions, the first
//   takes atomicMax(aux[dst], j + 1) on a uint64 array shaped like out, the second writes only
//   where aux[dst] == j + 1, so the last j wins as on the CPU: deterministic, fully parallel;
// - reductions: one thread per position with an atomic combine (native atomicAdd for
//   float/double/int32/int64/complex parts, a compare-and-swap loop otherwise), so float sums
//   and products depend on the order the atomics land in (as PyTorch). Under
//   use_deterministic_algorithms(true), every floating/complex reduction instead runs one
//   thread per output line (all coordinates but j), applying j in order: the CPU's order, so
//   results are bit-identical run to run (and to the CPU). Integer/bool sums and max/min are
//   exact either way; complex128 multiply always takes the ordered path (no 16-byte CAS).
// - mean counts the hits per element with integer atomics, then divides (as on the CPU).
// Indices out of range are skipped and reported through the kernel error channel.
enum class Red : int { None, Add, Mul, Mean, Max, Min };
enum class ScatterMode : int { Store, Mark, Write };

struct ScatterArgs {
  OffsetCalc<3> oc;  // over the index shape with dim set to 1: out, index, src
  int64_t rest = 1, k = 1, n = 1, os = 0, is = 0, ss = 0, dim = 0;
  int op_id = 0;
  KernelErrorSlot err;
};

// The output element of position (r, j), or -1 (reported) when the index is out of range.
__device__ __forceinline__ int64_t scatter_dst(const ScatterArgs& a, const int64_t* idx,
                                               const int64_t (&off)[3], int64_t j, bool report) {
  const int64_t v = idx[off[1] + j * a.is];
  const int64_t w = v < 0 ? v + a.n : v;
  if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(a.n)) {
    if (report) report_index_error(a.err, a.op_id, v, a.n, a.dim);
    return -1;
  }
  return off[0] + w * a.os;
}

template <class U>
__global__ void scatter_store_dev(ScatterArgs a, U* out, const int64_t* idx, const U* src,
                                  unsigned long long* aux, ScatterMode mode) {
  const int64_t total = a.rest * a.k;
  KILN_GRID_LOOP(i, total) {
    const int64_t j = i / a.rest, r = i - j * a.rest;
    int64_t off[3];
    a.oc.get(r, off);
    const int64_t d = scatter_dst(a, idx, off, j, mode != ScatterMode::Write);
    if (d < 0) continue;
    if (mode == ScatterMode::Store)
      out[d] = src[off[2] + j * a.ss];
    else if (mode == ScatterMode::Mark)
      atomicMax(aux + d, static_cast<unsigned long long>(j + 1));
    else if (aux[d] == static_cast<unsigned long long>(j + 1))
      out[d] = src[off[2] + j * a.ss];
  }
}

template <int = 0>  // a template: one definition per program without `inline`
__global__ void scatter_count_dev(ScatterArgs a, const int64_t* idx, unsigned long long* cnt) {
  const int64_t total = a.rest * a.k;
  KILN_GRID_LOOP(i, total) {
    const int64_t j = i / a.rest, r = i - j * a.rest;
    int64_t off[3];
    a.oc.get(r, off);
    const int64_t d = scatter_dst(a, idx, off, j, false);
    if (d >= 0) atomicAdd(cnt + d, 1ull);
  }
}

template <class T, Red R>
__device__ __forceinline__ T combine_val(T cur, T v) {
  using O = ::kiln::detail::opmath_t<T>;
  using ::kiln::detail::convert;
  if constexpr (R == Red::None) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (R == Red::Add || R == Red::Mean || R == Red::Max)
      return cur || v;
    else
      return cur && v;
  } else if constexpr (R == Red::Add || R == Red::Mean) {
    return convert<T>(static_cast<O>(convert<O>(cur) + convert<O>(v)));
  } else if constexpr (R == Red::Mul) {
    return convert<T>(static_cast<O>(convert<O>(cur) * convert<O>(v)));
  } else if constexpr (::kiln::detail::is_complex_v<T>) {
    return cur;  // rejected on the host
  } else {
    O a = convert<O>(cur), b = convert<O>(v);
    if constexpr (!std::is_integral_v<O>) {
      if (a != a || b != b) return convert<T>(a != a ? a : b);
    }
    if constexpr (R == Red::Max)
      return a < b ? v : cur;
    else
      return b < a ? v : cur;
  }
}

template <class T, Red R>
__device__ __forceinline__ void atomic_combine(T* p, T v) {
  if constexpr (R == Red::Add || R == Red::Mean) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t>) {
      atomicAdd(p, v);
      return;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
      return;
    } else if constexpr (::kiln::detail::is_complex_v<T>) {
      using Rp = decltype(v.real());
      Rp* q = reinterpret_cast<Rp*>(p);
      atomicAdd(q, v.real());
      atomicAdd(q + 1, v.imag());
      return;
    }
  }
  if constexpr (sizeof(T) <= 8) atomic_rmw(p, [v](T cur) { return combine_val<T, R>(cur, v); });
}

template <class T, Red R>
__global__ void scatter_reduce_dev(ScatterArgs a, T* out, const int64_t* idx, const T* src, T scale,
                                   bool scaled, bool ordered) {
  using O = ::kiln::detail::opmath_t<T>;
  using ::kiln::detail::convert;
  auto load = [&](int64_t s) {
    T v = src[s];
    if constexpr (!std::is_same_v<T, bool>) {
      if (scaled) v = convert<T>(static_cast<O>(convert<O>(v) * convert<O>(scale)));
    }
    return v;
  };
  constexpr bool kAtomicOk = sizeof(T) <= 8 || R == Red::Add || R == Red::Mean;
  if (!ordered && kAtomicOk) {
    if constexpr (kAtomicOk) {
      const int64_t total = a.rest * a.k;
      KILN_GRID_LOOP(i, total) {
        const int64_t j = i / a.rest, r = i - j * a.rest;
        int64_t off[3];
        a.oc.get(r, off);
        const int64_t d = scatter_dst(a, idx, off, j, true);
        if (d >= 0) atomic_combine<T, R>(out + d, load(off[2] + j * a.ss));
      }
    }
    return;
  }
  KILN_GRID_LOOP(r, a.rest) {
    int64_t off[3];
    a.oc.get(r, off);
    for (int64_t j = 0; j < a.k; ++j) {
      const int64_t d = scatter_dst(a, idx, off, j, true);
      if (d >= 0) out[d] = combine_val<T, R>(out[d], load(off[2] + j * a.ss));
    }
  }
}

// out = out / count where count > 0 (integers round down, as PyTorch's floor division).
template <class T>
__global__ void scatter_divide_dev(T* out, const unsigned long long* cnt, int64_t n) {
  using O = ::kiln::detail::opmath_t<T>;
  using ::kiln::detail::convert;
  KILN_GRID_LOOP(i, n) {
    const int64_t m = static_cast<int64_t>(cnt[i]);
    if (m <= 0) continue;
    if constexpr (std::is_same_v<T, bool>) {
    } else if constexpr (std::is_integral_v<T>) {
      int64_t x = static_cast<int64_t>(out[i]);
      int64_t q = x / m;
      if (x % m != 0 && x < 0) --q;
      out[i] = static_cast<T>(q);
    } else if constexpr (::kiln::detail::is_complex_v<T>) {
      using Rp = decltype(O().real());
      O z = convert<O>(out[i]);
      out[i] = convert<T>(O(z.real() / static_cast<Rp>(m), z.imag() / static_cast<Rp>(m)));
    } else {
      out[i] = convert<T>(static_cast<O>(convert<O>(out[i]) / static_cast<O>(m)));
    }
  }
}

// One scatter call's geometry over a contiguous `out` and an int64 index; src is a view over the
// index's shape (stride 0 for a value).
class ScatterPlan {
 public:
  ScatterPlan(OpId op, const Tensor& out, const Tensor& index, const Tensor& src, int64_t dim)
      : op_(op), out_(out), index_(index), src_(src) {
    const int64_t nd = index.dim();
    auto strides_for = [&](const Tensor& t) {
      return t.dim() == nd ? DimVector(t.strides().begin(), t.strides().end()) : DimVector(nd, 0);
    };
    a_.dim = dim;
    a_.k = nd == 0 ? 1 : index.size(dim);
    a_.n = out.dim() == 0 ? 1 : out.size(dim);
    a_.os = out.dim() == 0 ? 0 : out.stride(dim);
    a_.is = nd == 0 ? 0 : index.stride(dim);
    a_.ss = nd == 0 ? 0 : strides_for(src)[dim];
    DimVector rest(index.sizes().begin(), index.sizes().end());
    if (nd > 0) rest[dim] = 1;
    a_.rest = 1;
    for (int64_t s : rest) a_.rest *= s;
    Tensor ov = ::kiln::detail::make_view(out, rest, strides_for(out), out.storage_offset());
    Tensor iv = ::kiln::detail::make_view(index, rest, index.strides(), index.storage_offset());
    Tensor sv = ::kiln::detail::make_view(src, rest, strides_for(src), src.storage_offset());
    const Tensor* ops[3] = {&ov, &iv, &sv};
    a_.oc = make_offset_calc<3>(ops, op_name(op));
    a_.op_id = static_cast<int>(op);
    dev_ = device_of(out);
    stream_ = current_stream(dev_);
    a_.err = kernel_error_slot(dev_);
  }

  // Plain stores of `src` (or of a 0-dim device value `v` when given) at every position.
  void store_value(const Tensor& v, ScatterMode mode) { store(v, mode, nullptr); }

  void winner_store() {
    Tensor aux = zeros_aux();
    store(src_, ScatterMode::Mark, aux.data_ptr());
    store(src_, ScatterMode::Write, aux.data_ptr());
  }

  // Hit counts per output element (starting at 1 with include_self, else 0).
  Tensor count(bool include_self) {
    Tensor cnt = ::kiln::detail::empty_impl(out_.sizes(), DType::Int64, out_.device());
    gpu_fill(cnt, Scalar(static_cast<int64_t>(include_self ? 1 : 0)));
    if (a_.rest * a_.k > 0)
      scatter_count_dev<><<<blocks_for(a_.rest * a_.k), kThreads, 0, as_stream(stream_)>>>(
          a_, idx_ptr(), static_cast<unsigned long long*>(cnt.data_ptr()));
    check_launch(op_name(op_), stream_);
    return cnt;
  }

  void reduce(Red r, const Scalar* alpha, bool ordered) {
    const char* name = op_name(op_);
    ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask>(
        out_.dtype(), name, [&]<class T>() {
          T scale{};
          bool scaled = false;
          if constexpr (!std::is_same_v<T, bool>) {
            if (alpha != nullptr && !(alpha->is_integral() && alpha->to<int64_t>() == 1)) {
              scale = alpha->to<T>();
              scaled = true;
            }
          }
          const int64_t work = ordered ? a_.rest : a_.rest * a_.k;
          auto launch = [&]<Red R>() {
            scatter_reduce_dev<T, R><<<blocks_for(work), kThreads, 0, as_stream(stream_)>>>(
                a_, static_cast<T*>(out_.data_ptr()), idx_ptr(),
                static_cast<const T*>(src_.data_ptr()), scale, scaled, ordered);
          };
          switch (r) {
            case Red::Add:
            case Red::Mean:
              launch.template operator()<Red::Add>();
              break;
            case Red::Mul:
              launch.template operator()<Red::Mul>();
              break;
            case Red::Max:
              if constexpr (!::kiln::detail::is_complex_v<T>)
                launch.template operator()<Red::Max>();
              break;
            case Red::Min:
              if constexpr (!::kiln::detail::is_complex_v<T>)
                launch.template operator()<Red::Min>();
              break;
            default:
              KILN_ASSERT(false, "scatter reduce");
          }
        });
    check_launch(name, stream_);
  }

  void divide(const Tensor& cnt) {
    const int64_t n = out_.numel();
    if (n == 0) return;
    ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask>(
        out_.dtype(), op_name(op_), [&]<class T>() {
          scatter_divide_dev<T><<<blocks_for(n), kThreads, 0, as_stream(stream_)>>>(
              static_cast<T*>(out_.data_ptr()),
              static_cast<const unsigned long long*>(cnt.data_ptr()), n);
        });
    check_launch(op_name(op_), stream_);
  }

 private:
  const int64_t* idx_ptr() const { return static_cast<const int64_t*>(index_.data_ptr()); }

  Tensor zeros_aux() {
    Tensor aux = ::kiln::detail::empty_impl(out_.sizes(), DType::Int64, out_.device());
    gpu_fill(aux, Scalar(int64_t{0}));
    return aux;
  }

  void store(const Tensor& v, ScatterMode mode, void* aux) {
    const int64_t total = a_.rest * a_.k;
    if (total == 0) return;
    ScatterArgs a = a_;
    if (!v.is_same(src_)) a.ss = 0;  // a 0-dim value
    const Tensor& s = v;
    // With a 0-dim value, every offset into src must be 0: rebuild the src operand's strides.
    if (!v.is_same(src_))
      for (int d = 0; d < a.oc.ndim; ++d) a.oc.strides[2][d] = 0;
    dispatch_raw(out_.element_size(), [&]<class U>() {
      scatter_store_dev<U><<<blocks_for(total), kThreads, 0, as_stream(stream_)>>>(
          a, static_cast<U*>(out_.data_ptr()), idx_ptr(), static_cast<const U*>(s.data_ptr()),
          static_cast<unsigned long long*>(aux), mode);
    });
    check_launch(op_name(op_), stream_);
  }

  OpId op_;
  Tensor out_, index_, src_;
  ScatterArgs a_;
  int dev_ = 0;
  StreamHandle stream_ = 0;
};

}  // namespace kiln::gpu::idx
