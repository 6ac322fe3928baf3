// CPU kernel of the Bmm primitive: out[b] = alpha * A[b] @ B[b] + beta * C[b] for every dtype but
// bool and float8. float32/64 and complex go to OpenBLAS; float16/bfloat16 are widened to float32,
// multiplied by sgemm and rounded once; integers use blocked loops with wrapping 64-bit sums.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/cpu/matmul_blas.h"

namespace kiln::cpu {

namespace {

// Note [Bmm kernel contract]: in[0] = A [B, M, K], in[1] = B [B, K, N], optional in[2] = C
// already expanded to [B, M, N] (any strides, zeros allowed); out[0] [B, M, N] is allocated by the
// front end (or is a caller's out=/in-place tensor, possibly C itself). attrs: s0 = alpha
// (default 1), s1 = beta (default 0; beta == 0 means C is not read, so NaN in C is not propagated,
// as in BLAS and PyTorch), flag = conjugate A (vdot). All tensors share one dtype.

// A 3-D strided operand (batch, rows, cols), strides in elements.
struct View3 {
  char* p;
  int64_t n[3];
  int64_t s[3];
};

View3 view3(const Tensor& t) {
  return {static_cast<char*>(t.data_ptr()),
          {t.size(0), t.size(1), t.size(2)},
          {t.stride(0), t.stride(1), t.stride(2)}};
}

MatDesc mat_of(const View3& v) { return {v.p, v.n[1], v.n[2], v.s[1], v.s[2]}; }

// Strides BLAS can take as ints (beyond that the sequential path raises a clear error).
bool blas_int_strides(const View3& v) {
  return v.s[1] <= INT32_MAX && v.s[2] <= INT32_MAX && v.n[1] <= INT32_MAX && v.n[2] <= INT32_MAX;
}

// dst[i] = f(src[i]) over a 3-D index space (dst and src with their own strides).
template <class S, class D, class F>
void map3(const S* src, const int64_t* ss, D* dst, const int64_t* ds, const int64_t* n, F f) {
  int64_t rows = n[0] * n[1];
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n[2], 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   int64_t i0 = r / n[1], i1 = r % n[1];
                   const S* s = src + i0 * ss[0] + i1 * ss[1];
                   D* d = dst + i0 * ds[0] + i1 * ds[1];
                   for (int64_t i2 = 0; i2 < n[2]; ++i2) d[i2 * ds[2]] = f(s[i2 * ss[2]]);
                 }
               });
}

// A contiguous copy of v as type D (converted by f) in buf; returns the view of the copy.
template <class S, class D, class F>
View3 pack(const View3& v, std::vector<D>& buf, F f) {
  buf.resize(static_cast<size_t>(v.n[0] * v.n[1] * v.n[2]));
  View3 out{
      reinterpret_cast<char*>(buf.data()), {v.n[0], v.n[1], v.n[2]}, {v.n[1] * v.n[2], v.n[2], 1}};
  map3(reinterpret_cast<const S*>(v.p), v.s, buf.data(), out.s, v.n, f);
  return out;
}

bool same_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->has_storage() && b.impl()->has_storage() &&
         a.impl()->storage().get() == b.impl()->storage().get();
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() && a.strides() == b.strides();
}

// Below this many multiply-adds per matrix OpenBLAS runs single-threaded, so batches of such
// matrices are spread over kiln's threads instead (one GEMM call per batch either way).
constexpr int64_t kSmallGemm = 64 * 64 * 64;
constexpr int64_t kSmallGemv = 8192;

template <class T>
void gemm_batches(const View3& a, const View3& b, const View3& c, T alpha, T beta) {
  int64_t nb = c.n[0];
  int64_t work = c.n[1] * c.n[2] * std::max<int64_t>(a.n[2], 1);
  auto one = [&](int64_t i) {
    MatDesc ma = mat_of(a), mb = mat_of(b), mc = mat_of(c);
    ma.p = static_cast<T*>(ma.p) + i * a.s[0];
    mb.p = static_cast<T*>(mb.p) + i * b.s[0];
    mc.p = static_cast<T*>(mc.p) + i * c.s[0];
    blas_gemm<T>(ma, mb, mc, alpha, beta);
  };
  // GEMV (one row or column) goes multi-threaded in OpenBLAS from far fewer elements.
  bool vector_shape = c.n[1] == 1 || c.n[2] == 1;
  if (nb > 1 && work <= (vector_shape ? kSmallGemv : kSmallGemm) && get_num_threads() > 1 &&
      blas_int_strides(a) && blas_int_strides(b) && blas_int_strides(c)) {
    parallel_for(0, nb, std::max<int64_t>(1, kGrainSize / work), [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) one(i);
    });
  } else {
    sync_blas_threads();
    for (int64_t i = 0; i < nb; ++i) one(i);
  }
}

