// GPU kernels of the random family (src/ops/defs/random.def): the same Philox streams and
// transforms as the CPU kernels (Note [Philox streams], Note [Random op contract]), so equal
// (seed, offset) give the same numbers on both; graph-safe (Note [Graph-safe random numbers]).

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/vendor.h"

#include <limits>
#include <type_traits>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/distributions.h"
#include "kernels/gpu/offset_calc.cuh"
#include "kernels/philox.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

namespace {

constexpr int kThreads = 256;

gpuStream_t as_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

unsigned blocks_for(int64_t work) {
  int64_t b = (work + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < (int64_t{1} << 16) ? b : (int64_t{1} << 16));
}

// The call's Philox state. A captured call reads it from the graph's device tensor when it runs:
// seed = state[0], offset = state[1] + offset (Note [Graph-safe random numbers]).
struct RngArgs {
  uint64_t seed = 0;
  uint64_t offset = 0;
  const int64_t* state = nullptr;
};

__device__ inline PhiloxCursor cursor_of(const RngArgs& a) {
  if (a.state != nullptr)
    return PhiloxCursor(static_cast<uint64_t>(a.state[0]),
                        static_cast<uint64_t>(a.state[1]) + a.offset);
  return PhiloxCursor(a.seed, a.offset);
}

int device_of(const Tensor& t) {
  return t.device().index >= 0 ? t.device().index : current_device();
}

// Inputs of each op before the optional graph state tensor that capture_rng appends.
size_t base_inputs(OpId op) {
  switch (op) {
    case OpId::NormalTensor:
      return 2;
    case OpId::BernoulliTensor:
    case OpId::Multinomial:
      return 1;
    default:
      return 0;
  }
}

RngArgs rng_args(const OpCall& c) {
  RngArgs a;
  a.seed = static_cast<uint64_t>(c.attrs.i0);
  a.offset = static_cast<uint64_t>(c.attrs.i1);
  if (c.in.size() > base_inputs(c.op)) {
    const Tensor& st = c.in.back();
    KILN_ASSERT(st.dtype() == DType::Int64 && st.numel() == 2, "random: bad graph state tensor");
    a.state = static_cast<const int64_t*>(st.data_ptr());
  }
  return a;
}

// ---- per-element samplers (element i -> value from the words it owns), as the CPU's --------

template <class C>
constexpr bool kIsFloat = std::is_same_v<C, float>;

template <class C>
__device__ inline C unit(PhiloxCursor& r, uint64_t i) {
  if constexpr (kIsFloat<C>)
    return rng_uniform_float(r.word(i));
  else
    return rng_uniform_double(r.u64(i));
}

template <class C>
__device__ inline C std_normal(PhiloxCursor& r, uint64_t i) {
  const uint64_t p = i >> 1;
  if constexpr (kIsFloat<C>)
    return rng_normal_float(r.word(2 * p), r.word(2 * p + 1), i);
  else
    return rng_normal_double(r.u64(2 * p), r.u64(2 * p + 1), i);
}

// Samplers: operator()(cursor, i, p) with p the element's tensor parameters (NormalTensor,
// BernoulliTensor) and a and b the scalar ones.
template <class C>
struct UniformS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    return rng_uniform_real(unit<C>(r, i), a, b);
  }
};
template <class C>
struct NormalS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    return rng_normal(std_normal<C>(r, i), a, b);
  }
};
template <class C>
struct LogNormalS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    return rng_log_normal(std_normal<C>(r, i), a, b);
  }
};
template <class C>
struct ExponentialS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    if constexpr (kIsFloat<C>)
      return rng_exponential_float(r.word(i), a);
    else
      return rng_exponential_double(r.u64(i), a);
  }
};
template <class C>
struct GeometricS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    if constexpr (kIsFloat<C>)
      return rng_geometric_float(r.word(i), a);
    else
      return rng_geometric_double(r.u64(i), a);
  }
};
template <class C>
struct CauchyS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    if constexpr (kIsFloat<C>)
      return rng_cauchy_float(r.word(i), a, b);
    else
      return rng_cauchy_double(r.u64(i), a, b);
  }
};
template <class C>
__device__ inline C bernoulli(PhiloxCursor& r, uint64_t i, C p) {
  if constexpr (kIsFloat<C>)
    return rng_bernoulli_float(r.word(i), p) ? C(1) : C(0);
  else
    return rng_bernoulli_double(r.u64(i), p) ? C(1) : C(0);
}
template <class C>
struct BernoulliS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C*) const {
    return bernoulli<C>(r, i, a);
  }
};
template <class C>
struct NormalTensorS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C* p) const {
    return rng_normal(std_normal<C>(r, i), p[0], p[1]);
  }
};
template <class C>
struct BernoulliTensorS {
  C a, b;
  __device__ C operator()(PhiloxCursor& r, uint64_t i, const C* p) const {
    return bernoulli<C>(r, i, p[0]);
  }
};
struct RandomIntS {
  uint64_t range;
  int64_t low;
  __device__ int64_t operator()(PhiloxCursor& r, uint64_t i, const int64_t*) const {
    if (rng_int_words(range) == 2u) return rng_random_from_to_64(r.u64(i), range, low);
    return rng_random_from_to_128(r.u64(2 * i), r.u64(2 * i + 1), range, low);
  }
};

