// CPU kernels of the fused nn primitives: cross_entropy_loss (+ backward) and native_dropout.
// Math in double per row (the reference the GPU kernels are compared with); reductions over rows
// are serial in row order, so results never depend on the thread count.
#include <cmath>
#include <limits>

#include "kernels/cpu/nn_kernels.h"
#include "kernels/distributions.h"
#include "kernels/philox.h"

namespace kiln::cpu {
namespace {

// Note [Fused cross-entropy]
// --------------------------
// Row i of logits x [N, C] with target t, class weights w (all 1 without weight), W = sum_c w_c,
// smoothing s: lse = log sum_c exp(x_c) and
//   loss_i = (1 - s) * w_t * (lse - x_t) + (s / C) * sum_c w_c * (lse - x_c)
// (the smoothing term only when s > 0); ignored rows give 0 and weigh 0. mean divides the sum by
// sum_i w_t over the rows not ignored (PyTorch's rule, smoothing term included). The gradient is
//   d loss_i / d x_c = (1 - s) * w_t * (p_c - [c == t]) + (s / C) * (W * p_c - w_c),
// p_c = exp(x_c - lse), times the row's incoming gradient (divided by the total weight for mean).
// The forward saves lse so the backward needs one pass over the logits.

void check_targets(const char* op, const int64_t* t, int64_t n, int64_t classes, int64_t ignore) {
  for (int64_t i = 0; i < n; ++i)
    KILN_CHECK(t[i] == ignore || (t[i] >= 0 && t[i] < classes), "[", op, "] target ", t[i],
               " is out of bounds for ", classes, " classes");
}

// in = (logits [N, C], target int64 [N], [weight [C]]); out = (loss, lse [N]).
void cross_entropy_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.size(0), cls = x.size(1);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const double ls = c.attrs.s0.to<double>();
  const int64_t* tgt = nn_ptr<const int64_t>(c.in[1]);
  check_targets("cross_entropy_loss", tgt, n, cls, ignore);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "cross_entropy_loss", [&]<class T>() {
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* xp = nn_ptr<const T>(x);
    const T* w = c.attrs.flag ? nn_ptr<const T>(c.in[2]) : nullptr;
    // The loss is T, or float32 for half-precision logits under autocast (Note [autocast
    // cross-entropy] in src/nn/functional/loss_ops.cpp).
    const bool float_loss = c.out[0].dtype() != x.dtype();
    auto store = [&](int64_t i, double v) {
      if (float_loss)
        nn_ptr<float>(c.out[0])[i] = static_cast<float>(v);
      else
        nn_ptr<T>(c.out[0])[i] = detail::convert<T>(static_cast<S>(v));
    };
    S* lse_out = nn_ptr<S>(c.out[1]);
    std::vector<double> loss(n), wt(n);
    parallel_for(0, n, nn_row_grain(cls), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* row = xp + i * cls;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < cls; ++j) {
          const double v = detail::convert<double>(row[j]);
          m = v > m || v != v ? v : m;
        }
        double s = 0;
        for (int64_t j = 0; j < cls; ++j) s += std::exp(detail::convert<double>(row[j]) - m);
        const double lse = m + std::log(s);
        lse_out[i] = static_cast<S>(lse);
        const int64_t t = tgt[i];
        if (t == ignore) {
          loss[i] = wt[i] = 0;
          continue;
        }
        wt[i] = w ? detail::convert<double>(w[t]) : 1.0;
        double l = (1 - ls) * wt[i] * (lse - detail::convert<double>(row[t]));
        if (ls > 0) {
          double sm = 0;
          for (int64_t j = 0; j < cls; ++j)
            sm +=
                (w ? detail::convert<double>(w[j]) : 1.0) * (lse - detail::convert<double>(row[j]));
          l += ls / static_cast<double>(cls) * sm;
        }
        loss[i] = l;
      }
    });
    if (reduction == 0) {
      for (int64_t i = 0; i < n; ++i) store(i, loss[i]);
      return;
    }
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < n; ++i) sum += loss[i], wsum += wt[i];
    store(0, reduction == 1 ? sum / wsum : sum);
  });
}