bool out_writable_by_blas(const View3& o) {
  MatDesc m{o.p, o.n[1], o.n[2], o.s[1], o.s[2]};
  return row_major_ld(m) >= 0 || row_major_ld(m.t()) >= 0;
}

// ---- float32/64, complex: straight to BLAS (also the compute path of float16/bfloat16) ----
// target holds beta * C already when use_c (or is left to BLAS's beta); A and B any strides.
template <class T>
void blas_bmm(View3 a, View3 b, const View3& target, T alpha, T beta, bool conj_a) {
  std::vector<T> abuf, bbuf;
  if (conj_a) {
    if constexpr (detail::is_complex_v<T>) a = pack<T, T>(a, abuf, [](T v) { return conj(v); });
  }
  if (!conj_a && !blas_readable(mat_of(a))) a = pack<T, T>(a, abuf, [](T v) { return v; });
  if (!blas_readable(mat_of(b))) b = pack<T, T>(b, bbuf, [](T v) { return v; });
  gemm_batches<T>(a, b, target, alpha, beta);
}

template <class T>
T scalar_as(const Scalar& s) {
  if constexpr (detail::is_complex_v<T>) {
    complex<double> v = s.to<complex<double>>();
    return T(static_cast<decltype(T().real())>(v.real()),
             static_cast<decltype(T().real())>(v.imag()));
  } else {
    return static_cast<T>(s.to<double>());
  }
}

bool scalar_is_zero(const Scalar& s) {
  complex<double> v = s.to<complex<double>>();
  return v.real() == 0 && v.imag() == 0;
}

// Float path shared by the BLAS dtypes (Acc == T) and the 16-bit floats (Acc == float): computes
// in a buffer of Acc when the output cannot be written directly.
template <class T, class Acc>
void float_bmm(OpCall& c, const View3& a, const View3& b, const View3* cin, const View3& out,
               bool out_aliases, bool c_is_out) {
  constexpr bool direct_type = std::is_same_v<T, Acc>;
  Acc alpha = scalar_as<Acc>(c.attrs.has_s0 ? c.attrs.s0 : Scalar(1));
  Scalar beta_s = c.attrs.has_s1 ? c.attrs.s1 : Scalar(0);
  bool use_c = cin != nullptr && !scalar_is_zero(beta_s);
  Acc beta = use_c ? scalar_as<Acc>(beta_s) : Acc(0);
  int64_t k = a.n[2];
  auto widen = [](T v) { return detail::convert<Acc>(v); };

  // The matrix BLAS writes: the output itself, or a contiguous Acc buffer.
  bool direct =
      direct_type && !out_aliases && out_writable_by_blas(out) && (out.n[0] == 1 || out.s[0] != 0);
  std::vector<Acc> tbuf;
  View3 target = out;
  if (!direct) {
    tbuf.resize(static_cast<size_t>(out.n[0] * out.n[1] * out.n[2]));
    target = {reinterpret_cast<char*>(tbuf.data()),
              {out.n[0], out.n[1], out.n[2]},
              {out.n[1] * out.n[2], out.n[2], 1}};
  }
  if (use_c && !(direct && c_is_out))
    map3(reinterpret_cast<const T*>(cin->p), cin->s, reinterpret_cast<Acc*>(target.p), target.s,
         target.n, widen);

  if (k == 0 || alpha == Acc(0)) {  // no product: target = beta * C, or zeros
    Acc* tp = reinterpret_cast<Acc*>(target.p);
    map3(tp, target.s, tp, target.s, target.n,
         [&](Acc v) { return use_c ? (beta == Acc(1) ? v : beta * v) : Acc(0); });
  } else if constexpr (direct_type) {
    blas_bmm<T>(a, b, target, alpha, beta, c.attrs.flag);
  } else {
    std::vector<Acc> abuf, bbuf;
    View3 a32 = pack<T, Acc>(a, abuf, widen), b32 = pack<T, Acc>(b, bbuf, widen);
    gemm_batches<Acc>(a32, b32, target, alpha, beta);
  }
  if (!direct)
    map3(reinterpret_cast<const Acc*>(target.p), target.s, reinterpret_cast<T*>(out.p), out.s,
         out.n, [](Acc v) { return detail::convert<T>(v); });
}

