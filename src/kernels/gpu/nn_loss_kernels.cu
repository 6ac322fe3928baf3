// GPU kernels of nll_loss (forward/backward) and embedding (lookup, deterministic backward through
// sorted (index, position) keys, max_norm renorm). Index errors cannot raise from a kernel without
// a synchronization: out-of-range targets give NaN losses/gradients and out-of-range embedding
// indices give rows of all-ones bits (NaN for floats) (Note [GPU index errors]).
#include "kernels/gpu/nn_common.cuh"

namespace kiln::gpu {
namespace {

using namespace nnk;

// Note [GPU index errors]
// -----------------------
// The CPU kernels check every index and raise kiln::Error. A GPU kernel cannot raise, and checking
// on the host would synchronize every call; PyTorch's kernels abort the whole context instead.
// kiln's GPU nn kernels poison the result: NaN losses and gradients for out-of-range targets,
// all-ones bits (NaN for float dtypes, -1 for integers) for embedding rows of out-of-range indices,
// and no contribution from them to embedding gradients or renorms.

// in = (input [N, C, K], target [N*K], [weight [C]]); out = (loss, total_weight).
template <class T, class I>
__global__ void nll_elems_kernel(const T* x, const I* tgt, const T* w, T* out, double* pl,
                                 double* pw, int64_t n, int64_t cls, int64_t k, int64_t ignore) {
  using A = acc_t<T>;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * k) return;
  const int64_t i = e / k, j = e % k;
  const int64_t t = static_cast<int64_t>(tgt[e]);
  double l = 0, wt = 0;
  if (t != ignore) {
    if (t < 0 || t >= cls) {
      l = wt = NAN;
    } else {
      wt = w ? static_cast<double>(ld<A>(w[t])) : 1.0;
      l = -wt * static_cast<double>(ld<A>(x[(i * cls + t) * k + j]));
    }
  }
  if (out) out[e] = st<T>(static_cast<A>(l));
  if (pl) pl[e] = l, pw[e] = wt;
}

template <class I>
const I* iptr(const Tensor& t) {
  return static_cast<const I*>(t.data_ptr());
}

constexpr uint32_t kIndexMask = detail::dtype_bit(DType::Int64) | detail::dtype_bit(DType::Int32);

void nll_loss_op(OpCall& c) {
  const Tensor& in = c.in[0];
  const int64_t n = in.size(0), cls = in.size(1), k = in.size(2);
  const int64_t ignore = c.attrs.i0, reduction = c.attrs.i1;
  const int dev = device_of(in);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const int64_t m = n * k;
  detail::dispatch_types<detail::kFloatMask>(in.dtype(), "nll_loss", [&]<class T>() {
    detail::dispatch_types<kIndexMask>(c.in[1].dtype(), "nll_loss", [&]<class I>() {
      const T* x = static_cast<const T*>(in.data_ptr());
      const T* w = c.attrs.flag ? static_cast<const T*>(c.in[2].data_ptr()) : nullptr;
      T* out = static_cast<T*>(c.out[0].data_ptr());
      T* total = static_cast<T*>(c.out[1].data_ptr());
      Tensor ws = scratch<double>(2 * std::max<int64_t>(m, 1), in.device());
      double* pl = static_cast<double*>(ws.data_ptr());
      double* pw = pl + std::max<int64_t>(m, 1);
      if (m > 0)
        nll_elems_kernel<T, I><<<grid_for(m, 256), 256, 0, s>>>(
            x, iptr<I>(c.in[1]), w, reduction == 0 ? out : nullptr, pl, pw, n, cls, k, ignore);
      loss_finish_kernel<T>
          <<<1, 1024, 0, s>>>(pl, pw, m, reduction == 0 ? nullptr : out, total, reduction == 1);
    });
  });
  check("nll_loss", s);
}

// grad_input [N, C, K]: -w[t] * g (divided by total for mean) at the targets, 0 elsewhere.
template <class T, class I>
__global__ void nll_bwd_kernel(const T* g, const I* tgt, const T* w, const T* total, T* out,
                               int64_t n, int64_t cls, int64_t k, int64_t ignore,
                               int64_t reduction) {
  using A = acc_t<T>;
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n * cls * k) return;
  const int64_t j = e % k, cc = e / k % cls, i = e / (k * cls);
  const int64_t t = static_cast<int64_t>(tgt[i * k + j]);
  A v = 0;
  if (t != ignore && (t < 0 || t >= cls)) {
    v = NAN;
  } else if (t == cc && t != ignore) {
    A gv = ld<A>(reduction == 0 ? g[i * k + j] : g[0]);
    if (reduction == 1) gv /= ld<A>(total[0]);
    v = -(w ? ld<A>(w[t]) : A(1)) * gv;
  }
  out[e] = st<T>(v);
}

