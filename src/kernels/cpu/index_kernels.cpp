// CPU kernels of the along-one-dim index ops (index_select, gather, scatter family, index_add,
// index_copy, index_fill) and the registration of the whole index family.
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dispatch/registry.h"
#include "kernels/cpu/index_kernels_util.h"
#include "kernels/cpu/iter.h"
#include "ops/tensor_factory.h"

namespace kiln::cpu {

void copy_raw(const Tensor& dst, const Tensor& src) {
  if (dst.is_same(src) || dst.numel() == 0) return;
  OpCall c(OpId::Copy);
  c.in.push_back(src);
  c.out.push_back(dst);
  detail::find_kernel(OpId::Copy, kCPU)(c);
}

void check_index_bounds(const Tensor& idx, int64_t n, int64_t dim, const char* op) {
  if (idx.numel() == 0) return;
  std::atomic<bool> bad{false};
  std::atomic<int64_t> bad_value{0};
  dispatch_index_type(idx.dtype(), [&]<class IT>() {
    StridedIter it;
    it.add(idx);
    it.build(idx.sizes());
    it.for_each([&](char** d, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; ++i) {
        int64_t v = *reinterpret_cast<const IT*>(d[0] + i * s[0]);
        if (v < -n || v >= n) {
          if (!bad.exchange(true)) bad_value = v;
          return;
        }
      }
    });
  });
  KILN_CHECK(!bad.load(), "[", op, "] index ", bad_value.load(), " is out of bounds for dimension ",
             dim, " with size ", n);
}

namespace {

// t's strides for a view with nd dims (index ops treat 0-dim tensors as 1-D of size 1).
DimVector strides_for(const Tensor& t, int64_t nd) {
  if (t.dim() == nd) return DimVector(t.strides().begin(), t.strides().end());
  return DimVector(nd, 0);  // 0-dim t viewed as [1], or a view with no dims
}

// strides_for with the stride at `dim` set to 0 (when there is a dim).
DimVector strides_without(const Tensor& t, int64_t nd, int64_t dim) {
  DimVector r = strides_for(t, nd);
  if (nd > 0) r[dim] = 0;
  return r;
}

// One inner run of the gather engine (byte pointers and strides; indices already checked).
template <class U, class IT>
KILN_NOINLINE void gather_run(char* o, int64_t os, const char* x, int64_t xs_, const char* ip,
                              int64_t is, int64_t m, int64_t xs, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    const int64_t j = wrap_index(*reinterpret_cast<const IT*>(ip + i * is), n);
    *reinterpret_cast<U*>(o + i * os) = *reinterpret_cast<const U*>(x + i * xs_ + j * xs);
  }
}

// ---- gather engine: out[p] = x[p with coordinate dim replaced by idx[p]] ----
// xv: x's geometry over out's shape with stride 0 at dim; iv: the index over out's shape.
void gather_engine(const Tensor& out, const Tensor& x, const Tensor& iv, int64_t dim) {
  if (out.numel() == 0) return;
  Tensor xv =
      detail::make_view(x, out.sizes(), strides_without(x, out.dim(), dim), x.storage_offset());
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  const int64_t xs = (x.dim() == 0 ? 0 : x.stride(dim)) * x.element_size();
  StridedIter it;
  it.add(out);
  it.add(xv);
  it.add(iv);
  it.build(out.sizes());
  dispatch_element_size(out.element_size(), [&]<class U>() {
    dispatch_index_type(iv.dtype(), [&]<class IT>() {
      it.for_each([&](char** d, const int64_t* s, int64_t m) {
        gather_run<U, IT>(d[0], s[0], d[1], s[1], d[2], s[2], m, xs, n);
      });
    });
  });
}

// dst[r] = src[idx[r * istride]] for r in [b, e) (the 1-D case, kept in a function of its own so
// that the compiler sees plain pointers). Returns false at an out-of-range index (*bad_value).
// Rows read in index order are scattered over the source: the kernels below touch the source
// row kPrefetchAhead rows ahead so that its cache miss overlaps the copies in between.
constexpr int64_t kPrefetchAhead = 48;

