// GPU kernels of the fused nn primitives: cross_entropy_loss (one read of the logits, online
// max/sum, lse saved), its backward (one read, one write) and native_dropout (one pass, the CPU's
// Philox mask bit for bit). Math: Note [Fused cross-entropy], Note [Fused dropout] (CPU kernels).
#include "kernels/distributions.h"
#include "kernels/gpu/nn_common.cuh"
#include "kernels/philox.h"

namespace kiln::gpu {
namespace {

using namespace nnk;

constexpr int kCeThreads = 512;

// ws[0] = total weight of the targets not ignored (mean), ws[1] = sum of the class weights.
template <class T>
__global__ void ce_weights_kernel(const int64_t* tgt, const T* w, int64_t n, int64_t cls,
                                  int64_t ignore, double* ws) {
  __shared__ double smem[kMaxWarps];
  double tot = 0, all = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t t = tgt[i];
    if (t == ignore) continue;
    tot += t < 0 || t >= cls ? static_cast<double>(NAN) : w ? ld<double>(w[t]) : 1.0;
  }
  for (int64_t c = threadIdx.x; c < cls; c += blockDim.x) all += w ? ld<double>(w[c]) : 1.0;
  tot = block_reduce(tot, SumOp<double>(), smem);
  all = block_reduce(all, SumOp<double>(), smem);
  if (threadIdx.x == 0) ws[0] = tot, ws[1] = all;
}

// exp(x - m) that is 0 for x = -inf whatever m (rows that start with masked logits).
template <class A>
__device__ __forceinline__ A exp_shift(A x, A m) {
  return x == -static_cast<A>(INFINITY) ? A(0) : dexp(x - m);
}

// Folds V values into the online state (m, s) and the smoothing sum sx (sum_c w_c * x_c).
template <class T, int V, class A>
__device__ __forceinline__ void ce_fold(const A (&v)[V], const T* w, int64_t c0, bool smooth, A& m,
                                        A& s, A& sx) {
  A lm = v[0];
#pragma unroll
  for (int j = 1; j < V; ++j) lm = MaxOp<A>()(lm, v[j]);
  const A mn = MaxOp<A>()(m, lm);
  if (!(mn == m)) {
    s = m == -static_cast<A>(INFINITY) ? A(0) : s * dexp(m - mn);
    m = mn;
  }
#pragma unroll
  for (int j = 0; j < V; ++j) s += exp_shift(v[j], m);
  if (smooth) {
#pragma unroll
    for (int j = 0; j < V; ++j) sx += (w ? ld<A>(w[c0 + j]) : A(1)) * v[j];
  }
}

// One block per row: lse, the row's loss (none: out[row]; else pl/pw for the finish kernel).
template <class T, class O>
__global__ void __launch_bounds__(kCeThreads)
    ce_fwd_kernel(const T* x, const int64_t* tgt, const T* w, const double* ws, O* out,
                  acc_t<T>* lse_out, double* pl, double* pw, int64_t cls, int64_t ignore, double ls,
                  bool vec) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  __shared__ A sm[kMaxWarps], ss[kMaxWarps];
  const int64_t row = blockIdx.x;
  const T* r = x + row * cls;
  const bool smooth = ls > 0;
  A m = -static_cast<A>(INFINITY), s = 0, sx = 0;
  if (vec) {
    // Four 16-byte loads in flight per thread, then their folds.
    constexpr int U = 4;
    const int64_t nv = cls / V, B = blockDim.x;
    const auto* rv = reinterpret_cast<const Vec<T, V>*>(r);
    int64_t k = threadIdx.x;
    for (; k + (U - 1) * B < nv; k += U * B) {
      Vec<T, V> raw[U];
#pragma unroll
      for (int u = 0; u < U; ++u) raw[u] = rv[k + u * B];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        A v[V];
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = ld<A>(raw[u].v[j]);
        ce_fold<T, V>(v, w, (k + u * B) * V, smooth, m, s, sx);
      }
    }
    for (; k < nv; k += B) {
      const Vec<T, V> raw = rv[k];
      A v[V];
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = ld<A>(raw.v[j]);
      ce_fold<T, V>(v, w, k * V, smooth, m, s, sx);
    }
  } else {
    for (int64_t c = threadIdx.x; c < cls; c += blockDim.x) {
      const A v[1] = {ld<A>(r[c])};
      ce_fold<T, 1>(v, w, c, smooth, m, s, sx);
    }
  }
  block_online_reduce(m, s, sm, ss);
  if (smooth) sx = block_reduce(sx, SumOp<A>(), sm);
  if (threadIdx.x != 0) return;
  const A lse = m + dlog(s);
  lse_out[row] = lse;
  const int64_t t = tgt[row];
  double l = 0, wt = 0;
  if (t != ignore) {
    if (t < 0 || t >= cls) {
      l = wt = NAN;
    } else {
      wt = w ? ld<double>(w[t]) : 1.0;
      l = (1 - ls) * wt * static_cast<double>(lse - ld<A>(r[t]));
      if (smooth)
        l += ls / static_cast<double>(cls) * static_cast<double>(static_cast<A>(ws[1]) * lse - sx);
    }
  }
  if (out) out[row] = st<O>(static_cast<A>(l));
  if (pl) pl[row] = l, pw[row] = wt;
}

