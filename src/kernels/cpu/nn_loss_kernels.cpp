// CPU kernels of nll_loss (forward/backward) and embedding (lookup, backward, max_norm renorm).
// Index checks run in a serial pre-pass, so no exception leaves a parallel region.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/nn_kernels.h"

namespace kiln::cpu {
namespace {

constexpr uint32_t kIndexMask = detail::dtype_bit(DType::Int64) | detail::dtype_bit(DType::Int32);

// Reads the int64/int32 indices of t (contiguous) as int64.
std::vector<int64_t> read_indices(const Tensor& t) {
  std::vector<int64_t> v(t.numel());
  detail::dispatch_types<kIndexMask>(t.dtype(), "index", [&]<class I>() {
    const I* p = nn_ptr<const I>(t);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
  });
  return v;
}

// in = (input [N, C, K], target [N * K], [weight [C]]); out = (loss, total_weight).
// reduction (i1): 0 none (loss [N * K]), 1 mean, 2 sum (0-dim).
void nll_loss_kernel(OpCall& c) {
  const Tensor& in = c.in[0];
  const int64_t n = in.size(0), cls = in.size(1), k = in.size(2);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const std::vector<int64_t> tgt = read_indices(c.in[1]);
  for (int64_t t : tgt)
    KILN_CHECK(t == ignore || (t >= 0 && t < cls), "[nll_loss] target ", t,
               " is out of bounds for ", cls, " classes");
  detail::dispatch_types<detail::kFloatMask>(in.dtype(), "nll_loss", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* x = nn_ptr<const T>(in);
    const T* w = c.attrs.flag ? nn_ptr<const T>(c.in[2]) : nullptr;
    T* out = nn_ptr<T>(c.out[0]);
    T* total = nn_ptr<T>(c.out[1]);
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t t = tgt[i * k + j];
        double v = 0, wt = 0;
        if (t != ignore) {
          wt = w ? static_cast<double>(detail::convert<C>(w[t])) : 1.0;
          v = -wt * static_cast<double>(detail::convert<C>(x[(i * cls + t) * k + j]));
        }
        if (reduction == 0) out[i * k + j] = detail::convert<T>(static_cast<C>(v));
        sum += v;
        wsum += wt;
      }
    *total = detail::convert<T>(static_cast<C>(wsum));
    if (reduction == 1) *out = detail::convert<T>(static_cast<C>(sum / wsum));
    if (reduction == 2) *out = detail::convert<T>(static_cast<C>(sum));
  });
}

// in = (grad, target, [weight], total_weight); out = grad_input [N, C, K] (zeros but at targets).
void nll_loss_backward_kernel(OpCall& c) {
  const Tensor& gi = c.out[0];
  const int64_t n = gi.size(0), cls = gi.size(1), k = gi.size(2);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const std::vector<int64_t> tgt = read_indices(c.in[1]);
  for (int64_t t : tgt)
    KILN_CHECK(t == ignore || (t >= 0 && t < cls), "[nll_loss_backward] target ", t,
               " is out of bounds for ", cls, " classes");
  detail::dispatch_types<detail::kFloatMask>(gi.dtype(), "nll_loss_backward", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* g = nn_ptr<const T>(c.in[0]);
    const T* w = c.attrs.flag ? nn_ptr<const T>(c.in[2]) : nullptr;
    const C total = detail::convert<C>(*nn_ptr<const T>(c.in[c.attrs.flag ? 3 : 2]));
    T* out = nn_ptr<T>(gi);
    std::fill(out, out + gi.numel(), detail::convert<T>(C(0)));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t t = tgt[i * k + j];
        if (t == ignore) continue;
        C gv = detail::convert<C>(reduction == 0 ? g[i * k + j] : g[0]);
        if (reduction == 1) gv /= total;
        const C wt = w ? detail::convert<C>(w[t]) : C(1);
        out[(i * cls + t) * k + j] = detail::convert<T>(-wt * gv);
      }
  });
}

// in = (weight [V, D] contiguous, indices contiguous); out [numel, D].
void embedding_kernel(OpCall& c) {
  const Tensor& w = c.in[0];
  const int64_t v = w.size(0), d = w.size(1);
  const std::vector<int64_t> idx = read_indices(c.in[1]);
  for (int64_t i : idx)
    KILN_CHECK(i >= 0 && i < v, "[embedding] index ", i, " is out of range for ", v, " embeddings");
  const int64_t es = w.element_size();
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(c.out[0].data_ptr());
  if (d == 0) return;
  parallel_for(0, static_cast<int64_t>(idx.size()), nn_row_grain(d), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(dst + r * d * es, src + idx[r] * d * es, d * es);
  });
}

