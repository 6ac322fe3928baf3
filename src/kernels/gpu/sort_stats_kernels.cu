// GPU kernels of quantile/nanquantile, unique/unique_consecutive, searchsorted, histc and bincount,
// with the CPU kernels' results (sort_stats_kernels.cpp). All deterministic: histc and bincount
// count with integer atomics, and weighted bincount sums each bin in index order after a stable
// sort, so no op here needs detail::alert_not_deterministic.
#include "backend/gpu/vendor.h"

#include <cmath>
#include <cstdint>

#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/gpu/sort_common.cuh"

namespace kiln::gpu::sortg {

using namespace ::kiln::detail;  // dtype masks, convert

namespace {

constexpr int kThreads = 256;

void check(const Launch& l, const char* op) {
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
}

// A contiguous buffer for `t` (t itself when contiguous); finish() copies it back.
struct OutBuf {
  Tensor dst, buf;
  explicit OutBuf(const Tensor& t)
      : dst(t),
        buf(t.is_contiguous() ? t : ::kiln::detail::empty_impl(t.sizes(), t.dtype(), t.device())) {}
  void* ptr() const { return buf.data_ptr(); }
  void finish() const {
    if (!buf.is_same(dst)) const_cast<Tensor&>(dst).copy_(buf);
  }
};

// ---- quantile ----------------------------------------------------------------------------------

// A product the compiler may not fuse into a neighbouring add (the CPU build has no FMA
// contraction, so the two give the same bits).
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// PyTorch's lerp (exact at both ends).
template <class T>
__device__ inline T lerp(T a, T b, T w) {
  return w < T(0.5) ? a + mul_rn(w, b - a) : b - mul_rn(b - a, T(1) - w);
}

// One thread per (line, q): the CPU kernel's ranks, computed in T, on the sorted line.
template <class T, class K>
__global__ void quantile_kernel(const T* x, OffsetCalc<1> batch, int64_t sx, int64_t lines,
                                const K* keys, const uint32_t* pos, int64_t pitch, int64_t n,
                                const double* q, int64_t nq, T* out, int mode, bool ignore_nan,
                                K nan) {
  const int64_t total = lines * nq, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t l = t / nq, j = t - l * nq;
    const uint32_t* pp = pos + l * pitch;
    int64_t base[1];
    batch.get(l, base);
    const int64_t valid = lower_bound(keys + l * pitch, n, nan);
    T rank;
    if (!ignore_nan && valid < n) {
      rank = static_cast<T>(n - 1);  // the NaN at the end
    } else {
      const T a = static_cast<T>(q[j]) * static_cast<T>(valid - 1);
      rank = a < T(0) ? T(0) : a;
    }
    if (mode == 1) rank = floor(rank);
    if (mode == 2) rank = ceil(rank);
    if (mode == 4) rank = rint(rank);  // ties to even
    const int64_t lo = static_cast<int64_t>(rank);
    T r = x[base[0] + static_cast<int64_t>(pp[lo]) * sx];
    if (mode == 0 || mode == 3) {
      const int64_t hi = static_cast<int64_t>(ceil(rank));
      const T w = mode == 3 ? T(0.5) : rank - static_cast<T>(lo);
      r = lerp<T>(r, x[base[0] + static_cast<int64_t>(pp[hi]) * sx], w);
    }
    out[l * nq + j] = r;
  }
}

// in = (x, q: float64 1-D on the CPU), out[0] = keepdim shape + [nq]; i0 = dim, i1 =
// interpolation (0 linear, 1 lower, 2 higher, 3 midpoint, 4 nearest), flag = ignore NaN.
void quantile_kernel_op(OpCall& c) {
  const Tensor& x = c.in[0];
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const int64_t dim = c.attrs.i0, n = x.dim() == 0 ? 1 : x.size(dim);
  const Tensor q = c.in[1].to(Device(kCUDA, l.device)).contiguous();
  const int64_t nq = q.numel();
  OutBuf o(c.out[0]);
  const SortedLines s = sort_tensor_lines(x, dim, false, "quantile");
  const Tensor* ops[1] = {&x};
  const Lines<1> ln = make_lines<1>(ops, dim, "quantile");
  if (ln.count * nq == 0) return;
  dispatch_types<dtype_bit(DType::Float32) | dtype_bit(DType::Float64)>(
      x.dtype(), "quantile", [&]<class T>() {
        using K = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
        quantile_kernel<T, K><<<blocks_for(ln.count * nq, kThreads), kThreads, 0, l.stream>>>(
            static_cast<const T*>(x.data_ptr()), ln.batch, ln.stride[0], ln.count, s.key_ptr<K>(),
            s.pos_ptr(), s.pitch, n, static_cast<const double*>(q.data_ptr()), nq,
            static_cast<T*>(o.ptr()), static_cast<int>(c.attrs.i1), c.attrs.flag,
            nan_key<K>(static_cast<int>(sizeof(T))));
      });
  check(l, "quantile");
  o.finish();
}

// ---- unique ------------------------------------------------------------------------------------

__global__ void iota_u32_kernel(uint32_t* p, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    p[i] = static_cast<uint32_t>(i);
}

// keys[i] = key of column j of row perm[i] of x (n, m).
template <class E>
__global__ void column_keys_kernel(const E* x, int64_t n, int64_t m, int64_t j,
                                   const uint32_t* perm, KeySpec spec, key_of_t<E>* keys) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    keys[i] = make_key<E>(x[static_cast<int64_t>(perm[i]) * m + j], spec);
}