// ---- storing into the output dtype (the CPU's rules) ----------------------------------------

enum class Fix { None, BelowB, Positive };

template <class T>
__device__ inline T reduced_next_below(T h) {
  const uint16_t b = h.x;
  if ((b & 0x7FFFu) == 0) return T::from_bits(0x8001u);
  return T::from_bits((b & 0x8000u) ? static_cast<uint16_t>(b + 1u)
                                    : static_cast<uint16_t>(b - 1u));
}

template <class T, Fix F, class C>
__device__ inline T store(C v, C b) {
  if constexpr (::kiln::detail::is_reduced_float_v<T>) {
    T h = ::kiln::detail::convert<T>(v);
    if constexpr (F == Fix::BelowB) {
      if (static_cast<float>(h) >= static_cast<float>(b) && v < b) h = reduced_next_below(h);
    } else if constexpr (F == Fix::Positive) {
      if (static_cast<float>(h) == 0.0f) h = T::from_bits(1u);
    }
    return h;
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                       std::is_floating_point_v<C>) {
    constexpr C lo = static_cast<C>(std::numeric_limits<T>::lowest());
    constexpr C hi = static_cast<C>(std::numeric_limits<T>::max());
    if (v >= hi) return std::numeric_limits<T>::max();
    if (v <= lo) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  } else {
    return ::kiln::detail::convert<T>(v);
  }
}

// out[i] = store(s(i)) for the n elements of out in logical order. Each thread takes groups of
// `per` consecutive elements, whose words lie in one Philox block (per = 4 / words per element),
// so it computes that block once. N - 1 tensor parameters (of type C) follow out in `oc`.
template <class T, Fix F, class C, class S, int N>
__global__ void sample_kernel(T* out, const C* p0, const C* p1, int64_t n, int per,
                              OffsetCalc<N> oc, RngArgs a, S s, C bound) {
  PhiloxCursor r = cursor_of(a);
  const int64_t groups = (n + per - 1) / per;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t end = (g + 1) * per < n ? (g + 1) * per : n;
    for (int64_t i = g * per; i < end; ++i) {
      int64_t off[N];
      oc.get(i, off);
      C p[2] = {C(0), C(0)};
      if constexpr (N > 1) p[0] = p0[off[1]];
      if constexpr (N > 2) p[1] = p1[off[2]];
      out[off[0]] = store<T, F>(static_cast<C>(s(r, static_cast<uint64_t>(i), p)), bound);
    }
  }
}

// The compute type of output dtype T: float for float32/float16/bfloat16, double otherwise
// (Note [Random compute precision] in random_ops.cpp).
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, float> || detail::is_reduced_float_v<T>, float, double>;

template <class T, Fix F, class C, class S, int N>
void launch_sample(OpCall& c, const S& s, C bound, int words) {
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = device_of(out);
  DeviceGuard guard(dev);
  const StreamHandle stream = current_stream(dev);
  const Tensor* ops[N];
  ops[0] = &out;
  for (int k = 1; k < N; ++k) ops[k] = &c.in[k - 1];
  const OffsetCalc<N> oc = make_offset_calc<N>(ops, op_name(c.op));
  const C* p0 = N > 1 ? static_cast<const C*>(c.in[0].data_ptr()) : nullptr;
  const C* p1 = N > 2 ? static_cast<const C*>(c.in[1].data_ptr()) : nullptr;
  const int per = 4 / words;
  sample_kernel<T, F, C, S, N><<<blocks_for((n + per - 1) / per), kThreads, 0, as_stream(stream)>>>(
      static_cast<T*>(out.data_ptr()), p0, p1, n, per, oc, rng_args(c), s, bound);
  check_launch(op_name(c.op), stream);
}

// Runs sampler S<C>{s0, s1} over out[0] for the output dtypes in Mask.
template <uint32_t Mask, template <class> class S, Fix F, int N = 1>
void sample_op(OpCall& c) {
  detail::dispatch_types<Mask>(c.out[0].dtype(), op_name(c.op), [&]<class T>() {
    using C = compute_t<T>;
    KILN_ASSERT(c.compute == (kIsFloat<C> ? DType::Float32 : DType::Float64),
                "random kernel: unexpected compute dtype");
    const S<C> s{static_cast<C>(c.attrs.s0.to_double()), static_cast<C>(c.attrs.s1.to_double())};
    const C bound = F == Fix::BelowB ? s.b : C(0);
    launch_sample<T, F, C, S<C>, N>(c, s, bound, kIsFloat<C> ? 1 : 2);
  });
}