void nll_loss_backward_op(OpCall& c) {
  const Tensor& gi = c.out[0];
  const int64_t n = gi.size(0), cls = gi.size(1), k = gi.size(2);
  if (gi.numel() == 0) return;
  const int dev = device_of(gi);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  detail::dispatch_types<detail::kFloatMask>(gi.dtype(), "nll_loss_backward", [&]<class T>() {
    detail::dispatch_types<kIndexMask>(c.in[1].dtype(), "nll_loss_backward", [&]<class I>() {
      const T* w = c.attrs.flag ? static_cast<const T*>(c.in[2].data_ptr()) : nullptr;
      const T* total = static_cast<const T*>(c.in[c.attrs.flag ? 3 : 2].data_ptr());
      nll_bwd_kernel<T, I><<<grid_for(gi.numel(), 256), 256, 0, s>>>(
          static_cast<const T*>(c.in[0].data_ptr()), iptr<I>(c.in[1]), w, total,
          static_cast<T*>(gi.data_ptr()), n, cls, k, c.attrs.i0, c.attrs.i1);
    });
  });
  check("nll_loss_backward", s);
}

// ---- embedding ------------------------------------------------------------------------------

// out[r, :] = w[idx[r], :], copied as words of type U (d words per row).
template <class U, class I>
__global__ void embedding_kernel(const U* w, const I* idx, U* out, int64_t m, int64_t d,
                                 int64_t v) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= m * d) return;
  const int64_t r = e / d, j = e % d;
  const int64_t i = static_cast<int64_t>(idx[r]);
  if (i >= 0 && i < v) {
    out[e] = w[i * d + j];
  } else {
    U ones;
    memset(&ones, 0xFF, sizeof(U));
    out[e] = ones;
  }
}

template <int S>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint64_t;
};
template <>
struct Word<16> {
  using type = Vec<uint64_t, 2>;
};

void embedding_op(OpCall& c) {
  const Tensor& w = c.in[0];
  const int64_t v = w.size(0), d = w.size(1), m = c.in[1].numel();
  if (m == 0 || d == 0) return;
  const int dev = device_of(w);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const int64_t es = w.element_size();
  const void* src = w.data_ptr();
  void* dst = c.out[0].data_ptr();
  // The widest word that divides a row and keeps both pointers aligned.
  int64_t word = 16;
  while (word > es && ((d * es) % word != 0 || reinterpret_cast<uintptr_t>(src) % word != 0 ||
                       reinterpret_cast<uintptr_t>(dst) % word != 0))
    word /= 2;
  if (word < es) word = es;
  const int64_t dw = d * es / word;
  detail::dispatch_types<kIndexMask>(c.in[1].dtype(), "embedding", [&]<class I>() {
    auto launch = [&]<int S>() {
      using U = typename Word<S>::type;
      embedding_kernel<U, I><<<grid_for(m * dw, 256), 256, 0, s>>>(
          static_cast<const U*>(src), iptr<I>(c.in[1]), static_cast<U*>(dst), m, dw, v);
    };
    switch (word) {
      case 16:
        launch.template operator()<16>();
        break;
      case 8:
        launch.template operator()<8>();
        break;
      case 4:
        launch.template operator()<4>();
        break;
      case 2:
        launch.template operator()<2>();
        break;
      default:
        launch.template operator()<1>();
    }
  });
  check("embedding", s);
}

// Sorted keys (index << 32 | position) of m indices, padded to a power of two with ~0 keys.
// Note [Deterministic embedding backward]: sorting makes the rows of each index contiguous, in
// position order; one block per (run start, column tile) then sums its run in that order, so
// the gradient never depends on timing (no atomics).
template <class I>
__global__ void make_keys_kernel(const I* idx, uint64_t* keys, int64_t m, int64_t p2, int64_t v) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= p2) return;
  uint64_t key = ~uint64_t{0};
  if (e < m) {
    const int64_t i = static_cast<int64_t>(idx[e]);
    const uint64_t hi = i >= 0 && i < v ? static_cast<uint64_t>(i) : uint64_t{0xFFFFFFFFu};
    key = hi << 32 | static_cast<uint64_t>(e);
  }
  keys[e] = key;
}

