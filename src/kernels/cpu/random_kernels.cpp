// CPU kernels of the random family: per-element samplers (pure functions of seed, offset and the
// element's logical index, Note [Philox streams]) written through any strides, randperm (random
// keys + sort) and multinomial (inverse CDF with replacement, exponential race without).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/distributions.h"
#include "kernels/philox.h"

namespace kiln::cpu {

namespace {

// Note [Random op contract]
// -------------------------
// The front end (src/ops/random_ops.cpp) checks the arguments, reserves the call's counters with
// Generator::reserve and passes them as attrs.i0 = seed, attrs.i1 = offset (uint64 bit
// patterns). out[0] is the tensor written, with any strides and no two elements sharing memory;
// element i is its i-th element in logical row-major order. c.compute is Float32 or Float64 and
// fixes the words per element of the floating samplers: k = 1 (float math) or k = 2 (double
// math); the front end picks float for float32/float16/bfloat16 outputs and double otherwise.
//   Uniform s0 = from, s1 = to          Normal, LogNormal s0 = mean, s1 = std
//   Exponential s0 = lambda             Geometric, Bernoulli s0 = p
//   Cauchy s0 = median, s1 = sigma
//   NormalTensor: in[0] = mean, in[1] = std, both of the compute dtype, expanded to out's shape.
//   BernoulliTensor: in[0] = p of the compute dtype, expanded to out's shape.
//   RandomInt: s0 = low, ints[0] = range (uint64 bits; 0 = 2^64), k = rng_int_words(range);
//     a 128-bit draw (k = 4) is lo = 64-bit draw 2i, hi = 64-bit draw 2i + 1 (counter off + i).
//   Randperm: out[0] is 1-D of n (k = 2, one key per index; Note [randperm by sorted keys]).
//   Multinomial: in[0] = probabilities [R, C] (validated by the front end), out[0] = int64 [R, S],
//     flag = replacement (k = 2; Note [multinomial sampling]).
// A GPU kernel reproduces the numbers by calling the same sampler structs below (element index ->
// words) from any thread layout.

PhiloxCursor cursor_of(const OpCall& c) {
  return PhiloxCursor(static_cast<uint64_t>(c.attrs.i0), static_cast<uint64_t>(c.attrs.i1));
}

// ---- logical-order walk over up to three operands of one shape ----------------------------

// Walks out[0]'s elements (and inputs of the same shape) in row-major order. Dims of size 1 are
// dropped and neighbours merged where every operand allows it, which keeps the order.
class LogicalWalk {
 public:
  explicit LogicalWalk(const OpCall& c) {
    const Tensor& o = c.out[0];
    add(o);
    for (const Tensor& t : c.in) add(t);
    for (int64_t d = 0; d < o.dim(); ++d) {
      const int64_t n = o.size(d);
      if (n == 1) continue;
      bool merge = !size_.empty();
      for (int k = 0; merge && k < nops_; ++k)
        merge = stride_[k].back() == ops_[k]->stride(d) * n * es_[k];
      if (merge) {
        size_.back() *= n;
        for (int k = 0; k < nops_; ++k) stride_[k].back() = ops_[k]->stride(d) * es_[k];
      } else {
        size_.push_back(n);
        for (int k = 0; k < nops_; ++k) stride_[k].push_back(ops_[k]->stride(d) * es_[k]);
      }
    }
  }

  // body(ptrs, inner_strides, i, n): the n elements i, i + 1, ... of one innermost run; ptrs[k]
  // is operand k's element i, inner_strides[k] its byte stride (operand 0 = out[0]).
  template <class Body>
  void run(int64_t b, int64_t e, const Body& body) const {
    char* p[kOps] = {};
    int64_t inner[kOps] = {};
    const int nd = static_cast<int>(size_.size());
    for (int k = 0; k < nops_; ++k) p[k] = base_[k], inner[k] = nd ? stride_[k][nd - 1] : 0;
    if (nd == 0) {
      body(p, inner, b, e - b);
      return;
    }
    DimVector idx(nd, 0);
    int64_t rem = b;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % size_[d];
      rem /= size_[d];
      for (int k = 0; k < nops_; ++k) p[k] += idx[d] * stride_[k][d];
    }
    while (b < e) {
      const int64_t n = std::min(size_[nd - 1] - idx[nd - 1], e - b);
      body(p, inner, b, n);
      b += n;
      idx[nd - 1] += n;
      for (int k = 0; k < nops_; ++k) p[k] += n * inner[k];
      for (int d = nd - 1; d > 0 && idx[d] == size_[d]; --d) {
        idx[d] = 0;
        ++idx[d - 1];
        for (int k = 0; k < nops_; ++k) p[k] += stride_[k][d - 1] - size_[d] * stride_[k][d];
      }
    }
  }

