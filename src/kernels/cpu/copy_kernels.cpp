// CPU copy/cast, fill, arange and linspace kernels.
#include <cstring>

#include "dispatch/registry.h"
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

namespace {

// out[0] <- in[0], broadcasting in[0] and converting dtype.
void copy_kernel(OpCall& c) {
  Tensor& dst = c.out[0];
  const Tensor& src = c.in[0];
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    int64_t nb = dst.nbytes();
    if (d == s || nb == 0) return;
    parallel_for(0, nb, kGrainSize * 8,
                 [&](int64_t b, int64_t e) { std::memmove(d + b, s + b, e - b); });
    return;
  }
  StridedIter it;
  it.add(dst);
  it.add(src);
  it.build(dst.sizes());
  detail::dispatch_types<detail::kAllMask>(dst.dtype(), "copy_", [&]<class O>() {
    detail::dispatch_types<detail::kAllMask>(src.dtype(), "copy_", [&]<class I>() {
      it.for_each([&](char** d, const int64_t* s, int64_t n) {
        if (s[0] == sizeof(O) && s[1] == sizeof(I)) {
          O* o = reinterpret_cast<O*>(d[0]);
          const I* a = reinterpret_cast<const I*>(d[1]);
          for (int64_t i = 0; i < n; ++i) o[i] = detail::convert<O>(a[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<O*>(d[0] + i * s[0]) =
                detail::convert<O>(*reinterpret_cast<const I*>(d[1] + i * s[1]));
        }
      });
    });
  });
}

// out[0] <- attrs.s0 everywhere.
void fill_kernel(OpCall& c) {
  Tensor& dst = c.out[0];
  StridedIter it;
  it.add(dst);
  it.build(dst.sizes());
  detail::dispatch_types<detail::kAllMask>(dst.dtype(), "fill_", [&]<class O>() {
    O v;
    if constexpr (detail::is_complex_v<O>)
      v = c.attrs.s0.to<O>();
    else if constexpr (std::is_same_v<O, bool>)
      v = c.attrs.s0.to<bool>();
    else if constexpr (detail::is_reduced_float_v<O>)
      v = O(c.attrs.s0.to<float>());
    else if constexpr (std::is_integral_v<O>)
      v = c.attrs.s0.is_floating_point() ? static_cast<O>(c.attrs.s0.to<double>())
                                         : c.attrs.s0.to<O>();
    else
      v = c.attrs.s0.to<O>();
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<O*>(d[0] + i * s[0]) = v;
    });
  });
}

// out[0][i] = start + i * step (computed in double for floats, int64 for integers).
void arange_kernel(OpCall& c) {
  Tensor& dst = c.out[0];
  detail::dispatch_types<detail::kRealMask & ~detail::kBoolMask>(
      dst.dtype(), "arange", [&]<class O>() {
        O* o = static_cast<O*>(dst.data_ptr());
        if constexpr (std::is_integral_v<O>) {
          int64_t start = c.attrs.s0.to<int64_t>(), step = c.attrs.s1.to<int64_t>();
          parallel_for(0, dst.numel(), kGrainSize, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) o[i] = static_cast<O>(start + i * step);
          });
        } else {
          double start = c.attrs.s0.to<double>(), step = c.attrs.s1.to<double>();
          parallel_for(0, dst.numel(), kGrainSize, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
              o[i] = detail::convert<O>(start + static_cast<double>(i) * step);
          });
        }
      });
}

// Symmetric linspace: the first half counts up from start, the second half down from end,
// so both endpoints are exact.
void linspace_kernel(OpCall& c) {
  Tensor& dst = c.out[0];
  int64_t steps = dst.numel();
  detail::dispatch_types<detail::kNumericMask & ~detail::kBoolMask>(
      dst.dtype(), "linspace", [&]<class O>() {
        O* o = static_cast<O*>(dst.data_ptr());
        using W = std::conditional_t<detail::is_complex_v<O>, complex<double>, double>;
        W start = c.attrs.s0.to<W>(), end = c.attrs.s1.to<W>();
        if (steps == 1) {
          o[0] = detail::convert<O>(start);
          return;
        }
        W step = (end - start) / static_cast<double>(steps - 1);
        int64_t half = steps / 2;
        parallel_for(0, steps, kGrainSize, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            W v = i < half ? start + step * static_cast<double>(i)
                           : end - step * static_cast<double>(steps - 1 - i);
            if constexpr (std::is_integral_v<O>)
              o[i] = static_cast<O>(v);  // truncation toward zero, as PyTorch
            else
              o[i] = detail::convert<O>(v);
          }
        });
      });
}

}  // namespace

void register_copy_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Copy, kCPU, &copy_kernel);
  r.set(OpId::Fill, kCPU, &fill_kernel);
  r.set(OpId::Arange, kCPU, &arange_kernel);
  r.set(OpId::Linspace, kCPU, &linspace_kernel);
}

}  // namespace kiln::cpu