__global__ void bitonic_global_kernel(uint64_t* keys, int64_t p2, int64_t j, int64_t k) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p2) return;
  const int64_t l = i ^ j;
  if (l <= i) return;
  const uint64_t a = keys[i], b = keys[l];
  if (((i & k) == 0) ? b < a : a < b) keys[i] = b, keys[l] = a;
}

// Every step with j < 2 * kSortTile in shared memory (one tile of 2 * kSortTile keys per block).
constexpr int kSortTile = 1024;
__global__ void __launch_bounds__(kSortTile)
    bitonic_shared_kernel(uint64_t* keys, int64_t p2, int64_t k_from, int64_t k_to,
                          int64_t j_from) {
  __shared__ uint64_t sk[2 * kSortTile];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * 2 * kSortTile;
  for (int q = threadIdx.x; q < 2 * kSortTile; q += blockDim.x)
    sk[q] = base + q < p2 ? keys[base + q] : ~uint64_t{0};
  __syncthreads();
  for (int64_t k = k_from; k <= k_to; k *= 2) {
    for (int64_t j = k == k_from ? j_from : k / 2; j > 0; j /= 2) {
      for (int q = threadIdx.x; q < 2 * kSortTile; q += blockDim.x) {
        const int l = q ^ static_cast<int>(j);
        if (l > q) {
          const uint64_t a = sk[q], b = sk[l];
          if ((((base + q) & k) == 0) ? b < a : a < b) sk[q] = b, sk[l] = a;
        }
      }
      __syncthreads();
    }
  }
  for (int q = threadIdx.x; q < 2 * kSortTile; q += blockDim.x)
    if (base + q < p2) keys[base + q] = sk[q];
}

// Sorts the keys of `idx` into a new buffer of p2 keys (returned with p2).
template <class I>
Tensor sorted_keys(const Tensor& indices, int64_t v, gpuStream_t s, int64_t& p2) {
  const int64_t m = indices.numel();
  p2 = 1;
  while (p2 < m) p2 *= 2;
  Tensor buf = scratch<uint64_t>(p2, indices.device());
  auto* keys = static_cast<uint64_t*>(buf.data_ptr());
  make_keys_kernel<I><<<grid_for(p2, 256), 256, 0, s>>>(iptr<I>(indices), keys, m, p2, v);
  const int64_t tile = 2 * kSortTile;
  const unsigned tiles = static_cast<unsigned>((p2 + tile - 1) / tile);
  // Stages k <= tile entirely in shared memory, then for each larger k the global steps with
  // j >= tile and the rest in shared memory.
  bitonic_shared_kernel<<<tiles, kSortTile, 0, s>>>(keys, p2, 2, std::min(p2, tile), 1);
  for (int64_t k = 2 * tile; k <= p2; k *= 2) {
    for (int64_t j = k / 2; j >= tile; j /= 2)
      bitonic_global_kernel<<<grid_for(p2, 256), 256, 0, s>>>(keys, p2, j, k);
    bitonic_shared_kernel<<<tiles, kSortTile, 0, s>>>(keys, p2, k, k, tile / 2);
  }
  return buf;
}

constexpr int kEmbTile = 128;

// Block (run start s, column tile): if s starts a run of index v, out[v, tile] = sum of the run's
// grad rows in position order. Other rows stay zero (memset before).
template <class T>
__global__ void embedding_bwd_kernel(const uint64_t* keys, const T* g, T* out, int64_t m, int64_t d,
                                     int64_t pad) {
  using A = acc_t<T>;
  const int64_t s = blockIdx.x;
  const uint64_t key = keys[s];
  const uint64_t v = key >> 32;
  if (v == 0xFFFFFFFFu || (s > 0 && keys[s - 1] >> 32 == v)) return;
  if (static_cast<int64_t>(v) == pad) return;
  const int64_t col = static_cast<int64_t>(blockIdx.y) * kEmbTile + threadIdx.x;
  if (col >= d) return;
  A acc = 0;
  for (int64_t e = s; e < m && keys[e] >> 32 == v; ++e) {
    const int64_t r = static_cast<int64_t>(keys[e] & 0xFFFFFFFFu);
    acc += ld<A>(g[r * d + col]);
  }
  out[static_cast<int64_t>(v) * d + col] = st<T>(acc);
}