template <class IT>
inline void prefetch_row(const IT* idx, int64_t istride, const char* src, int64_t row_bytes,
                         int64_t n, int64_t r) {
  const int64_t v = static_cast<int64_t>(idx[r * istride]);
  const int64_t w = v < 0 ? v + n : v;
  if (static_cast<uint64_t>(w) < static_cast<uint64_t>(n)) __builtin_prefetch(src + w * row_bytes);
}

template <class U, class IT>
KILN_NOINLINE bool gather_1d(const IT* idx, int64_t istride, const U* src, U* dst, int64_t n,
                             int64_t b, int64_t e, int64_t* bad_value) {
  for (int64_t r = b; r < e; ++r) {
    if (r + kPrefetchAhead < e)
      prefetch_row(idx, istride, reinterpret_cast<const char*>(src), sizeof(U), n,
                   r + kPrefetchAhead);
    const int64_t v = static_cast<int64_t>(idx[r * istride]);
    const int64_t w = v < 0 ? v + n : v;
    if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(n)) {
      *bad_value = v;
      return false;
    }
    dst[r] = src[w];
  }
  return true;
}

// Rows [b, e) of the [outer, k, inner] output: dst row (oo, kk) = src row (oo, idx[kk]).
template <class U, class IT>
KILN_NOINLINE bool gather_rows(const IT* idx, int64_t istride, const U* src, U* dst, int64_t n,
                               int64_t k, int64_t inner, int64_t b, int64_t e, int64_t* bad_value) {
  int64_t oo = b / k, kk = b - oo * k;
  for (int64_t r = b; r < e; ++r) {
    const int64_t v = static_cast<int64_t>(idx[kk * istride]);
    const int64_t w = v < 0 ? v + n : v;
    if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(n)) {
      *bad_value = v;
      return false;
    }
    const U* sr = src + (oo * n + w) * inner;
    U* dr = dst + r * inner;
    for (int64_t i = 0; i < inner; ++i) dr[i] = sr[i];
    if (++kk == k) kk = 0, ++oo;
  }
  return true;
}

// outer == 1 rows of kBytes bytes (a multiple of 16): dst row r = src row idx[r], rows [b, e).
// With `stream` (outputs far larger than the caches, dst 16-byte aligned) the rows are written
// with non-temporal stores, which skip reading the destination lines into the cache first.
template <int64_t kBytes, class IT>
KILN_NOINLINE bool gather_rows_fixed(const IT* idx, int64_t istride, const char* src, char* dst,
                                     int64_t n, int64_t b, int64_t e, bool stream,
                                     int64_t* bad_value) {
  static_assert(kBytes % 16 == 0);
  for (int64_t r = b; r < e; ++r) {
    if (r + kPrefetchAhead < e) prefetch_row(idx, istride, src, kBytes, n, r + kPrefetchAhead);
    const int64_t v = static_cast<int64_t>(idx[r * istride]);
    const int64_t w = v < 0 ? v + n : v;
    if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(n)) {
      *bad_value = v;
      return false;
    }
    const char* sr = src + w * kBytes;
    char* dr = dst + r * kBytes;
#if defined(__SSE2__)
    if (stream) {
      for (int64_t k = 0; k < kBytes; k += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(dr + k),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(sr + k)));
      continue;
    }
#endif
    std::memcpy(dr, sr, kBytes);
  }
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#else
  (void)stream;
#endif
  return true;
}

// f.template operator()<kBytes>() for the row sizes gather_rows_fixed handles; false otherwise.
template <class F>
bool dispatch_row_bytes(int64_t bytes, F&& f) {
  switch (bytes) {
    case 16:
      return f.template operator()<16>(), true;
    case 32:
      return f.template operator()<32>(), true;
    case 48:
      return f.template operator()<48>(), true;
    case 64:
      return f.template operator()<64>(), true;
    case 128:
      return f.template operator()<128>(), true;
    case 256:
      return f.template operator()<256>(), true;
    default:
      return false;
  }
}

// Elements below which a 1-D index_select stays on one thread.
constexpr int64_t kSerialGather = int64_t{1} << 22;

// Output bytes above which index_select streams its stores (well past a core's L2).
constexpr int64_t kStreamBytes = int64_t{8} << 20;