 private:
  static constexpr int kOps = 3;
  void add(const Tensor& t) {
    KILN_ASSERT(nops_ < kOps, "random kernel: too many operands");
    ops_[nops_] = &t;
    base_[nops_] = static_cast<char*>(t.data_ptr());
    es_[nops_] = t.element_size();
    ++nops_;
  }
  int nops_ = 0;
  const Tensor* ops_[kOps] = {};
  char* base_[kOps] = {};
  int64_t es_[kOps] = {};
  DimVector size_;
  DimVector stride_[kOps];
};

// Random kernels cost ~10 ns per element: smaller chunks than the elementwise grain pay off.
constexpr int64_t kRandomGrain = kGrainSize / 4;

// ---- per-element samplers: element i -> value, from the words i owns -----------------------
// Host/device code (KILN_HD): a GPU kernel that calls these from any thread layout gives the same
// numbers; they belong in a shared header once the GPU kernels exist.

template <class C>
constexpr bool kIsFloat = std::is_same_v<C, float>;

// Uniform [0, 1) of element i: W[i] (k = 1) or the 64-bit draw i (k = 2).
template <class C>
KILN_HD C unit(PhiloxCursor& r, uint64_t i) {
  if constexpr (kIsFloat<C>)
    return rng_uniform_float(r.word(i));
  else
    return rng_uniform_double(r.u64(i));
}

// Standard normal of element i; the Box-Muller pair is cached, so a run computes it once per two
// elements.
template <class C>
struct StdNormal {
  uint64_t pair = ~uint64_t{0};
  RngPair<C> z{};
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    const uint64_t p = i >> 1;
    if (p != pair) {
      if constexpr (kIsFloat<C>)
        z = rng_normal_pair_float(r.word(2 * p), r.word(2 * p + 1));
      else
        z = rng_normal_pair_double(r.u64(2 * p), r.u64(2 * p + 1));
      pair = p;
    }
    return (i & 1u) ? z.second : z.first;
  }
};

template <class C>
struct UniformS {
  C a, b;
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    return rng_uniform_real(unit<C>(r, i), a, b);
  }
};
template <class C>
struct NormalS {
  C mean, std;
  StdNormal<C> n{};
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) { return rng_normal(n(r, i), mean, std); }
};
template <class C>
struct LogNormalS {
  C mean, std;
  StdNormal<C> n{};
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) { return rng_log_normal(n(r, i), mean, std); }
};
template <class C>
struct ExponentialS {
  C lambda;
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    if constexpr (kIsFloat<C>)
      return rng_exponential_float(r.word(i), lambda);
    else
      return rng_exponential_double(r.u64(i), lambda);
  }
};
template <class C>
struct GeometricS {
  C p;
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    if constexpr (kIsFloat<C>)
      return rng_geometric_float(r.word(i), p);
    else
      return rng_geometric_double(r.u64(i), p);
  }
};
template <class C>
struct CauchyS {
  C median, sigma;
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    if constexpr (kIsFloat<C>)
      return rng_cauchy_float(r.word(i), median, sigma);
    else
      return rng_cauchy_double(r.u64(i), median, sigma);
  }
};
template <class C>
struct BernoulliS {
  C p;
  KILN_HD C operator()(PhiloxCursor& r, uint64_t i) {
    if constexpr (kIsFloat<C>)
      return rng_bernoulli_float(r.word(i), p) ? C(1) : C(0);
    else
      return rng_bernoulli_double(r.u64(i), p) ? C(1) : C(0);
  }
};
struct RandomIntS {
  uint64_t range;
  int64_t low;
  KILN_HD int64_t operator()(PhiloxCursor& r, uint64_t i) const {
    if (rng_int_words(range) == 2u) return rng_random_from_to_64(r.u64(i), range, low);
    return rng_random_from_to_128(r.u64(2 * i), r.u64(2 * i + 1), range, low);
  }
};