void random_int_op(OpCall& c) {
  const RandomIntS s{static_cast<uint64_t>(c.attrs.ints[0]), c.attrs.s0.to_int()};
  detail::dispatch_types<detail::kRealMask>(c.out[0].dtype(), "random_", [&]<class T>() {
    launch_sample<T, Fix::None, int64_t, RandomIntS, 1>(c, s, 0,
                                                        static_cast<int>(rng_int_words(s.range)));
  });
}

// ---- randperm: a bitonic sort of (64-bit draw j, j) (Note [randperm by sorted keys]) ----------

struct KeyIdx {
  uint64_t key;
  int64_t idx;
};

__device__ inline bool key_less(const KeyIdx& x, const KeyIdx& y) {
  return x.key < y.key || (x.key == y.key && x.idx < y.idx);
}

__global__ void randperm_keys_kernel(KeyIdx* keys, int64_t n, int64_t m, RngArgs a) {
  PhiloxCursor r = cursor_of(a);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < m; j += stride)
    keys[j] = j < n ? KeyIdx{r.u64(static_cast<uint64_t>(j)), j}
                    : KeyIdx{~uint64_t{0}, std::numeric_limits<int64_t>::max()};
}

// One compare-exchange pass of the bitonic network (sizes k, distance j) over m = 2^p keys.
__global__ void bitonic_step_kernel(KeyIdx* keys, int64_t m, int64_t j, int64_t k) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < m;
       i += stride) {
    const int64_t l = i ^ j;
    if (l <= i) continue;
    const KeyIdx x = keys[i], y = keys[l];
    const bool ascending = (i & k) == 0;
    if (ascending ? key_less(y, x) : key_less(x, y)) {
      keys[i] = y;
      keys[l] = x;
    }
  }
}

template <class T>
__global__ void randperm_write_kernel(T* out, int64_t st, const KeyIdx* keys, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride)
    out[j * st] = ::kiln::detail::convert<T>(keys[j].idx);
}

void randperm_op(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = device_of(out);
  DeviceGuard guard(dev);
  const gpuStream_t s = as_stream(current_stream(dev));
  int64_t m = 1;
  while (m < n) m *= 2;
  Tensor buf = ::kiln::detail::empty_impl({2 * m}, DType::Int64, out.device());
  auto* keys = static_cast<KeyIdx*>(buf.data_ptr());
  randperm_keys_kernel<<<blocks_for(m), kThreads, 0, s>>>(keys, n, m, rng_args(c));
  for (int64_t k = 2; k <= m; k *= 2)
    for (int64_t j = k / 2; j > 0; j /= 2)
      bitonic_step_kernel<<<blocks_for(m), kThreads, 0, s>>>(keys, m, j, k);
  detail::dispatch_types<detail::kIntMask | detail::kFloatMask>(
      out.dtype(), "randperm", [&]<class T>() {
        randperm_write_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(out.data_ptr()),
                                                                    out.stride(0), keys, n);
      });
  check_launch("randperm", reinterpret_cast<StreamHandle>(s));
}

// ---- multinomial (Note [multinomial sampling]) ----------------------------------------------

struct MatrixArg {
  int64_t rows, cats, s0, s1;  // sizes and element strides of the probabilities
};

// Row r's normalized cumulative sums, summed left to right in double (one thread per row).
template <class P>
__global__ void multinomial_cdf_kernel(double* cdf, const P* p, MatrixArg a) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= a.rows) return;
  double* row = cdf + r * a.cats;
  double s = 0;
  for (int64_t j = 0; j < a.cats; ++j)
    row[j] = s += ::kiln::detail::convert<double>(p[r * a.s0 + j * a.s1]);
  for (int64_t j = 0; j < a.cats; ++j) row[j] /= s;
}

__global__ void multinomial_draw_kernel(int64_t* out, int64_t os0, int64_t os1, const double* cdf,
                                        int64_t rows, int64_t cats, int64_t ns, RngArgs a) {
  PhiloxCursor rng = cursor_of(a);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * ns;
       i += stride) {
    const int64_t r = i / ns, s = i % ns;
    const double u = rng_uniform_double(rng.u64(static_cast<uint64_t>(i)));
    const double* row = cdf + r * cats;
    int64_t lo = 0, hi = cats;  // first j with row[j] > u (upper_bound)
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (row[mid] <= u)
        lo = mid + 1;
      else
        hi = mid;
    }
    out[r * os0 + s * os1] = lo < cats - 1 ? lo : cats - 1;
  }
}