// in = (grad_loss, logits, target, lse, [weight]); out = grad_logits [N, C].
void cross_entropy_backward_kernel(OpCall& c) {
  const Tensor& x = c.in[1];
  const int64_t n = x.size(0), cls = x.size(1);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const double ls = c.attrs.s0.to<double>();
  const int64_t* tgt = nn_ptr<const int64_t>(c.in[2]);
  check_targets("cross_entropy_loss_backward", tgt, n, cls, ignore);
  detail::dispatch_types<detail::kFloatMask>(
      x.dtype(), "cross_entropy_loss_backward", [&]<class T>() {
        using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
        const T* g = nn_ptr<const T>(c.in[0]);
        const T* xp = nn_ptr<const T>(x);
        const S* lse = nn_ptr<const S>(c.in[3]);
        const T* w = c.attrs.flag ? nn_ptr<const T>(c.in[4]) : nullptr;
        T* dx = nn_ptr<T>(c.out[0]);
        auto wof = [&](int64_t j) { return w ? detail::convert<double>(w[j]) : 1.0; };
        double total = 0, wall = 0;
        if (reduction == 1)
          for (int64_t i = 0; i < n; ++i)
            if (tgt[i] != ignore) total += wof(tgt[i]);
        for (int64_t j = 0; j < cls; ++j) wall += wof(j);
        const double gs = reduction == 0 ? 0.0 : detail::convert<double>(g[0]);
        parallel_for(0, n, nn_row_grain(cls), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            T* out = dx + i * cls;
            const int64_t t = tgt[i];
            if (t == ignore) {
              for (int64_t j = 0; j < cls; ++j) out[j] = detail::convert<T>(S(0));
              continue;
            }
            double scale = reduction == 0 ? detail::convert<double>(g[i]) : gs;
            if (reduction == 1) scale /= total;
            const double a = (1 - ls) * wof(t), bs = ls / static_cast<double>(cls);
            const double l = static_cast<double>(lse[i]);
            for (int64_t j = 0; j < cls; ++j) {
              const double p = std::exp(detail::convert<double>(xp[i * cls + j]) - l);
              double d = a * (p - (j == t ? 1.0 : 0.0));
              if (ls > 0) d += bs * (wall * p - wof(j));
              out[j] = detail::convert<T>(static_cast<S>(scale * d));
            }
          }
        });
      });
}

// Note [Fused dropout]
// --------------------
// in = (x contiguous), s0 = p, attrs.ints = (seed, offset); out = (y, mask bool), both
// contiguous. Element i (row-major) owns Philox word W[i] (k = 1 for every dtype, so the call
// reserves ceil(n / 4) counters) and is kept when rng_uniform_float(W[i]) < 1 - p (in float);
// y = x * (1 / (1 - p)) in the compute type (float for 16-bit floats), 0 where dropped, and 0
// everywhere for p = 1. The GPU kernel makes the same mask and values bit for bit.
void native_dropout_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.numel();
  const double p = c.attrs.s0.to<double>();
  const uint64_t seed = static_cast<uint64_t>(c.attrs.ints[0]);
  const uint64_t off = static_cast<uint64_t>(c.attrs.ints[1]);
  const float keep = static_cast<float>(1.0 - p);
  bool* mask = nn_ptr<bool>(c.out[1]);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "native_dropout", [&]<class T>() {
    using Cm = detail::opmath_t<T>;
    const Cm scale = p < 1 ? static_cast<Cm>(1.0 / (1.0 - p)) : Cm(0);
    const T* xp = nn_ptr<const T>(x);
    T* y = nn_ptr<T>(c.out[0]);
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      PhiloxCursor r(seed, off);
      for (int64_t i = b; i < e; ++i) {
        const bool k = rng_uniform_float(r.word(static_cast<uint64_t>(i))) < keep;
        mask[i] = k;
        y[i] = detail::convert<T>(k ? static_cast<Cm>(detail::convert<Cm>(xp[i]) * scale) : Cm(0));
      }
    });
  });
}

}  // namespace

void register_nn_fused_kernels(detail::KernelRegistry& r) {
  r.set(OpId::CrossEntropyLoss, kCPU, &cross_entropy_kernel);
  r.set(OpId::CrossEntropyLossBackward, kCPU, &cross_entropy_backward_kernel);
  r.set(OpId::NativeDropout, kCPU, &native_dropout_kernel);
}

}  // namespace kiln::cpu
