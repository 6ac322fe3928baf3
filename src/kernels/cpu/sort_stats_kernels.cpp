// CPU kernels of quantile/nanquantile, unique/unique_consecutive, searchsorted, histc and
// bincount. Serial where the work is a data-dependent scatter (histc, bincount, unique's merge),
// so the results never depend on the number of threads.
#include <cmath>
#include <limits>

#include "core/dispatch_dtype.h"
#include "kernels/cpu/scan_lines.h"
#include "kernels/cpu/sort_kernels.h"
#include "kernels/cpu/sort_keys.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks, convert
using sortk::Item;
using sortk::sort_key_t;

namespace {

// PyTorch's lerp (exact at both ends).
template <class S>
S lerp(S a, S b, S w) {
  return w < S(0.5) ? a + w * (b - a) : b - (b - a) * (S(1) - w);
}

// in = (x, q: float64 1-D), out[0] = keepdim shape + [nq]; i0 = dim, i1 = interpolation
// (0 linear, 1 lower, 2 higher, 3 midpoint, 4 nearest), flag = ignore NaN. The ranks are computed
// in the input's precision, as PyTorch does.
void quantile_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& q = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0, n = x.dim() == 0 ? 1 : x.size(dim), nq = q.numel();
  const int mode = static_cast<int>(c.attrs.i1);
  const bool ignore_nan = c.attrs.flag;
  const double* qp = q.data_ptr<double>();
  LineIter it(x, dim);
  it.add(x);
  dispatch_types<dtype_bit(DType::Float32) | dtype_bit(DType::Float64)>(
      x.dtype(), "quantile", [&]<class T>() {
        T* op = static_cast<T*>(out.data_ptr());
        const int64_t sx = it.stride(0);
        it.for_lines(n * 4, [&](int64_t b, int64_t e) {
          std::vector<T> v(n);
          for (int64_t l = b; l < e; ++l) {
            const T* a = it.data<T>(0, l);
            int64_t valid = 0;
            for (int64_t i = 0; i < n; ++i) {
              v[i] = a[i * sx];
              if (!std::isnan(v[i])) ++valid;
            }
            std::sort(v.begin(), v.end(),
                      [](T p, T r) { return p < r || (std::isnan(r) && !std::isnan(p)); });
            for (int64_t j = 0; j < nq; ++j) {
              T rank;
              if (!ignore_nan && valid < n)
                rank = static_cast<T>(n - 1);  // the NaN at the end
              else
                rank = std::max(static_cast<T>(qp[j]) * static_cast<T>(valid - 1), T(0));
              if (mode == 1) rank = std::floor(rank);
              if (mode == 2) rank = std::ceil(rank);
              if (mode == 4) rank = std::nearbyint(rank);  // ties to even
              const int64_t lo = static_cast<int64_t>(rank);
              T r = v[lo];
              if (mode == 0 || mode == 3) {
                const int64_t hi = static_cast<int64_t>(std::ceil(rank));
                const T w = mode == 3 ? T(0.5) : rank - static_cast<T>(lo);
                r = lerp<T>(v[lo], v[hi], w);
              }
              op[l * nq + j] = r;
            }
          }
        });
      });
}

// in = (x: contiguous (n, m)); flag = consecutive only. out = (values (n, m), inverse (n),
// counts (n), number of unique rows (0-dim)): only the first k rows of values/counts are set.
void unique_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.size(0), m = x.size(1);
  int64_t* inv = c.out[1].data_ptr<int64_t>();
  int64_t* cnt = c.out[2].data_ptr<int64_t>();
  int64_t k = 0;
  if (n > 0)
    dispatch_types<kRealMask>(x.dtype(), "unique", [&]<class T>() {
      using K = sort_key_t<T>;
      const T* a = x.data_ptr<T>();
      T* vo = c.out[0].data_ptr<T>();
      std::vector<uint32_t> order(n);
      for (int64_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
      if (!c.attrs.flag) {
        if (m == 1) {
          std::vector<Item<K>> items, tmp;
          sortk::load_items(a, 1, n, false, items);
          sortk::sort_items(items, tmp);
          for (int64_t i = 0; i < n; ++i) order[i] = items[i].idx;
        } else if (m > 0) {
          std::stable_sort(order.begin(), order.end(), [&](uint32_t p, uint32_t r) {
            for (int64_t j = 0; j < m; ++j) {
              const K kp = sortk::make_key(a[p * m + j]), kr = sortk::make_key(a[r * m + j]);
              if (kp != kr) return kp < kr;
            }
            return false;
          });
        }
      }
      // Rows are equal when every element compares equal (so NaNs are never equal).
      auto same = [&](int64_t p, int64_t r) {
        for (int64_t j = 0; j < m; ++j) {
          const T u = a[p * m + j], w = a[r * m + j];
          if (sortk::is_nan(u) || sortk::make_key(u) != sortk::make_key(w)) return false;
        }
        return true;
      };
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = order[i];
        if (i == 0 || !same(order[i - 1], r)) {
          for (int64_t j = 0; j < m; ++j) vo[k * m + j] = a[r * m + j];
          cnt[k++] = 0;
        }
        inv[r] = k - 1;
        ++cnt[k - 1];
      }
    });
  *c.out[3].data_ptr<int64_t>() = k;
}