void cross_entropy_op(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.size(0), cls = x.size(1);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const double ls = c.attrs.s0.to<double>();
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "cross_entropy_loss", [&]<class T>() {
    using A = acc_t<T>;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const int64_t* tgt = static_cast<const int64_t*>(c.in[1].data_ptr());
    const T* w = c.attrs.flag ? static_cast<const T*>(c.in[2].data_ptr()) : nullptr;
    A* lse = static_cast<A*>(c.out[1].data_ptr());
    const int64_t slots = std::max<int64_t>(n, 1);
    Tensor buf = scratch<double>(2 + (reduction == 0 ? 0 : 2 * slots), x.device());
    double* ws = static_cast<double*>(buf.data_ptr());
    double* pl = reduction == 0 ? nullptr : ws + 2;
    double* pw = reduction == 0 ? nullptr : ws + 2 + slots;
    if (ls > 0) ce_weights_kernel<T><<<1, 1024, 0, s>>>(tgt, w, 0, cls, ignore, ws);
    const bool vec = cls % vec_width<T>() == 0 && aligned16(xp);
    // The loss is T, or float32 for half-precision logits under autocast (Note [autocast
    // cross-entropy] in src/nn/functional/loss_ops.cpp).
    auto launch = [&]<class O>() {
      O* out = static_cast<O*>(c.out[0].data_ptr());
      if (n > 0)
        ce_fwd_kernel<T, O><<<static_cast<unsigned>(n), kCeThreads, 0, s>>>(
            xp, tgt, w, ws, reduction == 0 ? out : nullptr, lse, pl, pw, cls, ignore, ls, vec);
      if (reduction != 0)
        loss_finish_kernel<O>
            <<<1, 1024, 0, s>>>(pl, pw, n, out, static_cast<O*>(nullptr), reduction == 1);
    };
    if (c.out[0].dtype() == x.dtype())
      launch.template operator()<T>();
    else if constexpr (!std::is_same_v<T, float>)
      launch.template operator()<float>();
  });
  check("cross_entropy_loss", s);
}

// One block per row: grad = scale * ((1 - ls) w_t (p - [c == t]) + ls / C (W p - w_c)).
template <class T>
__global__ void __launch_bounds__(kCeThreads)
    ce_bwd_kernel(const T* g, const T* x, const int64_t* tgt, const acc_t<T>* lse, const T* w,
                  const double* ws, T* dx, int64_t cls, int64_t ignore, int64_t reduction,
                  double ls, bool vec) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  const int64_t row = blockIdx.x;
  const T* r = x + row * cls;
  T* o = dx + row * cls;
  const int64_t t = tgt[row];
  const bool bad = t != ignore && (t < 0 || t >= cls);
  A a = 0, scale = 0;
  if (t != ignore && !bad) {
    a = static_cast<A>((1 - ls) * (w ? ld<double>(w[t]) : 1.0));
    scale = ld<A>(reduction == 0 ? g[row] : g[0]);
    if (reduction == 1) scale = static_cast<A>(static_cast<double>(scale) / ws[0]);
  }
  if (bad) scale = NAN;
  const A bs = static_cast<A>(ls / static_cast<double>(cls));
  const A wall = ls > 0 ? static_cast<A>(ws[1]) : A(0);
  const A l = lse[row];
  const bool zero = t == ignore;
  auto grad = [&](A xv, int64_t c) {
    if (zero) return A(0);
    const A p = dexp(xv - l);
    A d = a * (p - (c == t ? A(1) : A(0)));
    if (ls > 0) d += bs * (wall * p - (w ? ld<A>(w[c]) : A(1)));
    return scale * d;
  };
  if (vec) {
    const int64_t nv = cls / V;
    for (int64_t k = threadIdx.x; k < nv; k += blockDim.x) {
      const Vec<T, V> raw = reinterpret_cast<const Vec<T, V>*>(r)[k];
      Vec<T, V> res;
#pragma unroll
      for (int j = 0; j < V; ++j) res.v[j] = st<T>(grad(ld<A>(raw.v[j]), k * V + j));
      reinterpret_cast<Vec<T, V>*>(o)[k] = res;
    }
  } else {
    for (int64_t c = threadIdx.x; c < cls; c += blockDim.x) o[c] = st<T>(grad(ld<A>(r[c]), c));
  }
}