// index_select of contiguous x into contiguous out: whole rows of `inner` elements. Checks
// the indices as it goes; returns false (nothing written) when the layout does not fit, and
// sets *bad to an out-of-range index when it meets one.
bool index_select_rows(const Tensor& out, const Tensor& x, const Tensor& index, int64_t dim,
                       std::atomic<bool>& bad, std::atomic<int64_t>& bad_value) {
  if (!x.is_contiguous() || !out.is_contiguous() || x.dim() == 0) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t n = x.size(dim), k = index.numel();
  const int64_t istride = index.dim() == 0 ? 0 : index.stride(0);
  dispatch_index_type(index.dtype(), [&]<class IT>() {
    dispatch_element_size(x.element_size(), [&]<class U>() {
      const IT* idx = static_cast<const IT*>(index.data_ptr());
      const U* src = static_cast<const U*>(x.data_ptr());
      U* dst = static_cast<U*>(out.data_ptr());
      const int64_t grain = std::max<int64_t>(1, kGrainSize / inner);
      if (outer == 1 && inner == 1) {
        // Single elements: a thread gathers ~1 ns per element with prefetching, so a parallel
        // region (microseconds to start, far more when the machine is shared) pays only for
        // millions of elements.
        parallel_for(0, k, kSerialGather, [&](int64_t b, int64_t e) {
          int64_t v = 0;
          if (!gather_1d<U, IT>(idx, istride, src, dst, n, b, e, &v) && !bad.exchange(true))
            bad_value = v;
        });
        return;
      }
      const int64_t row_bytes = inner * static_cast<int64_t>(sizeof(U));
      const bool stream = out.numel() * static_cast<int64_t>(sizeof(U)) >= kStreamBytes &&
                          reinterpret_cast<uintptr_t>(dst) % 16 == 0;
      if (outer == 1 && dispatch_row_bytes(row_bytes, [&]<int64_t kBytes>() {
            parallel_for(0, k, grain, [&](int64_t b, int64_t e) {
              int64_t v = 0;
              if (!gather_rows_fixed<kBytes, IT>(idx, istride, reinterpret_cast<const char*>(src),
                                                 reinterpret_cast<char*>(dst), n, b, e, stream,
                                                 &v) &&
                  !bad.exchange(true))
                bad_value = v;
            });
          }))
        return;
      parallel_for(0, outer * k, grain, [&](int64_t b, int64_t e) {
        int64_t v = 0;
        if (!gather_rows<U, IT>(idx, istride, src, dst, n, k, inner, b, e, &v) &&
            !bad.exchange(true))
          bad_value = v;
      });
    });
  });
  return true;
}

void index_select_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &index = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  // A caller's out= tensor must stay untouched on error: check first. A fresh output may be
  // partly written before the error (the caller never sees it).
  if (c.provided_out || out.numel() == 0) check_index_bounds(index, n, dim, "index_select");
  if (out.numel() == 0) return;
  std::atomic<bool> bad{false};
  std::atomic<int64_t> bad_value{0};
  if (index_select_rows(out, x, index, dim, bad, bad_value)) {
    KILN_CHECK(!bad.load(), "[index_select] index ", bad_value.load(),
               " is out of bounds for dimension ", dim, " with size ", n);
    return;
  }
  if (!c.provided_out) check_index_bounds(index, n, dim, "index_select");
  // The index over out's shape: its stride at dim, 0 elsewhere.
  DimVector is(out.dim(), 0);
  if (out.dim() > 0) is[dim] = index.dim() == 0 ? 0 : index.stride(0);
  Tensor iv = detail::make_view(index, out.sizes(), is, index.storage_offset());
  gather_engine(out, x, iv, dim);
}

// gather of contiguous tensors whose index matches x outside dim, as [outer, k, inner] /
// [outer, n, inner]: out[o][j][i] = x[o][idx[o][j][i]][i], positions [b, e) of outer * k.
template <class U, class IT>
KILN_NOINLINE void gather_contig(const IT* idx, const U* x, U* out, int64_t n, int64_t k,
                                 int64_t inner, int64_t b, int64_t e) {
  int64_t o = b / k, j = b - o * k;
  for (int64_t r = b; r < e; ++r) {
    const IT* ir = idx + r * inner;
    U* dst = out + r * inner;
    const U* xs = x + o * n * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = xs[wrap_index(ir[i], n) * inner + i];
    if (++j == k) j = 0, ++o;
  }
}