// ---- storing a computed value into the output dtype ----------------------------------------

enum class Fix { None, BelowB, Positive };

// The largest value of T below h (T = Half or BFloat16, h finite).
template <class T>
T reduced_next_below(T h) {
  const uint16_t b = h.x;
  if ((b & 0x7FFFu) == 0) return T::from_bits(0x8001u);  // +-0 -> -denorm_min
  return T::from_bits((b & 0x8000u) ? static_cast<uint16_t>(b + 1u)
                                    : static_cast<uint16_t>(b - 1u));
}

// Rounds v to T. Reduced floats can round up onto the excluded bound of uniform (Fix::BelowB:
// the value becomes the largest T below b) or down to 0 for exponential (Fix::Positive: the
// smallest positive T). Integers saturate (geometric of a tiny p), bool is v != 0.
template <class T, Fix F, class C>
T store(C v, C b) {
  if constexpr (detail::is_reduced_float_v<T>) {
    T h = detail::convert<T>(v);
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
    return detail::convert<T>(v);
  }
}

// out[i] = store(sampler(i)) over out[0] in logical order, parallel in chunks; each chunk has its
// own cursor and sampler copy, so the values never depend on the chunking.
template <class T, Fix F, class C, class S>
void fill_with(OpCall& c, const S& sampler, C bound) {
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  LogicalWalk walk(c);
  const PhiloxCursor base = cursor_of(c);
  parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
    PhiloxCursor r = base;
    S s = sampler;
    walk.run(b, e, [&](char* const* p, const int64_t* st, int64_t i0, int64_t m) {
      char* q = p[0];
      for (int64_t j = 0; j < m; ++j, q += st[0])
        *reinterpret_cast<T*>(q) =
            store<T, F>(static_cast<C>(s(r, static_cast<uint64_t>(i0 + j))), bound);
    });
  });
}

// Calls f.template operator()<T, C>() for the output dtype (in Mask) and the compute type.
template <uint32_t Mask, class F>
void dispatch_out(const OpCall& c, F&& f) {
  detail::dispatch_types<Mask>(c.out[0].dtype(), op_name(c.op), [&]<class T>() {
    constexpr bool float_ok = std::is_same_v<T, float> || detail::is_reduced_float_v<T>;
    if constexpr (float_ok) {
      if (c.compute == DType::Float32) return f.template operator()<T, float>();
    }
    KILN_ASSERT(c.compute == DType::Float64, "random kernel: unexpected compute dtype");
    return f.template operator()<T, double>();
  });
}

template <class C>
C s0(const OpCall& c) {
  return static_cast<C>(c.attrs.s0.to_double());
}
template <class C>
C s1(const OpCall& c) {
  return static_cast<C>(c.attrs.s1.to_double());
}

void uniform_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    fill_with<T, Fix::BelowB>(c, UniformS<C>{s0<C>(c), s1<C>(c)}, s1<C>(c));
  });
}
void normal_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    fill_with<T, Fix::None>(c, NormalS<C>{s0<C>(c), s1<C>(c)}, C(0));
  });
}
void log_normal_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    fill_with<T, Fix::None>(c, LogNormalS<C>{s0<C>(c), s1<C>(c)}, C(0));
  });
}
void exponential_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    fill_with<T, Fix::Positive>(c, ExponentialS<C>{s0<C>(c)}, C(0));
  });
}
void geometric_kernel(OpCall& c) {
  dispatch_out<detail::kIntMask | detail::kFloatMask>(
      c, [&]<class T, class C>() { fill_with<T, Fix::None>(c, GeometricS<C>{s0<C>(c)}, C(0)); });
}
void cauchy_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    fill_with<T, Fix::None>(c, CauchyS<C>{s0<C>(c), s1<C>(c)}, C(0));
  });
}
void bernoulli_kernel(OpCall& c) {
  dispatch_out<detail::kRealMask>(
      c, [&]<class T, class C>() { fill_with<T, Fix::None>(c, BernoulliS<C>{s0<C>(c)}, C(0)); });
}
void random_int_kernel(OpCall& c) {
  const RandomIntS s{static_cast<uint64_t>(c.attrs.ints[0]), c.attrs.s0.to_int()};
  detail::dispatch_types<detail::kRealMask>(
      c.out[0].dtype(), "random_", [&]<class T>() { fill_with<T, Fix::None>(c, s, int64_t{0}); });
}