__global__ void compose_kernel(const uint32_t* perm, const uint32_t* pos, int64_t n,
                               uint32_t* out) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = perm[pos[i]];
}

// flag[i] = 1 where row ord[i] starts a new group: it differs from row ord[i - 1] (rows are equal
// when every element compares equal, so NaNs never are).
template <class E>
__global__ void unique_flags_kernel(const E* x, int64_t n, int64_t m, const uint32_t* ord,
                                    KeySpec spec, bool is_float, int64_t* flag) {
  using K = key_of_t<E>;
  const K nan = nan_key<K>(static_cast<int>(sizeof(E)));
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t f = i == 0 ? 1 : 0;
    if (i > 0) {
      const int64_t p = ord ? ord[i - 1] : i - 1, r = ord ? ord[i] : i;
      for (int64_t j = 0; j < m; ++j) {
        const K ku = make_key<E>(x[p * m + j], spec), kw = make_key<E>(x[r * m + j], spec);
        if ((is_float && ku == nan) || ku != kw) {
          f = 1;
          break;
        }
      }
    }
    flag[i] = f;
  }
}

template <class E>
__global__ void unique_scatter_kernel(const E* x, int64_t n, int64_t m, const uint32_t* ord,
                                      const int64_t* flag, const int64_t* group, E* vo,
                                      int64_t* inv, int64_t* starts) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t r = ord ? ord[i] : i, g = group[i] - 1;
    inv[r] = g;
    if (flag[i]) {
      starts[g] = i;
      for (int64_t j = 0; j < m; ++j) vo[g * m + j] = x[r * m + j];
    }
  }
}

__global__ void unique_counts_kernel(const int64_t* group, const int64_t* starts, int64_t n,
                                     int64_t* cnt, int64_t* kout) {
  const int64_t k = group[n - 1];
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < k; g += step)
    cnt[g] = (g + 1 < k ? starts[g + 1] : n) - starts[g];
  if (blockIdx.x == 0 && threadIdx.x == 0) *kout = k;
}