void gather_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &index = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  check_index_bounds(index, x.dim() == 0 ? 1 : x.size(dim), dim, "gather");
  bool contig = x.dim() > 0 && x.dim() == index.dim() && x.is_contiguous() &&
                index.is_contiguous() && out.is_contiguous() && out.numel() > 0;
  for (int64_t d = 0; contig && d < x.dim(); ++d)
    if (d != dim && x.size(d) != index.size(d)) contig = false;
  if (!contig) {
    gather_engine(out, x, index, dim);
    return;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t n = x.size(dim), k = index.size(dim);
  dispatch_element_size(x.element_size(), [&]<class U>() {
    dispatch_index_type(index.dtype(), [&]<class IT>() {
      const IT* idx = static_cast<const IT*>(index.data_ptr());
      const U* xp = static_cast<const U*>(x.data_ptr());
      U* op = static_cast<U*>(out.data_ptr());
      parallel_for(
          0, outer * k, std::max<int64_t>(1, kGrainSize / inner),
          [&](int64_t b, int64_t e) { gather_contig<U, IT>(idx, xp, op, n, k, inner, b, e); });
    });
  });
}

// ---- scatter engine ----
enum class Red { None, Add, Mul, Mean, Max, Min };

template <class T, Red R>
inline void combine(T* dst, T v) {
  using O = detail::opmath_t<T>;
  if constexpr (R == Red::None) {
    *dst = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (R == Red::Add || R == Red::Mean || R == Red::Max)
      *dst = *dst || v;
    else
      *dst = *dst && v;
  } else if constexpr (R == Red::Add || R == Red::Mean) {
    *dst = detail::convert<T>(static_cast<O>(detail::convert<O>(*dst) + detail::convert<O>(v)));
  } else if constexpr (R == Red::Mul) {
    *dst = detail::convert<T>(static_cast<O>(detail::convert<O>(*dst) * detail::convert<O>(v)));
  } else if constexpr (detail::is_complex_v<T>) {
    KILN_ASSERT(false, "complex amax/amin");
  } else {
    O a = detail::convert<O>(*dst), b = detail::convert<O>(v);
    if constexpr (std::is_floating_point_v<O>) {
      if (a != a || b != b) {
        *dst = detail::convert<T>(a != a ? a : b);
        return;
      }
    }
    if constexpr (R == Red::Max)
      *dst = a < b ? v : *dst;
    else
      *dst = b < a ? v : *dst;
  }
}

// For every position p of `shape` (the index's shape) with coordinate dim = j:
// out[p with dim replaced by idx[p]] op= src[p]. Positions that differ only in j touch the same
// output elements, so they stay in one thread and run in j order (deterministic); other
// coordinates are split between threads.
//   iv: the index over `shape`; sv: the source over `shape` (any strides; 0 for a value);
template <class T, Red R, class IT>
void scatter_loop(const Tensor& out, const Tensor& iv, const Tensor& sv, int64_t dim, T scale,
                  bool scaled) {
  IntArrayRef shape = iv.sizes();
  if (iv.numel() == 0) return;
  const int64_t nd = iv.dim();
  const int64_t k = nd == 0 ? 1 : shape[dim];
  const int64_t n = out.dim() == 0 ? 1 : out.size(dim);
  const int64_t os = (out.dim() == 0 ? 0 : out.stride(dim)) * sizeof(T);
  const int64_t is = (nd == 0 ? 0 : iv.stride(dim)) * sizeof(IT);
  const int64_t ss = (nd == 0 ? 0 : strides_for(sv, nd)[dim]) * sizeof(T);
  DimVector rest(shape.begin(), shape.end());
  if (nd > 0) rest[dim] = 1;
  Tensor ov = detail::make_view(out, rest, strides_for(out, nd), out.storage_offset());
  Tensor iv1 = detail::make_view(iv, rest, iv.strides(), iv.storage_offset());
  Tensor sv1 = detail::make_view(sv, rest, strides_for(sv, nd), sv.storage_offset());
  StridedIter it;
  it.add(ov);
  it.add(iv1);
  it.add(sv1);
  it.build(rest);
  const int64_t grain = std::max<int64_t>(1, kGrainSize / k);
  it.for_each(
      [&](char** d, const int64_t* s, int64_t m) {
        for (int64_t j = 0; j < k; ++j) {
          const char* ip = d[1] + j * is;
          const char* sp = d[2] + j * ss;
          for (int64_t i = 0; i < m; ++i) {
            int64_t t = wrap_index(*reinterpret_cast<const IT*>(ip + i * s[1]), n);
            T v = *reinterpret_cast<const T*>(sp + i * s[2]);
            if constexpr (!std::is_same_v<T, bool>) {
              if (scaled) {
                using O = detail::opmath_t<T>;
                v = detail::convert<T>(
                    static_cast<O>(detail::convert<O>(v) * detail::convert<O>(scale)));
              }
            }
            combine<T, R>(reinterpret_cast<T*>(d[0] + i * s[0] + t * os), v);
          }
        }
      },
      grain);
}