// in = (sorted sequence, values[, sorter]); i0 = 1 when the sequence is one shared 1-D line,
// i1 = 1 with a sorter, flag = right. PyTorch's bounds: left finds the first s >= v, right the
// first s > v (a NaN value lands at the end).
void searchsorted_kernel(OpCall& c) {
  const Tensor& seq = c.in[0];
  const Tensor& val = c.in[1];
  const Tensor& out = c.out[0];
  if (val.numel() == 0) return;
  const bool shared = c.attrs.i0 != 0, has_sorter = c.attrs.i1 != 0, right = c.attrs.flag;
  const int64_t vd = std::max<int64_t>(val.dim() - 1, 0), nv = val.dim() == 0 ? 1 : val.size(-1);
  const int64_t ns = seq.size(-1);
  LineIter vi(val, vd);
  vi.add(val);
  vi.add(out);
  LineIter si(seq, seq.dim() - 1);
  si.add(seq);
  if (has_sorter) si.add(c.in[2]);
  dispatch_types<kRealMask & ~kBoolMask>(seq.dtype(), "searchsorted", [&]<class T>() {
    using M = std::conditional_t<is_reduced_float_v<T>, float, T>;
    const int64_t sv = vi.stride(0), so = vi.stride(1), ss = si.stride(0);
    const int64_t st = has_sorter ? si.stride(1) : 0;
    vi.for_lines(nv * 8, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        const T* v = vi.data<T>(0, l);
        const int64_t sl = shared ? 0 : l;
        const T* s = si.data<T>(0, sl);
        const int64_t* sorter = has_sorter ? si.data<int64_t>(1, sl) : nullptr;
        for (int64_t i = 0; i < nv; ++i) {
          const M x = convert<M>(v[i * sv]);
          int64_t lo = 0, hi = ns;
          while (lo < hi) {
            const int64_t mid = lo + ((hi - lo) >> 1);
            const M y = convert<M>(s[(sorter ? sorter[mid * st] : mid) * ss]);
            if (right ? !(y > x) : !(y >= x))
              lo = mid + 1;
            else
              hi = mid;
          }
          if (out.dtype() == DType::Int32)
            vi.data<int32_t>(1, l)[i * so] = static_cast<int32_t>(lo);
          else
            vi.data<int64_t>(1, l)[i * so] = lo;
        }
      }
    });
  });
}

// in = (x); out = bins counts of x's dtype; s0/s1 = finite min < max, i0 = bins.
void histc_kernel(OpCall& c) {
  const Tensor x = c.in[0].contiguous();
  const Tensor& out = c.out[0];
  const int64_t bins = c.attrs.i0, n = x.numel();
  dispatch_types<kFloatMask>(x.dtype(), "histc", [&]<class T>() {
    using M = opmath_t<T>;
    const M lo = c.attrs.s0.to<M>(), hi = c.attrs.s1.to<M>();
    std::vector<int64_t> h(bins, 0);
    const T* a = x.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) {
      const M v = convert<M>(a[i]);
      if (!(v >= lo && v <= hi)) continue;  // outside, or NaN
      int64_t pos = static_cast<int64_t>((v - lo) * static_cast<M>(bins) / (hi - lo));
      if (pos >= bins) pos = bins - 1;
      ++h[pos];
    }
    T* o = out.data_ptr<T>();
    for (int64_t i = 0; i < bins; ++i) o[i] = convert<T>(static_cast<M>(h[i]));
  });
}

// in = (x: 1-D int64 non-negative[, weights: float32/float64]); out zero-filled here.
void bincount_kernel(OpCall& c) {
  const Tensor x = c.in[0].contiguous();
  const Tensor& out = c.out[0];
  const int64_t n = x.numel(), len = out.numel();
  const int64_t* a = x.data_ptr<int64_t>();
  if (c.in.size() == 1) {
    int64_t* o = out.data_ptr<int64_t>();
    std::fill(o, o + len, 0);
    for (int64_t i = 0; i < n; ++i) ++o[a[i]];
    return;
  }
  const Tensor w = c.in[1].contiguous();
  dispatch_types<dtype_bit(DType::Float32) | dtype_bit(DType::Float64)>(
      out.dtype(), "bincount", [&]<class T>() {
        T* o = out.data_ptr<T>();
        const T* wp = w.data_ptr<T>();
        std::fill(o, o + len, T(0));
        for (int64_t i = 0; i < n; ++i) o[a[i]] += wp[i];
      });
}

}  // namespace

void register_sort_stats_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Quantile, kCPU, &quantile_kernel);
  r.set(OpId::Unique, kCPU, &unique_kernel);
  r.set(OpId::SearchSorted, kCPU, &searchsorted_kernel);
  r.set(OpId::Histc, kCPU, &histc_kernel);
  r.set(OpId::BinCount, kCPU, &bincount_kernel);
}

}  // namespace kiln::cpu