// in = (x: contiguous (n, m)); flag = consecutive only. out = (values (n, m), inverse (n),
// counts (n), number of unique rows (0-dim)): only the first k rows of values/counts are set.
// Rows are ordered by a stable sort on each column from the last to the first (equal to the
// CPU's stable lexicographic sort).
void unique_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const char* op = "unique";
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const int64_t n = x.size(0), m = x.size(1);
  KILN_CHECK(n < (int64_t{1} << 32), "[", op, "] GPU unique supports fewer than 2^32 rows");
  KILN_ASSERT(x.is_contiguous() && c.out[0].is_contiguous() && c.out[1].is_contiguous() &&
                  c.out[2].is_contiguous(),
              "unique: GPU kernel expects contiguous operands");
  auto* kout = static_cast<int64_t*>(c.out[3].data_ptr());
  if (n == 0) {
    KILN_GPU_CHECK(op, gpuMemsetAsync(kout, 0, sizeof(int64_t), l.stream));
    return;
  }
  const KeySpec spec = key_spec(x.dtype(), false);
  const unsigned grid = blocks_for(n, kThreads);
  dispatch_elem(x.dtype(), op, [&]<class E>() {
    using K = key_of_t<E>;
    constexpr bool kWide = sizeof(K) == 8;
    const E* xp = static_cast<const E*>(x.data_ptr());
    Tensor order;  // uint32 row order; undefined = identity
    if (!c.attrs.flag && m == 1) {
      order = sort_tensor_lines(x, 0, false, op).pos;
    } else if (!c.attrs.flag && m > 1) {
      order = scratch(n, DType::Int32, l.device);
      iota_u32_kernel<<<grid, kThreads, 0, l.stream>>>(static_cast<uint32_t*>(order.data_ptr()), n);
      Tensor keys = scratch(n, kWide ? DType::Int64 : DType::Int32, l.device);
      for (int64_t j = m - 1; j >= 0; --j) {
        const auto* perm = static_cast<const uint32_t*>(order.data_ptr());
        column_keys_kernel<E><<<grid, kThreads, 0, l.stream>>>(xp, n, m, j, perm, spec,
                                                               static_cast<K*>(keys.data_ptr()));
        check(l, op);
        const SortedLines s =
            sort_key_lines(keys, 1, n, kWide, static_cast<int>(8 * sizeof(E)), l, op);
        Tensor next = scratch(n, DType::Int32, l.device);
        compose_kernel<<<grid, kThreads, 0, l.stream>>>(perm, s.pos_ptr(), n,
                                                        static_cast<uint32_t*>(next.data_ptr()));
        check(l, op);
        order = next;
      }
    }
    const auto* ord = order.defined() ? static_cast<const uint32_t*>(order.data_ptr()) : nullptr;
    Tensor flag = scratch(n, DType::Int64, l.device), group = scratch(n, DType::Int64, l.device);
    Tensor starts = scratch(n, DType::Int64, l.device);
    auto* pf = static_cast<int64_t*>(flag.data_ptr());
    auto* pg = static_cast<int64_t*>(group.data_ptr());
    auto* ps = static_cast<int64_t*>(starts.data_ptr());
    unique_flags_kernel<E>
        <<<grid, kThreads, 0, l.stream>>>(xp, n, m, ord, spec, is_float_key(spec), pf);
    check(l, op);
    inclusive_scan(pf, pg, n, l, op);
    unique_scatter_kernel<E><<<grid, kThreads, 0, l.stream>>>(
        xp, n, m, ord, pf, pg, static_cast<E*>(c.out[0].data_ptr()),
        static_cast<int64_t*>(c.out[1].data_ptr()), ps);
    check(l, op);
    unique_counts_kernel<<<grid, kThreads, 0, l.stream>>>(
        pg, ps, n, static_cast<int64_t*>(c.out[2].data_ptr()), kout);
    check(l, op);
  });
}

// ---- searchsorted
// --------------------------------------------------------------------------------