// Counts the hits per destination element into cnt (contiguous, out's sizes). Serial: cheap.
template <class IT>
void scatter_count(const Tensor& out, const Tensor& iv, int64_t dim, int64_t* cnt) {
  const int64_t nd = iv.dim();
  const int64_t n = out.dim() == 0 ? 1 : out.size(dim);
  DimVector cs(out.dim(), 0);
  for (int64_t d = out.dim() - 1, acc = 1; d >= 0; --d) cs[d] = acc, acc *= out.size(d);
  RowMajorWalk w(iv.sizes(), {{static_cast<char*>(iv.data_ptr()), iv.strides()}}, {sizeof(IT)});
  int64_t pos[64] = {};
  const int64_t od = out.dim();
  w.run(0, iv.numel(), [&](char** p) {
    int64_t t = wrap_index(*reinterpret_cast<const IT*>(p[0]), n);
    int64_t off = 0;
    for (int64_t d = 0; d < od; ++d) off += (d == dim ? t : d < nd ? pos[d] : 0) * cs[d];
    ++cnt[off];
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++pos[d] < iv.size(d)) break;
      pos[d] = 0;
    }
  });
}

// The value a reduction starts from when include_self is false.
template <class T>
T identity_of(Red r) {
  using O = detail::opmath_t<T>;
  if (r == Red::Mul) return detail::convert<T>(O(1));
  if constexpr (!detail::is_complex_v<T>) {
    using L = std::numeric_limits<O>;
    if (r == Red::Max) return detail::convert<T>(L::has_infinity ? -L::infinity() : L::lowest());
    if (r == Red::Min) return detail::convert<T>(L::has_infinity ? L::infinity() : L::max());
  }
  return detail::convert<T>(O(0));
}

template <class T>
constexpr bool is_float8_v = std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2>;

// out = out / count where count > 0 (integers round down, as PyTorch's floor division).
template <class T>
void divide_by_count(const Tensor& out, const std::vector<int64_t>& cnt) {
  using O = detail::opmath_t<T>;
  RowMajorWalk w(out.sizes(), {{static_cast<char*>(out.data_ptr()), out.strides()}}, {sizeof(T)});
  int64_t i = 0;
  w.run(0, out.numel(), [&](char** p) {
    int64_t m = cnt[static_cast<size_t>(i++)];
    if (m <= 0) return;
    T* o = reinterpret_cast<T*>(p[0]);
    if constexpr (std::is_same_v<T, bool>) {
      (void)o;
    } else if constexpr (std::is_integral_v<T>) {
      int64_t a = static_cast<int64_t>(*o);
      int64_t q = a / m;
      if (a % m != 0 && a < 0) --q;
      *o = static_cast<T>(q);
    } else if constexpr (detail::is_complex_v<T>) {
      using R = decltype(O().real());
      O z = detail::convert<O>(*o);
      *o = detail::convert<T>(O(z.real() / static_cast<R>(m), z.imag() / static_cast<R>(m)));
    } else {
      *o = detail::convert<T>(static_cast<O>(detail::convert<O>(*o) / static_cast<O>(m)));
    }
  });
}