void embedding_backward_op(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t v = out.size(0), d = out.size(1), m = c.in[1].numel();
  const int dev = device_of(out);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  if (out.numel() > 0) gpuMemsetAsync(out.data_ptr(), 0, out.numel() * out.element_size(), s);
  if (m == 0 || d == 0 || v == 0) return check("embedding_backward", s);
  KILN_CHECK(m < (int64_t{1} << 31) && v < (int64_t{1} << 32) - 1, "[embedding_backward] ", m,
             " indices for ", v,
             " embeddings: at most 2^31 indices and 2^32 - 1 embeddings on GPU");
  detail::dispatch_types<kIndexMask>(c.in[1].dtype(), "embedding_backward", [&]<class I>() {
    int64_t p2 = 0;
    Tensor keys = sorted_keys<I>(c.in[1], v, s, p2);
    detail::dispatch_types<detail::kFloatMask>(out.dtype(), "embedding_backward", [&]<class T>() {
      const dim3 grid(static_cast<unsigned>(m),
                      static_cast<unsigned>((d + kEmbTile - 1) / kEmbTile));
      embedding_bwd_kernel<T><<<grid, kEmbTile, 0, s>>>(
          static_cast<const uint64_t*>(keys.data_ptr()), static_cast<const T*>(c.in[0].data_ptr()),
          static_cast<T*>(out.data_ptr()), m, d, c.attrs.i0);
    });
  });
  check("embedding_backward", s);
}

// Renorm: one block per run start (each referenced row once), strided rows.
template <class T>
__global__ void embedding_renorm_kernel(const uint64_t* keys, T* w, int64_t m, int64_t d,
                                        int64_t rs, int64_t cs, double max_norm, double p) {
  __shared__ double smem[kMaxWarps];
  const int64_t s = blockIdx.x;
  const uint64_t v = keys[s] >> 32;
  if (v == 0xFFFFFFFFu || (s > 0 && keys[s - 1] >> 32 == v)) return;
  T* row = w + static_cast<int64_t>(v) * rs;
  double acc = 0;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const double a = ::fabs(ld<double>(row[j * cs]));
    if (p == 1)
      acc += a;
    else if (p == 2)
      acc += a * a;
    else if (::isinf(p))
      acc = acc > a ? acc : a;
    else
      acc += ::pow(a, p);
  }
  if (::isinf(p))
    acc = block_reduce(acc, MaxOp<double>(), smem);
  else
    acc = block_reduce(acc, SumOp<double>(), smem);
  const double norm = p == 2 ? dsqrt(acc) : (p == 1 || ::isinf(p)) ? acc : ::pow(acc, 1.0 / p);
  if (!(norm > max_norm)) return;
  const double scale = max_norm / (norm + 1e-7);
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
    row[j * cs] = st<T>(static_cast<acc_t<T>>(ld<double>(row[j * cs]) * scale));
}

void embedding_renorm_op(OpCall& c) {
  const Tensor& w = c.out[0];
  const int64_t v = w.size(0), d = w.size(1), m = c.in[0].numel();
  if (m == 0 || d == 0 || v == 0) return;
  const int dev = device_of(w);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  KILN_CHECK(m < (int64_t{1} << 31) && v < (int64_t{1} << 32) - 1, "[embedding_renorm_] ", m,
             " indices for ", v,
             " embeddings: at most 2^31 indices and 2^32 - 1 embeddings on GPU");
  detail::dispatch_types<kIndexMask>(c.in[0].dtype(), "embedding_renorm_", [&]<class I>() {
    int64_t p2 = 0;
    Tensor keys = sorted_keys<I>(c.in[0], v, s, p2);
    detail::dispatch_types<detail::kFloatMask>(w.dtype(), "embedding_renorm_", [&]<class T>() {
      embedding_renorm_kernel<T><<<static_cast<unsigned>(m), 256, 0, s>>>(
          static_cast<const uint64_t*>(keys.data_ptr()), static_cast<T*>(w.data_ptr()), m, d,
          w.stride(0), w.stride(1), c.attrs.s0.to<double>(), c.attrs.s1.to<double>());
    });
  });
  check("embedding_renorm_", s);
}

}  // namespace

void register_nn_loss_kernels(detail::KernelRegistry& r) {
  r.set(OpId::NllLoss, kCUDA, &nll_loss_op);
  r.set(OpId::NllLossBackward, kCUDA, &nll_loss_backward_op);
  r.set(OpId::Embedding, kCUDA, &embedding_op);
  r.set(OpId::EmbeddingBackward, kCUDA, &embedding_backward_op);
  r.set(OpId::EmbeddingRenorm, kCUDA, &embedding_renorm_op);
}

}  // namespace kiln::gpu