// ---- samplers with per-element parameters (inputs of the compute dtype) --------------------

// NormalTensor: out[i] = mean[i] + std[i] * z_i with z_i the standard normal of element i.
void normal_tensor_kernel(OpCall& c) {
  dispatch_out<detail::kFloatMask>(c, [&]<class T, class C>() {
    const int64_t n = c.out[0].numel();
    if (n == 0) return;
    LogicalWalk walk(c);
    const PhiloxCursor base = cursor_of(c);
    parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
      PhiloxCursor r = base;
      StdNormal<C> z;
      walk.run(b, e, [&](char* const* p, const int64_t* st, int64_t i0, int64_t m) {
        char *q = p[0], *mp = p[1], *sp = p[2];
        for (int64_t j = 0; j < m; ++j, q += st[0], mp += st[1], sp += st[2]) {
          const C v = rng_normal(z(r, static_cast<uint64_t>(i0 + j)),
                                 *reinterpret_cast<const C*>(mp), *reinterpret_cast<const C*>(sp));
          *reinterpret_cast<T*>(q) = store<T, Fix::None>(v, C(0));
        }
      });
    });
  });
}

// BernoulliTensor: out[i] = u_i < p[i].
void bernoulli_tensor_kernel(OpCall& c) {
  dispatch_out<detail::kRealMask>(c, [&]<class T, class C>() {
    const int64_t n = c.out[0].numel();
    if (n == 0) return;
    LogicalWalk walk(c);
    const PhiloxCursor base = cursor_of(c);
    parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
      PhiloxCursor r = base;
      walk.run(b, e, [&](char* const* p, const int64_t* st, int64_t i0, int64_t m) {
        char *q = p[0], *pp = p[1];
        for (int64_t j = 0; j < m; ++j, q += st[0], pp += st[1]) {
          BernoulliS<C> s{*reinterpret_cast<const C*>(pp)};
          *reinterpret_cast<T*>(q) = store<T, Fix::None>(s(r, static_cast<uint64_t>(i0 + j)), C(0));
        }
      });
    });
  });
}

// ---- randperm ------------------------------------------------------------------------------

// Note [randperm by sorted keys]
// Index j gets the key K_j = 64-bit draw j (k = 2); the permutation lists 0..n-1 in increasing
// (K_j, j) order, i.e. a stable sort by key. Keys are i.i.d. uniform, so every order is equally
// likely except through ties, which have probability below n^2 / 2^65 (3e-8 for n = 1e6) and
// are broken by index. A GPU kernel gets the same permutation from a stable radix sort of
// (K_j, j) pairs; no step depends on the thread count.
void randperm_kernel(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  std::vector<std::pair<uint64_t, int64_t>> keys(static_cast<size_t>(n));
  const PhiloxCursor base = cursor_of(c);
  parallel_for(0, n, kRandomGrain, [&](int64_t b, int64_t e) {
    PhiloxCursor r = base;
    for (int64_t j = b; j < e; ++j) keys[j] = {r.u64(static_cast<uint64_t>(j)), j};
  });
  std::sort(keys.begin(), keys.end());
  const int64_t st = out.stride(0);
  detail::dispatch_types<detail::kIntMask | detail::kFloatMask>(
      out.dtype(), "randperm", [&]<class T>() {
        T* o = static_cast<T*>(out.data_ptr());
        parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) o[j * st] = detail::convert<T>(keys[j].second);
        });
      });
}

// ---- multinomial ---------------------------------------------------------------------------