// Runs out op= src over iv (all views already over the index's shape). The front end has
// rejected dtype/reduction pairs that do not exist (complex amax, float8 arithmetic).
void scatter_dispatch(const Tensor& out, const Tensor& iv, const Tensor& sv, int64_t dim, Red r,
                      bool include_self, const Scalar* alpha, const char* op) {
  detail::dispatch_types<detail::kAllMask>(out.dtype(), op, [&]<class T>() {
    dispatch_index_type(iv.dtype(), [&]<class IT>() {
      if constexpr (is_float8_v<T>) {
        KILN_CHECK(r == Red::None, "[", op, "] does not support ", dtype_name(out.dtype()));
        scatter_loop<T, Red::None, IT>(out, iv, sv, dim, T(), false);
      } else {
        T scale{};
        bool scaled = false;
        if constexpr (!std::is_same_v<T, bool>) {
          if (alpha != nullptr && !(alpha->is_integral() && alpha->to<int64_t>() == 1)) {
            scale = alpha->to<T>();
            scaled = true;
          }
        }
        std::vector<int64_t> cnt;
        if (r == Red::Mean) {
          cnt.assign(static_cast<size_t>(out.numel()), include_self ? 1 : 0);
          scatter_count<IT>(out, iv, dim, cnt.data());
        }
        if (!include_self) {  // start the touched elements from the reduction's identity
          Tensor idt = detail::empty_impl({}, out.dtype(), out.device());
          *static_cast<T*>(idt.data_ptr()) = identity_of<T>(r);
          Tensor sv0 = detail::make_view(idt, iv.sizes(), DimVector(iv.dim(), 0), 0);
          scatter_loop<T, Red::None, IT>(out, iv, sv0, dim, T(), false);
        }
        switch (r) {
          case Red::None:
            scatter_loop<T, Red::None, IT>(out, iv, sv, dim, scale, scaled);
            break;
          case Red::Add:
          case Red::Mean:
            scatter_loop<T, Red::Add, IT>(out, iv, sv, dim, scale, scaled);
            break;
          case Red::Mul:
            scatter_loop<T, Red::Mul, IT>(out, iv, sv, dim, scale, scaled);
            break;
          case Red::Max:
          case Red::Min:
            if constexpr (detail::is_complex_v<T>) {
              KILN_ERROR("[", op, "] amax/amin do not support complex tensors");
            } else if (r == Red::Max) {
              scatter_loop<T, Red::Max, IT>(out, iv, sv, dim, scale, scaled);
            } else {
              scatter_loop<T, Red::Min, IT>(out, iv, sv, dim, scale, scaled);
            }
            break;
        }
        if (r == Red::Mean) divide_by_count<T>(out, cnt);
      }
    });
  });
}

// dst[w] += a * src[j] for w = idx[j] (wrapped) in [lo, hi): the 1-D case of scatter_add_rows.
template <class T, class IT>
KILN_NOINLINE void scatter_add_1d(const IT* idx, int64_t istride, const T* src, T* dst, int64_t n,
                                  int64_t k, int64_t lo, int64_t hi, T a, bool scaled) {
  for (int64_t j = 0; j < k; ++j) {
    if (j + kPrefetchAhead < k) {  // the destination is updated in random order
      const int64_t u = static_cast<int64_t>(idx[(j + kPrefetchAhead) * istride]);
      const int64_t x = u < 0 ? u + n : u;
      if (x >= lo && x < hi) __builtin_prefetch(dst + x, 1);
    }
    const int64_t v = static_cast<int64_t>(idx[j * istride]);
    const int64_t w = v < 0 ? v + n : v;
    if (w >= lo && w < hi) dst[w] += scaled ? a * src[j] : src[j];
  }
}