// One thread per value: PyTorch's bounds (left: first s >= v, right: first s > v; a NaN value
// lands at the end), compared in float for float16/bfloat16 as the CPU kernel.
template <class T>
__global__ void searchsorted_kernel(const T* seq, const int64_t* sorter, const T* val, void* out,
                                    bool out32, Lines<2> vl, Lines<2> sl, bool shared, int64_t nv,
                                    int64_t ns, bool right) {
  using M = std::conditional_t<is_reduced_float_v<T>, float, T>;
  const int64_t total = vl.count * nv, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t l = t / nv, i = t - l * nv;
    int64_t vo[2], so[2];
    vl.batch.get(l, vo);
    sl.batch.get(shared ? 0 : l, so);
    const M x = convert<M>(val[vo[0] + i * vl.stride[0]]);
    int64_t lo = 0, hi = ns;
    while (lo < hi) {
      const int64_t mid = lo + ((hi - lo) >> 1);
      const int64_t e = sorter ? sorter[so[1] + mid * sl.stride[1]] : mid;
      const M y = convert<M>(seq[so[0] + e * sl.stride[0]]);
      if (right ? !(y > x) : !(y >= x))
        lo = mid + 1;
      else
        hi = mid;
    }
    const int64_t o = vo[1] + i * vl.stride[1];
    if (out32)
      static_cast<int32_t*>(out)[o] = static_cast<int32_t>(lo);
    else
      static_cast<int64_t*>(out)[o] = lo;
  }
}

// in = (sorted sequence, values[, sorter]); i0 = 1 when the sequence is one shared 1-D line,
// i1 = 1 with a sorter, flag = right.
void searchsorted_kernel_op(OpCall& c) {
  const Tensor& seq = c.in[0];
  const Tensor& val = c.in[1];
  const Tensor& out = c.out[0];
  if (val.numel() == 0) return;
  const Launch l = launch_of(out);
  DeviceGuard guard(l.device);
  const bool shared = c.attrs.i0 != 0, has_sorter = c.attrs.i1 != 0;
  const int64_t vd = val.dim() > 0 ? val.dim() - 1 : 0, nv = val.dim() == 0 ? 1 : val.size(-1);
  const int64_t ns = seq.size(-1);
  const Tensor* vops[2] = {&val, &out};
  const Tensor& sorter = has_sorter ? c.in[2] : seq;
  const Tensor* sops[2] = {&seq, &sorter};
  const Lines<2> vl = make_lines<2>(vops, vd, "searchsorted");
  const Lines<2> sl = make_lines<2>(sops, seq.dim() - 1, "searchsorted");
  const bool out32 = out.dtype() == DType::Int32;
  dispatch_types<kRealMask & ~kBoolMask>(seq.dtype(), "searchsorted", [&]<class T>() {
    searchsorted_kernel<T><<<blocks_for(vl.count * nv, kThreads), kThreads, 0, l.stream>>>(
        static_cast<const T*>(seq.data_ptr()),
        has_sorter ? static_cast<const int64_t*>(sorter.data_ptr()) : nullptr,
        static_cast<const T*>(val.data_ptr()), out.data_ptr(), out32, vl, sl, shared, nv, ns,
        c.attrs.flag);
  });
  check(l, "searchsorted");
}

// ---- histc, bincount ----------------------------------------------------------------------------

template <class T>
__global__ void histc_count_kernel(const T* x, int64_t n, opmath_t<T> lo, opmath_t<T> hi,
                                   int64_t bins, unsigned long long* h) {
  using M = opmath_t<T>;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const M v = convert<M>(x[i]);
    if (!(v >= lo && v <= hi)) continue;  // outside, or NaN
    int64_t b = static_cast<int64_t>((v - lo) * static_cast<M>(bins) / (hi - lo));
    if (b >= bins) b = bins - 1;
    atomicAdd(h + b, 1ull);
  }
}

template <class T>
__global__ void histc_out_kernel(const unsigned long long* h, T* o, int64_t bins) {
  using M = opmath_t<T>;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bins; i += step)
    o[i] = convert<T>(static_cast<M>(static_cast<int64_t>(h[i])));
}

