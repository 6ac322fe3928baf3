// CPU kernels of the scans (cumsum, cumprod, cummax, cummin, logcumsumexp) and the registration
// of the scan/sort family (sort kernels live in sort_*.cpp). Each line along the scanned dim is
// handled by one thread, in order, so results do not depend on the number of threads.
#include <cmath>
#include <complex>
#include <limits>

#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/cpu/scan_lines.h"
#include "kernels/cpu/sort_kernels.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks, convert

namespace {

// Accumulator of a scan over T: double for floating types (as PyTorch's CPU acc_type),
// complex<double> for complex, int64 for bool/integers.
template <class T>
struct ScanAcc {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
};
template <class R>
struct ScanAcc<complex<R>> {
  using type = complex<double>;
};

template <bool kProd>
void cum_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  if (x.numel() == 0) return;
  const int64_t dim = c.attrs.i0, n = x.dim() == 0 ? 1 : x.size(dim);
  LineIter it(x, dim);
  it.add(out);
  it.add(x);
  dispatch_types<kNumericMask>(out.dtype(), op_name(c.op), [&]<class T>() {
    KILN_ASSERT(x.dtype() == out.dtype(), "cumsum/cumprod: input and output dtypes differ");
    using A = typename ScanAcc<T>::type;
    const int64_t so = it.stride(0), sx = it.stride(1);
    it.for_lines(n, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        T* o = it.data<T>(0, l);
        const T* a = it.data<T>(1, l);
        A acc = kProd ? A(1) : A(0);
        for (int64_t i = 0; i < n; ++i) {
          const A v = convert<A>(a[i * sx]);
          if constexpr (kProd)
            acc = acc * v;
          else
            acc = acc + v;
          o[i * so] = convert<T>(acc);
        }
      }
    });
  });
}

template <class T>
bool nan_of(T v) {
  if constexpr (std::is_integral_v<T>)
    return false;
  else
    return std::isnan(convert<double>(v));
}

// PyTorch's rule: a NaN always takes over (and later NaNs move the index); otherwise x >= best
// (cummax) or x <= best (cummin) moves it, so ties take the latest index.
template <bool kMax>
void cum_extreme_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const int64_t dim = c.attrs.i0, n = x.dim() == 0 ? 1 : x.size(dim);
  LineIter it(x, dim);
  it.add(c.out[0]);
  it.add(c.out[1]);
  it.add(x);
  dispatch_types<kRealMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    const int64_t sv = it.stride(0), si = it.stride(1), sx = it.stride(2);
    it.for_lines(n, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        T* vo = it.data<T>(0, l);
        int64_t* io = it.data<int64_t>(1, l);
        const T* a = it.data<T>(2, l);
        T best = a[0];
        double bd = convert<double>(best);
        int64_t bi = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T v = a[i * sx];
          const double d = convert<double>(v);
          if (nan_of(v) || (!std::isnan(bd) && (kMax ? d >= bd : d <= bd))) {
            best = v;
            bd = d;
            bi = i;
          }
          vo[i * sv] = best;
          io[i * si] = bi;
        }
      }
    });
  });
}

// log(exp(a) + exp(b)), stable; infinities and NaN as PyTorch's logaddexp.
double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double m = std::max(a, b), s = std::min(a, b);
  if (std::isinf(m)) return m;  // +inf dominates; both -inf give -inf
  return m + std::log1p(std::exp(s - m));
}
std::complex<double> log_add_exp(std::complex<double> a, std::complex<double> b) {
  if (std::isnan(a.real()) || std::isnan(b.real()) || std::isnan(a.imag()) || std::isnan(b.imag()))
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  if (a.real() < b.real()) std::swap(a, b);  // a has the larger real part
  if (std::isinf(a.real()) && a.real() < 0) return a;
  if (std::isinf(a.real())) return a;
  return a + std::log(1.0 + std::exp(b - a));
}

void logcumsumexp_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  if (x.numel() == 0) return;
  const int64_t dim = c.attrs.i0, n = x.dim() == 0 ? 1 : x.size(dim);
  LineIter it(x, dim);
  it.add(out);
  it.add(x);
  dispatch_types<kFloatMask | kComplexMask>(x.dtype(), "logcumsumexp", [&]<class T>() {
    const int64_t so = it.stride(0), sx = it.stride(1);
    it.for_lines(n, [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        T* o = it.data<T>(0, l);
        const T* a = it.data<T>(1, l);
        if constexpr (is_complex_v<T>) {
          std::complex<double> acc(-std::numeric_limits<double>::infinity(), 0);
          for (int64_t i = 0; i < n; ++i) {
            const complex<double> v = convert<complex<double>>(a[i * sx]);
            acc = i == 0 ? std::complex<double>(v.real(), v.imag())
                         : log_add_exp(acc, std::complex<double>(v.real(), v.imag()));
            o[i * so] = convert<T>(complex<double>(acc.real(), acc.imag()));
          }
        } else {
          double acc = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < n; ++i) {
            acc = log_add_exp(acc, convert<double>(a[i * sx]));
            o[i * so] = convert<T>(acc);
          }
        }
      }
    });
  });
}

}  // namespace

void register_scan_kernels(detail::KernelRegistry& r) {
  r.set(OpId::CumSum, kCPU, &cum_kernel<false>);
  r.set(OpId::CumProd, kCPU, &cum_kernel<true>);
  r.set(OpId::CumMax, kCPU, &cum_extreme_kernel<true>);
  r.set(OpId::CumMin, kCPU, &cum_extreme_kernel<false>);
  r.set(OpId::LogCumSumExp, kCPU, &logcumsumexp_kernel);
  register_sort_kernels(r);
}

}  // namespace kiln::cpu