// in = (grad_loss, logits, target, lse, [weight]); out = grad_logits.
void cross_entropy_backward_op(OpCall& c) {
  const Tensor& x = c.in[1];
  const int64_t n = x.size(0), cls = x.size(1);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const double ls = c.attrs.s0.to<double>();
  if (n == 0 || cls == 0) return;
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  detail::dispatch_types<detail::kFloatMask>(
      x.dtype(), "cross_entropy_loss_backward", [&]<class T>() {
        using A = acc_t<T>;
        const T* xp = static_cast<const T*>(x.data_ptr());
        const int64_t* tgt = static_cast<const int64_t*>(c.in[2].data_ptr());
        const T* w = c.attrs.flag ? static_cast<const T*>(c.in[4].data_ptr()) : nullptr;
        T* dx = static_cast<T*>(c.out[0].data_ptr());
        Tensor buf = scratch<double>(2, x.device());
        double* ws = static_cast<double*>(buf.data_ptr());
        if (reduction == 1 || ls > 0)
          ce_weights_kernel<T><<<1, 1024, 0, s>>>(tgt, w, reduction == 1 ? n : 0, cls, ignore, ws);
        const bool vec = cls % vec_width<T>() == 0 && aligned16(xp) && aligned16(dx);
        ce_bwd_kernel<T><<<static_cast<unsigned>(n), kCeThreads, 0, s>>>(
            static_cast<const T*>(c.in[0].data_ptr()), xp, tgt,
            static_cast<const A*>(c.in[3].data_ptr()), w, ws, dx, cls, ignore, reduction, ls, vec);
      });
  check("cross_entropy_loss_backward", s);
}

// ---- native_dropout ------------------------------------------------------------------------

// Thread per group of 4 elements: one Philox block gives their 4 words (k = 1).
template <class T>
__global__ void dropout_kernel(const T* x, T* y, bool* mask, int64_t n, uint64_t seed,
                               uint64_t offset, const int64_t* state, float keep, acc_t<T> scale,
                               bool vec) {
  using A = acc_t<T>;
  if (state) seed = static_cast<uint64_t>(state[0]), offset += static_cast<uint64_t>(state[1]);
  const Philox4x32 rng(seed);
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t gi = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; gi < groups;
       gi += stride) {
    const PhiloxBlock b = rng.block(offset, static_cast<uint64_t>(gi));
    const int64_t i0 = gi * 4;
    if (vec && i0 + 4 <= n) {
      const Vec<T, 4> xv = reinterpret_cast<const Vec<T, 4>*>(x)[gi];
      Vec<T, 4> yv;
      Vec<bool, 4> mv;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool k = rng_uniform_float(b.v[j]) < keep;
        mv.v[j] = k;
        yv.v[j] = st<T>(k ? static_cast<A>(ld<A>(xv.v[j]) * scale) : A(0));
      }
      reinterpret_cast<Vec<T, 4>*>(y)[gi] = yv;
      reinterpret_cast<Vec<bool, 4>*>(mask)[gi] = mv;
    } else {
      for (int j = 0; j < 4 && i0 + j < n; ++j) {
        const bool k = rng_uniform_float(b.v[j]) < keep;
        mask[i0 + j] = k;
        y[i0 + j] = st<T>(k ? static_cast<A>(ld<A>(x[i0 + j]) * scale) : A(0));
      }
    }
  }
}

void native_dropout_op(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = x.numel();
  if (n == 0) return;
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const double p = c.attrs.s0.to<double>();
  const float keep = static_cast<float>(1.0 - p);
  const int64_t* state =
      c.in.size() > 1 ? static_cast<const int64_t*>(c.in[1].data_ptr()) : nullptr;
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "native_dropout", [&]<class T>() {
    using A = acc_t<T>;
    const A scale = p < 1 ? static_cast<A>(1.0 / (1.0 - p)) : A(0);
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* y = static_cast<T*>(c.out[0].data_ptr());
    bool* mask = static_cast<bool*>(c.out[1].data_ptr());
    const auto al = [](const void* q, size_t b) { return reinterpret_cast<uintptr_t>(q) % b == 0; };
    const bool vec = al(xp, 4 * sizeof(T)) && al(y, 4 * sizeof(T)) && al(mask, 4);
    const int64_t groups = (n + 3) / 4;
    const int64_t cap = static_cast<int64_t>(device_info(dev).multi_processor_count) * 16;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((groups + 255) / 256, cap));
    dropout_kernel<T><<<blocks, 256, 0, s>>>(xp, y, mask, n, static_cast<uint64_t>(c.attrs.ints[0]),
                                             static_cast<uint64_t>(c.attrs.ints[1]), state, keep,
                                             scale, vec);
  });
  check("native_dropout", s);
}

}  // namespace

void register_nn_fused_kernels(detail::KernelRegistry& r) {
  r.set(OpId::CrossEntropyLoss, kCUDA, &cross_entropy_op);
  r.set(OpId::CrossEntropyLossBackward, kCUDA, &cross_entropy_backward_op);
  r.set(OpId::NativeDropout, kCUDA, &native_dropout_op);
}

}  // namespace kiln::gpu