// in = (grad [numel, D], indices); out [V, D]: sum of the grad rows per index (padding_idx, i0,
// gets none). Parallel over column blocks, indices in order: independent of the thread count.
void embedding_backward_kernel(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t v = out.size(0), d = out.size(1), pad = c.attrs.i0;
  const std::vector<int64_t> idx = read_indices(c.in[1]);
  for (int64_t i : idx)
    KILN_CHECK(i >= 0 && i < v, "[embedding_backward] index ", i, " is out of range for ", v,
               " embeddings");
  detail::dispatch_types<detail::kFloatMask>(out.dtype(), "embedding_backward", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* g = nn_ptr<const T>(c.in[0]);
    T* o = nn_ptr<T>(out);
    const int64_t m = static_cast<int64_t>(idx.size());
    parallel_for(0, d, std::max<int64_t>(8, kGrainSize / std::max<int64_t>(1, m + v)),
                 [&](int64_t c0, int64_t c1) {
                   const int64_t w = c1 - c0;
                   std::vector<C> acc(v * w, C(0));
                   for (int64_t r = 0; r < m; ++r) {
                     if (idx[r] == pad) continue;
                     C* a = acc.data() + idx[r] * w;
                     const T* gr = g + r * d + c0;
                     for (int64_t j = 0; j < w; ++j) a[j] += detail::convert<C>(gr[j]);
                   }
                   for (int64_t i = 0; i < v; ++i)
                     for (int64_t j = 0; j < w; ++j)
                       o[i * d + c0 + j] = detail::convert<T>(acc[i * w + j]);
                 });
  });
}

// out[0] = weight (in place), in = (indices); s0 = max_norm, s1 = norm_type. Rows referenced by
// indices with p-norm > max_norm are scaled by max_norm / (norm + 1e-7) (PyTorch's rule).
void embedding_renorm_kernel(OpCall& c) {
  const Tensor& w = c.out[0];
  const int64_t v = w.size(0), d = w.size(1);
  std::vector<int64_t> idx = read_indices(c.in[0]);
  for (int64_t i : idx)
    KILN_CHECK(i >= 0 && i < v, "[embedding_renorm_] index ", i, " is out of range for ", v,
               " embeddings");
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  const double max_norm = c.attrs.s0.to<double>(), p = c.attrs.s1.to<double>();
  detail::dispatch_types<detail::kFloatMask>(w.dtype(), "embedding_renorm_", [&]<class T>() {
    T* base = nn_ptr<T>(w);
    const int64_t rs = w.stride(0), cs = w.stride(1);
    for (int64_t i : idx) {
      T* row = base + i * rs;
      double norm = 0;
      for (int64_t j = 0; j < d; ++j) {
        const double a = std::abs(detail::convert<double>(row[j * cs]));
        if (p == 1)
          norm += a;
        else if (p == 2)
          norm += a * a;
        else if (std::isinf(p))
          norm = std::max(norm, a);
        else
          norm += std::pow(a, p);
      }
      if (p == 2)
        norm = std::sqrt(norm);
      else if (p != 1 && !std::isinf(p))
        norm = std::pow(norm, 1.0 / p);
      if (norm > max_norm) {
        const double scale = max_norm / (norm + 1e-7);
        for (int64_t j = 0; j < d; ++j)
          row[j * cs] = detail::convert<T>(
              static_cast<detail::opmath_t<T>>(detail::convert<double>(row[j * cs]) * scale));
      }
    }
  });
}

}  // namespace

void register_nn_loss_kernels(detail::KernelRegistry& r) {
  r.set(OpId::NllLoss, kCPU, &nll_loss_kernel);
  r.set(OpId::NllLossBackward, kCPU, &nll_loss_backward_kernel);
  r.set(OpId::Embedding, kCPU, &embedding_kernel);
  r.set(OpId::EmbeddingBackward, kCPU, &embedding_backward_kernel);
  r.set(OpId::EmbeddingRenorm, kCPU, &embedding_renorm_kernel);
}

}  // namespace kiln::cpu