// Note [multinomial sampling]
// With replacement, sample s of row r is element i = r * S + s: u = 53-bit uniform of the 64-bit
// draw i, and the result is the first category whose normalized cumulative sum (double, summed
// left to right) exceeds u; categories of probability 0 are never chosen.
// Without replacement (exponential race, equivalent to Gumbel-top-k): category j of row r is
// element i = r * C + j with E = exponential(1) of the 64-bit draw i and the key
// log(E) - log(p_j) (+inf for p_j = 0); the S categories of smallest (key, j) in increasing
// order are the samples. This has the law of drawing one by one without replacement, in order.
template <class P>
void multinomial_impl(OpCall& c) {
  const Tensor& in = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t rows = in.size(0), cats = in.size(1), ns = out.size(1);
  const int64_t is0 = in.stride(0), is1 = in.stride(1), os0 = out.stride(0), os1 = out.stride(1);
  const P* p = static_cast<const P*>(in.data_ptr());
  int64_t* o = static_cast<int64_t*>(out.data_ptr());
  const PhiloxCursor base = cursor_of(c);
  auto prob = [&](int64_t r, int64_t j) {
    return static_cast<double>(detail::convert<double>(p[r * is0 + j * is1]));
  };
  if (rows == 0) return;
  if (c.attrs.flag) {
    std::vector<double> cdf(static_cast<size_t>(rows * cats));
    parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(cats, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     double* row = cdf.data() + r * cats;
                     double s = 0;
                     for (int64_t j = 0; j < cats; ++j) row[j] = s += prob(r, j);
                     for (int64_t j = 0; j < cats; ++j) row[j] /= s;
                   }
                 });
    parallel_for(0, rows * ns, kRandomGrain, [&](int64_t b, int64_t e) {
      PhiloxCursor rng = base;
      for (int64_t i = b; i < e; ++i) {
        const int64_t r = i / ns, s = i % ns;
        const double u = rng_uniform_double(rng.u64(static_cast<uint64_t>(i)));
        const double* row = cdf.data() + r * cats;
        const int64_t j = std::upper_bound(row, row + cats, u) - row;
        o[r * os0 + s * os1] = std::min(j, cats - 1);
      }
    });
    return;
  }
  parallel_for(
      0, rows, std::max<int64_t>(1, kRandomGrain / std::max<int64_t>(cats, 1)),
      [&](int64_t b, int64_t e) {
        PhiloxCursor rng = base;
        std::vector<std::pair<double, int64_t>> keys(static_cast<size_t>(cats));
        for (int64_t r = b; r < e; ++r) {
          for (int64_t j = 0; j < cats; ++j) {
            const double pj = prob(r, j);
            const double ex =
                rng_exponential_double(rng.u64(static_cast<uint64_t>(r * cats + j)), 1.0);
            keys[j] = {
                pj > 0 ? std::log(ex) - std::log(pj) : std::numeric_limits<double>::infinity(), j};
          }
          std::partial_sort(keys.begin(), keys.begin() + ns, keys.end());
          for (int64_t s = 0; s < ns; ++s) o[r * os0 + s * os1] = keys[s].second;
        }
      });
}

void multinomial_kernel(OpCall& c) {
  detail::dispatch_types<detail::kFloatMask>(c.in[0].dtype(), "multinomial",
                                             [&]<class P>() { multinomial_impl<P>(c); });
}

}  // namespace

void register_random_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Uniform, kCPU, &uniform_kernel);
  r.set(OpId::Normal, kCPU, &normal_kernel);
  r.set(OpId::NormalTensor, kCPU, &normal_tensor_kernel);
  r.set(OpId::LogNormal, kCPU, &log_normal_kernel);
  r.set(OpId::Exponential, kCPU, &exponential_kernel);
  r.set(OpId::Geometric, kCPU, &geometric_kernel);
  r.set(OpId::Cauchy, kCPU, &cauchy_kernel);
  r.set(OpId::Bernoulli, kCPU, &bernoulli_kernel);
  r.set(OpId::BernoulliTensor, kCPU, &bernoulli_tensor_kernel);
  r.set(OpId::RandomInt, kCPU, &random_int_kernel);
  r.set(OpId::Randperm, kCPU, &randperm_kernel);
  r.set(OpId::Multinomial, kCPU, &multinomial_kernel);
}

}  // namespace kiln::cpu