// Without replacement: the ns smallest keys log(E_j) - log(p_j) of each row in increasing
// (key, j) order, one thread per row (ns passes over the row).
template <class P>
__global__ void multinomial_race_kernel(int64_t* out, int64_t os0, int64_t os1, double* keys,
                                        const P* p, MatrixArg a, int64_t ns, RngArgs ra) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= a.rows) return;
  PhiloxCursor rng = cursor_of(ra);
  double* row = keys + r * a.cats;
  for (int64_t j = 0; j < a.cats; ++j) {
    const double pj = ::kiln::detail::convert<double>(p[r * a.s0 + j * a.s1]);
    const double ex = rng_exponential_double(rng.u64(static_cast<uint64_t>(r * a.cats + j)), 1.0);
    row[j] = pj > 0 ? rng_log(ex) - rng_log(pj) : std::numeric_limits<double>::infinity();
  }
  double prev_key = 0;
  int64_t prev_j = -1;
  for (int64_t s = 0; s < ns; ++s) {
    int64_t best = -1;
    for (int64_t j = 0; j < a.cats; ++j) {
      const double k = row[j];
      const bool after_prev = prev_j < 0 || k > prev_key || (k == prev_key && j > prev_j);
      if (after_prev && (best < 0 || k < row[best])) best = j;
    }
    out[r * os0 + s * os1] = best;
    prev_key = row[best];
    prev_j = best;
  }
}

void multinomial_op(OpCall& c) {
  const Tensor& in = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t rows = in.size(0), cats = in.size(1), ns = out.size(1);
  if (rows == 0 || out.numel() == 0) return;
  const int dev = device_of(out);
  DeviceGuard guard(dev);
  const gpuStream_t s = as_stream(current_stream(dev));
  const MatrixArg m{rows, cats, in.stride(0), in.stride(1)};
  Tensor tmp = ::kiln::detail::empty_impl({rows, cats}, DType::Float64, out.device());
  auto* o = static_cast<int64_t*>(out.data_ptr());
  const RngArgs ra = rng_args(c);
  detail::dispatch_types<detail::kFloatMask>(in.dtype(), "multinomial", [&]<class P>() {
    const P* p = static_cast<const P*>(in.data_ptr());
    const unsigned row_blocks = static_cast<unsigned>((rows + kThreads - 1) / kThreads);
    auto* t = static_cast<double*>(tmp.data_ptr());
    if (c.attrs.flag) {
      multinomial_cdf_kernel<P><<<row_blocks, kThreads, 0, s>>>(t, p, m);
      multinomial_draw_kernel<<<blocks_for(rows * ns), kThreads, 0, s>>>(
          o, out.stride(0), out.stride(1), t, rows, cats, ns, ra);
    } else {
      multinomial_race_kernel<P>
          <<<row_blocks, kThreads, 0, s>>>(o, out.stride(0), out.stride(1), t, p, m, ns, ra);
    }
  });
  check_launch("multinomial", reinterpret_cast<StreamHandle>(s));
}

}  // namespace

void register_random_kernels(::kiln::detail::KernelRegistry& r) {
  using namespace ::kiln::detail;
  r.set(OpId::Uniform, kCUDA, &sample_op<kFloatMask, UniformS, Fix::BelowB>);
  r.set(OpId::Normal, kCUDA, &sample_op<kFloatMask, NormalS, Fix::None>);
  r.set(OpId::LogNormal, kCUDA, &sample_op<kFloatMask, LogNormalS, Fix::None>);
  r.set(OpId::Exponential, kCUDA, &sample_op<kFloatMask, ExponentialS, Fix::Positive>);
  r.set(OpId::Geometric, kCUDA, &sample_op<kIntMask | kFloatMask, GeometricS, Fix::None>);
  r.set(OpId::Cauchy, kCUDA, &sample_op<kFloatMask, CauchyS, Fix::None>);
  r.set(OpId::Bernoulli, kCUDA, &sample_op<kRealMask, BernoulliS, Fix::None>);
  r.set(OpId::NormalTensor, kCUDA, &sample_op<kFloatMask, NormalTensorS, Fix::None, 3>);
  r.set(OpId::BernoulliTensor, kCUDA, &sample_op<kRealMask, BernoulliTensorS, Fix::None, 2>);
  r.set(OpId::RandomInt, kCUDA, &random_int_op);
  r.set(OpId::Randperm, kCUDA, &randperm_op);
  r.set(OpId::Multinomial, kCUDA, &multinomial_op);
}

}  // namespace kiln::gpu