// Outer slices [ob, oe) of scatter_add_rows, destination rows [lo, hi) only.
template <class T, class IT>
KILN_NOINLINE void scatter_add_rows_range(const IT* idx, int64_t istride, const T* s, T* o,
                                          int64_t n, int64_t k, int64_t inner, int64_t ob,
                                          int64_t oe, int64_t lo, int64_t hi, T a, bool scaled) {
  for (int64_t oo = ob; oo < oe; ++oo)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t w = wrap_index(idx[j * istride], n);
      if (w < lo || w >= hi) continue;
      T* dst = o + (oo * n + w) * inner;
      const T* sr = s + (oo * k + j) * inner;
      if (scaled)
        for (int64_t i = 0; i < inner; ++i) dst[i] += a * sr[i];
      else
        for (int64_t i = 0; i < inner; ++i) dst[i] += sr[i];
    }
}

// Fast path of scatter_add / index_add: contiguous out [outer, n, inner] receives rows of a
// contiguous src [outer, k, inner] at rows idx[j] (the index is the same for all of a row).
// Threads own ranges of destination rows and scan all of idx, so every destination row gets its
// updates in j order whatever the number of threads.
bool scatter_add_rows(const Tensor& out, const Tensor& src, const Tensor& idx1d, int64_t dim,
                      const Scalar* alpha) {
  if (!out.is_contiguous() || !src.is_contiguous() || out.dim() == 0 || out.dim() != src.dim())
    return false;
  if (out.dtype() != DType::Float32 && out.dtype() != DType::Float64 &&
      out.dtype() != DType::Int64 && out.dtype() != DType::Int32)
    return false;
  for (int64_t d = 0; d < out.dim(); ++d)
    if (d != dim && out.size(d) != src.size(d)) return false;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.size(d);
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.size(d);
  const int64_t n = out.size(dim), k = src.size(dim);
  const int64_t istride = idx1d.dim() == 0 ? 0 : idx1d.stride(0);
  detail::dispatch_types<detail::dtype_bit(DType::Float32) | detail::dtype_bit(DType::Float64) |
                         detail::dtype_bit(DType::Int64) | detail::dtype_bit(DType::Int32)>(
      out.dtype(), "scatter_add", [&]<class T>() {
        dispatch_index_type(idx1d.dtype(), [&]<class IT>() {
          const IT* idx = static_cast<const IT*>(idx1d.data_ptr());
          T* o = static_cast<T*>(out.data_ptr());
          const T* s = static_cast<const T*>(src.data_ptr());
          const T a = alpha ? alpha->to<T>() : T(1);
          const bool scaled = a != T(1);

          const int64_t work = outer * k * inner;
          const int threads = get_num_threads();
          if (outer == 1 && inner == 1) {
            // One thread: split destination ranges would make every thread read all of idx and
            // src (the random updates are the cheap part with prefetching), and waiting for a
            // second thread costs more than it saves on a shared machine.
            const int parts = 1;
            (void)work;
            parallel_for(0, static_cast<int64_t>(parts), 1, [&](int64_t tb, int64_t te) {
              for (int64_t t = tb; t < te; ++t)
                scatter_add_1d<T, IT>(idx, istride, s, o, n, k, n * t / parts, n * (t + 1) / parts,
                                      a, scaled);
            });
            return;
          }
          if (outer >= threads || work < kGrainSize || threads == 1) {
            parallel_for(0, outer,
                         std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, k * inner)),
                         [&](int64_t b, int64_t e) {
                           scatter_add_rows_range<T, IT>(idx, istride, s, o, n, k, inner, b, e, 0,
                                                         n, a, scaled);
                         });
            return;
          }
          // Few outer slices: split the destination rows between threads.
          parallel_for(0, static_cast<int64_t>(threads), 1, [&](int64_t tb, int64_t te) {
            for (int64_t t = tb; t < te; ++t) {
              scatter_add_rows_range<T, IT>(idx, istride, s, o, n, k, inner, 0, outer,
                                            n * t / threads, n * (t + 1) / threads, a, scaled);
            }
          });
        });
      });
  return true;
}

// An index over src's shape that repeats a 1-D index along dim (index_add/copy/fill).
Tensor expand_index_1d(const Tensor& index, IntArrayRef shape, int64_t dim) {
  DimVector st(shape.size(), 0);
  if (!shape.empty()) st[dim] = index.dim() == 0 ? 0 : index.stride(0);
  return detail::make_view(index, shape, st, index.storage_offset());
}

Red scatter_red(int64_t code) { return code == 1 ? Red::Add : code == 2 ? Red::Mul : Red::None; }

}  // namespace