// in = (x); out = bins counts of x's dtype; s0/s1 = finite min < max, i0 = bins. Integer atomics:
// deterministic.
void histc_kernel(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor x = c.in[0].contiguous();
  OutBuf o(c.out[0]);
  const int64_t bins = c.attrs.i0, n = x.numel();
  Tensor h = scratch(bins, DType::Int64, l.device);
  auto* ph = static_cast<unsigned long long*>(h.data_ptr());
  KILN_GPU_CHECK("histc", gpuMemsetAsync(ph, 0, sizeof(int64_t) * bins, l.stream));
  dispatch_types<kFloatMask>(x.dtype(), "histc", [&]<class T>() {
    using M = opmath_t<T>;
    if (n > 0)
      histc_count_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, l.stream>>>(
          static_cast<const T*>(x.data_ptr()), n, c.attrs.s0.to<M>(), c.attrs.s1.to<M>(), bins, ph);
    histc_out_kernel<T>
        <<<blocks_for(bins, kThreads), kThreads, 0, l.stream>>>(ph, static_cast<T*>(o.ptr()), bins);
  });
  check(l, "histc");
  o.finish();
}

__global__ void bincount_kernel_u(const int64_t* a, int64_t n, unsigned long long* o) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    atomicAdd(o + a[i], 1ull);
}

// Sorted values (keys) with positions: the first thread of each run of one value sums the
// weights of the run in index order (the CPU's order of additions, so the same sums).
template <class T>
__global__ void bincount_weighted_kernel(const uint64_t* keys, const uint32_t* pos, int64_t n,
                                         const T* w, T* o) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const uint64_t k = keys[i];
    if (i > 0 && keys[i - 1] == k) continue;
    T s = T(0);
    for (int64_t j = i; j < n && keys[j] == k; ++j) s += w[pos[j]];
    o[k] = s;
  }
}

// in = (x: 1-D int64 non-negative[, weights: float32/float64]); out zero-filled here.
void bincount_kernel(OpCall& c) {
  const char* op = "bincount";
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor x = c.in[0].contiguous();
  OutBuf o(c.out[0]);
  const int64_t n = x.numel(), len = o.buf.numel();
  KILN_GPU_CHECK(op, gpuMemsetAsync(o.ptr(), 0, element_size(o.buf.dtype()) * len, l.stream));
  if (n > 0) {
    if (c.in.size() == 1) {
      bincount_kernel_u<<<blocks_for(n, kThreads), kThreads, 0, l.stream>>>(
          static_cast<const int64_t*>(x.data_ptr()), n, static_cast<unsigned long long*>(o.ptr()));
    } else {
      const Tensor w = c.in[1].contiguous();
      int bits = 1;
      while (bits < 63 && (int64_t{1} << bits) < len) ++bits;
      // Non-negative int64 values are their own uint64 keys.
      const SortedLines s = sort_key_lines(x, 1, n, true, bits, l, op);
      dispatch_types<dtype_bit(DType::Float32) | dtype_bit(DType::Float64)>(
          o.buf.dtype(), op, [&]<class T>() {
            bincount_weighted_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, l.stream>>>(
                s.key_ptr<uint64_t>(), s.pos_ptr(), n, static_cast<const T*>(w.data_ptr()),
                static_cast<T*>(o.ptr()));
          });
    }
    check(l, op);
  }
  o.finish();
}

}  // namespace

void register_sort_stats_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Quantile, kCUDA, &quantile_kernel_op);
  r.set(OpId::Unique, kCUDA, &unique_kernel);
  r.set(OpId::SearchSorted, kCUDA, &searchsorted_kernel_op);
  r.set(OpId::Histc, kCUDA, &histc_kernel);
  r.set(OpId::BinCount, kCUDA, &bincount_kernel);
}

}  // namespace kiln::gpu::sortg