// ---- integers: exact sums modulo 2^64, truncated to T (the same wrapping as PyTorch's) ----
template <class T>
void int_bmm(OpCall& c, const View3& a, const View3& b, const View3* cin, const View3& out) {
  using U = uint64_t;
  auto widen = [](T v) { return static_cast<U>(static_cast<int64_t>(v)); };
  U alpha = static_cast<U>((c.attrs.has_s0 ? c.attrs.s0 : Scalar(1)).to<int64_t>());
  Scalar beta_s = c.attrs.has_s1 ? c.attrs.s1 : Scalar(0);
  bool use_c = cin != nullptr && !scalar_is_zero(beta_s);
  U beta = use_c ? static_cast<U>(beta_s.to<int64_t>()) : 0;
  int64_t nb = out.n[0], m = out.n[1], n = out.n[2], k = a.n[2];

  std::vector<U> abuf, bbuf, cbuf, acc(static_cast<size_t>(nb * m * n), 0);
  pack<T, U>(a, abuf, widen);
  pack<T, U>(b, bbuf, widen);
  if (use_c) pack<T, U>(*cin, cbuf, widen);  // before out is written (C may be out)
  const U* ap = abuf.data();
  const U* bp = bbuf.data();
  constexpr int64_t kTileN = 256, kTileK = 128;
  int64_t rows = nb * m;
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * k, 1));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t n0 = 0; n0 < n; n0 += kTileN) {
      int64_t n1 = std::min(n, n0 + kTileN);
      for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
        int64_t k1 = std::min(k, k0 + kTileK);
        for (int64_t r = r0; r < r1; ++r) {
          const U* arow = ap + r * k;
          const U* bmat = bp + (r / m) * k * n;
          U* crow = acc.data() + r * n;
          for (int64_t kk = k0; kk < k1; ++kk) {
            U av = arow[kk];
            const U* brow = bmat + kk * n;
            for (int64_t j = n0; j < n1; ++j) crow[j] += av * brow[j];
          }
        }
      }
    }
  });
  View3 accv{reinterpret_cast<char*>(acc.data()), {nb, m, n}, {m * n, n, 1}};
  if (use_c) {
    const U* cp = cbuf.data();
    U* accp = acc.data();
    parallel_for(0, nb * m * n, kGrainSize, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) accp[i] = alpha * accp[i] + beta * cp[i];
    });
  } else if (alpha != 1) {
    U* accp = acc.data();
    for (int64_t i = 0; i < nb * m * n; ++i) accp[i] *= alpha;
  }
  map3(reinterpret_cast<const U*>(accv.p), accv.s, reinterpret_cast<T*>(out.p), out.s, out.n,
       [](U v) { return static_cast<T>(v); });
}

void bmm_kernel(OpCall& c) {
  const Tensor& ta = c.in[0];
  const Tensor& tb = c.in[1];
  const Tensor* tc = c.in.size() > 2 && c.in[2].defined() ? &c.in[2] : nullptr;
  const Tensor& to = c.out[0];
  KILN_ASSERT(ta.dim() == 3 && tb.dim() == 3 && to.dim() == 3, "bmm kernel expects 3-D operands");
  if (to.numel() == 0) return;
  View3 a = view3(ta), b = view3(tb), out = view3(to);
  View3 cv{};
  if (tc) cv = view3(*tc);
  bool c_is_out = tc && same_view(*tc, to);
  bool aliases =
      same_storage(to, ta) || same_storage(to, tb) || (tc && !c_is_out && same_storage(to, *tc));
  constexpr uint32_t kMask = detail::kFloatMask | detail::kComplexMask | detail::kIntMask;
  detail::dispatch_types<kMask>(ta.dtype(), "bmm", [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      int_bmm<T>(c, a, b, tc ? &cv : nullptr, out);
    } else {
      float_bmm<T, detail::opmath_t<T>>(c, a, b, tc ? &cv : nullptr, out, aliases, c_is_out);
    }
  });
}

}  // namespace

void register_matmul_kernels(detail::KernelRegistry& r) { r.set(OpId::Bmm, kCPU, &bmm_kernel); }

}  // namespace kiln::cpu