Tensor value_tensor(const Scalar& v, DType dtype, IntArrayRef shape) {
  Tensor t = detail::empty_impl({}, dtype, Device(kCPU));
  OpCall f(OpId::Fill);
  f.out.push_back(t);
  f.attrs.s0 = v;
  f.attrs.has_s0 = true;
  detail::find_kernel(OpId::Fill, kCPU)(f);
  return detail::make_view(t, shape, DimVector(shape.size(), 0), 0);
}

namespace {

int64_t dim_size(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.size(dim); }

void scatter_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &index = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  const char* op = op_name(c.op);
  check_index_bounds(index, dim_size(x, dim), dim, op);
  copy_raw(out, x);
  Tensor sv;
  if (c.op == OpId::ScatterValue) {
    sv = value_tensor(c.attrs.s0, out.dtype(), index.sizes());
  } else {
    const Tensor& src = c.in[2];
    sv = detail::make_view(src, index.sizes(), strides_for(src, index.dim()), src.storage_offset());
  }
  Red r = Red::None;
  bool include_self = true;
  if (c.op == OpId::ScatterAdd) {
    r = Red::Add;
    if (index.dim() > 0) {
      // An index constant over every dim but `dim` (idx.unsqueeze(1).expand_as(src)) is 1-D.
      bool expanded = index.sizes() == c.in[2].sizes();
      for (int64_t d = 0; d < index.dim() && expanded; ++d)
        if (d != dim && index.stride(d) != 0 && index.size(d) != 1) expanded = false;
      if (expanded) {
        Tensor i1 = detail::make_view(index, {index.size(dim)}, {index.stride(dim)},
                                      index.storage_offset());
        if (scatter_add_rows(out, c.in[2], i1, dim, nullptr)) return;
      }
    }
  } else if (c.op == OpId::ScatterReduce) {
    static constexpr Red kRed[] = {Red::Add, Red::Mul, Red::Mean, Red::Max, Red::Min};
    r = kRed[c.attrs.i1];
    include_self = c.attrs.flag;
  } else {
    r = scatter_red(c.attrs.i1);
  }
  scatter_dispatch(out, index, sv, dim, r, include_self, nullptr, op);
}

void index_add_copy_fill_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &index = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  const char* op = op_name(c.op);
  check_index_bounds(index, dim_size(x, dim), dim, op);
  copy_raw(out, x);
  if (c.op == OpId::IndexFill) {
    DimVector shape(out.sizes().begin(), out.sizes().end());
    if (!shape.empty()) shape[dim] = index.numel();
    Tensor iv = expand_index_1d(index, shape, dim);
    scatter_dispatch(out, iv, value_tensor(c.attrs.s0, out.dtype(), shape), dim, Red::None, true,
                     nullptr, op);
    return;
  }
  const Tensor& src = c.in[2];
  if (c.op == OpId::IndexAdd && scatter_add_rows(out, src, index, dim, &c.attrs.s0)) return;
  Tensor iv = expand_index_1d(index, src.sizes(), dim);
  scatter_dispatch(out, iv, src, dim, c.op == OpId::IndexAdd ? Red::Add : Red::None, true,
                   c.op == OpId::IndexAdd ? &c.attrs.s0 : nullptr, op);
}

}  // namespace

void register_index_kernels(detail::KernelRegistry& r) {
  r.set(OpId::IndexSelect, kCPU, &index_select_kernel);
  r.set(OpId::Gather, kCPU, &gather_kernel);
  r.set(OpId::Scatter, kCPU, &scatter_kernel);
  r.set(OpId::ScatterValue, kCPU, &scatter_kernel);
  r.set(OpId::ScatterAdd, kCPU, &scatter_kernel);
  r.set(OpId::ScatterReduce, kCPU, &scatter_kernel);
  r.set(OpId::IndexAdd, kCPU, &index_add_copy_fill_kernel);
  r.set(OpId::IndexCopy, kCPU, &index_add_copy_fill_kernel);
  r.set(OpId::IndexFill, kCPU, &index_add_copy_fill_kernel);
  register_index_put_kernels(r);
  register_index_masked_kernels(r);
}

}  // namespace kiln::cpu
