// GPU multi-tensor kernels (Note [Multi-tensor kernels] in optim/multi_tensor.h): fused
// Adam/AdamW and SGD steps, unscale + inf/NaN check, per-tensor norms and scaling. One launch
// covers many tensors: their pointers, sizes and scalars travel in the kernel arguments.
#include "kernels/gpu/nn_common.cuh"

#include <algorithm>
#include <cmath>
#include "optim/foreach_math.h"
#include "optim/multi_tensor.h"

namespace kiln::gpu {
namespace {

using namespace nnk;
using detail::FusedAdamArgs;
using detail::FusedSgdArgs;
namespace fm = detail::foreach_math;

// Note [Multi-tensor launches]
// ----------------------------
// As PyTorch's multi_tensor_apply: each tensor is cut into chunks of kChunk elements and each
// block of a launch handles one chunk. A launch's arguments (under the 4 KB that every target
// takes) list up to max_tensors<D, NS>() tensors (D pointers each, the size, NS scalars) and,
// for each of up to kMaxBlocks blocks, the tensor slot and chunk it handles. A tensor whose
// chunks do not fit in one launch continues in slot 0 of the next. Chunks whose pointers are
// all aligned for kW-element vectors load and store vectors (kW = 4: 16 bytes of float32, 8 of
// 16-bit types); the rest of a chunk and unaligned chunks go element by element.
constexpr int64_t kChunk = 65536;
constexpr int kThreads = 512;
constexpr int kMaxBlocks = 320;
constexpr int kW = 4;
constexpr int kArgBudget = 3800;  // bytes of kernel arguments, leaving room for the constants

template <int D, int NS>
constexpr int max_tensors() {
  const int per = 8 * D + 8 + 8 * (NS > 0 ? NS : 1);
  const int t = (kArgBudget - kMaxBlocks * 5 - 16) / per;
  return t > 200 ? 200 : t;
}

template <int D, int NS>
struct Meta {
  static constexpr int kT = max_tensors<D, NS>();
  void* ptr[D][kT];
  int64_t n[kT];
  double scal[NS > 0 ? NS : 1][kT];
  int64_t first_block;  // global index of this launch's block 0 (norm partials)
  int32_t block_chunk[kMaxBlocks];
  uint8_t block_tensor[kMaxBlocks];
};
static_assert(sizeof(Meta<6, 2>) <= kArgBudget && sizeof(Meta<1, 0>) <= kArgBudget);
static_assert(max_tensors<6, 2>() >= 16 && max_tensors<1, 0>() <= 255);

#if KILN_CUDA
#define KILN_GRID_CONST __grid_constant__
#else
#define KILN_GRID_CONST
#endif

int64_t chunks_of(int64_t n) { return (n + kChunk - 1) / kChunk; }

// Packs the tensors (sizes[i] elements; fill(meta, slot, i) writes pointers and scalars) into
// launches; launch(meta, blocks) runs one. on_tensor(i, first_global_block) is told where each
// non-empty tensor's first chunk lands (for the norm partials).
template <int D, int NS, class Fill, class Launch, class OnTensor>
void apply(const std::vector<int64_t>& sizes, Fill fill, Launch launch, OnTensor on_tensor) {
  constexpr int T = Meta<D, NS>::kT;
  Meta<D, NS> m;
  m.first_block = 0;
  int slot = 0, blocks = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t n = sizes[i];
    if (n == 0) continue;
    fill(m, slot, i);
    m.n[slot] = n;
    on_tensor(i, m.first_block + blocks);
    const int64_t chunks = chunks_of(n);
    for (int64_t c = 0; c < chunks; ++c) {
      m.block_tensor[blocks] = static_cast<uint8_t>(slot);
      m.block_chunk[blocks] = static_cast<int32_t>(c);
      ++blocks;
      const bool last_chunk = c == chunks - 1;
      if (blocks == kMaxBlocks || (last_chunk && slot + 1 == T)) {
        launch(m, blocks);
        m.first_block += blocks;
        blocks = 0;
        if (last_chunk) {
          slot = -1;
        } else {  // the tensor continues in slot 0 of the next launch
          for (int d = 0; d < D; ++d) m.ptr[d][0] = m.ptr[d][slot];
          for (int s = 0; s < NS; ++s) m.scal[s][0] = m.scal[s][slot];
          m.n[0] = m.n[slot];
          slot = 0;
        }
      }
    }
    ++slot;
  }
  if (blocks > 0) launch(m, blocks);
}

template <int D, int NS, class Fill, class Launch>
void apply(const std::vector<int64_t>& sizes, Fill fill, Launch launch) {
  apply<D, NS>(sizes, fill, launch, [](size_t, int64_t) {});
}

std::vector<int64_t> sizes_of(const std::vector<Tensor>& ts) {
  std::vector<int64_t> s;
  for (const Tensor& t : ts) s.push_back(t.numel());
  return s;
}

// The chunk of the calling block: its tensor slot, first element and length.
struct ChunkPos {
  int slot;
  int64_t base, len;
};
template <class M>
__device__ __forceinline__ ChunkPos chunk_pos(const M& m) {
  ChunkPos c;
  c.slot = m.block_tensor[blockIdx.x];
  c.base = static_cast<int64_t>(m.block_chunk[blockIdx.x]) * kChunk;
  const int64_t rest = m.n[c.slot] - c.base;
  c.len = rest < kChunk ? rest : kChunk;
  return c;
}

template <int W, class T>
__device__ __forceinline__ bool aligned_for(const T* p) {
  return p == nullptr || reinterpret_cast<uintptr_t>(p) % (sizeof(T) * W) == 0;
}

template <int W, class T>
__device__ __forceinline__ void load(const T* p, int64_t j, T (&r)[W]) {
  if constexpr (W == 1) {
    r[0] = p[j];
  } else {
    const Vec<T, W> v = *reinterpret_cast<const Vec<T, W>*>(p + j);
#pragma unroll
    for (int k = 0; k < W; ++k) r[k] = v.v[k];
  }
}

template <int W, class T>
__device__ __forceinline__ void store(T* p, int64_t j, const T (&r)[W]) {
  if constexpr (W == 1) {
    p[j] = r[0];
  } else {
    Vec<T, W> v;
#pragma unroll
    for (int k = 0; k < W; ++k) v.v[k] = r[k];
    *reinterpret_cast<Vec<T, W>*>(p + j) = v;
  }
}

// Calls body.template operator()<W>(j) over the chunk [base, base + len): W = kW vectors when
// `vec`, then single elements.
template <class Body>
__device__ __forceinline__ void over_chunk(int64_t base, int64_t len, bool vec, Body body) {
  int64_t done = 0;
  if (vec) {
    const int64_t nv = len / kW;
    for (int64_t i = threadIdx.x; i < nv; i += blockDim.x)
      body.template operator()<kW>(base + i * kW);
    done = nv * kW;
  }
  for (int64_t j = done + threadIdx.x; j < len; j += blockDim.x)
    body.template operator()<1>(base + j);
}

// ------------------------------------------------------------------ Adam / AdamW

using AdamMeta = Meta<6, 2>;  // p, g, m, v, vmax, master; neg_step, bc2_sqrt

template <class P, class S, class A>
__global__ void __launch_bounds__(kThreads)
    adam_kernel(const AdamMeta KILN_GRID_CONST m, const fm::AdamConsts<A> c, const A inv,
                const bool unscale) {
  const ChunkPos pos = chunk_pos(m);
  P* p = static_cast<P*>(m.ptr[0][pos.slot]);
  P* g = static_cast<P*>(m.ptr[1][pos.slot]);
  S* ea = static_cast<S*>(m.ptr[2][pos.slot]);
  S* ev = static_cast<S*>(m.ptr[3][pos.slot]);
  S* vmax = static_cast<S*>(m.ptr[4][pos.slot]);
  float* master = static_cast<float*>(m.ptr[5][pos.slot]);
  const A neg_step = static_cast<A>(m.scal[0][pos.slot]), bc2 = static_cast<A>(m.scal[1][pos.slot]);
  const bool vec = aligned_for<kW>(p) && aligned_for<kW>(g) && aligned_for<kW>(ea) &&
                   aligned_for<kW>(ev) && aligned_for<kW>(vmax) && aligned_for<kW>(master);
  over_chunk(pos.base, pos.len, vec, [&]<int W>(int64_t j) {
    P pr[W], gr[W];
    S mr[W], vr[W], xr[W];
    float wr[W];
    load<W>(g, j, gr);
    load<W>(ea, j, mr);
    load<W>(ev, j, vr);
    if (vmax) load<W>(vmax, j, xr);
    if (master)
      load<W>(master, j, wr);
    else
      load<W>(p, j, pr);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      A gv = ld<A>(gr[k]);
      if (unscale) {
        gv = gv * inv;
        gr[k] = st<P>(gv);
      }
      A pv = master ? static_cast<A>(wr[k]) : ld<A>(pr[k]);
      A mv = ld<A>(mr[k]), vv = ld<A>(vr[k]), xv = vmax ? ld<A>(xr[k]) : A(0);
      fm::adam_element(pv, gv, mv, vv, &xv, c, neg_step, bc2);
      mr[k] = st<S>(mv);
      vr[k] = st<S>(vv);
      xr[k] = st<S>(xv);
      wr[k] = static_cast<float>(pv);
      pr[k] = st<P>(pv);
    }
    if (unscale) store<W>(g, j, gr);
    store<W>(ea, j, mr);
    store<W>(ev, j, vr);
    if (vmax) store<W>(vmax, j, xr);
    if (master) store<W>(master, j, wr);
    store<W>(p, j, pr);
  });
}

int device_index(const Tensor& t) { return device_of(t); }

template <class P, class S>
void adam_lists(const FusedAdamArgs& a) {
  using A = acc_t<S>;
  const int dev = device_index(a.params[0]);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const fm::AdamConsts<A> c{static_cast<A>(a.beta1),
                            static_cast<A>(1 - a.beta1),
                            static_cast<A>(a.beta2),
                            static_cast<A>(1 - a.beta2),
                            static_cast<A>(a.eps),
                            static_cast<A>(a.weight_decay),
                            static_cast<A>(1 - a.lr * a.weight_decay),
                            a.decoupled,
                            a.amsgrad,
                            a.maximize};
  const bool unscale = a.inv_grad_scale != 1.0;
  const A inv = static_cast<A>(a.inv_grad_scale);
  apply<6, 2>(
      sizes_of(a.params),
      [&](AdamMeta& m, int slot, size_t i) {
        m.ptr[0][slot] = a.params[i].data_ptr();
        m.ptr[1][slot] = a.grads[i].data_ptr();
        m.ptr[2][slot] = a.exp_avgs[i].data_ptr();
        m.ptr[3][slot] = a.exp_avg_sqs[i].data_ptr();
        m.ptr[4][slot] = a.amsgrad ? a.max_exp_avg_sqs[i].data_ptr() : nullptr;
        m.ptr[5][slot] = a.masters.empty() ? nullptr : a.masters[i].data_ptr();
        m.scal[0][slot] = a.neg_step[i];
        m.scal[1][slot] = a.bc2_sqrt[i];
      },
      [&](const AdamMeta& m, int blocks) {
        adam_kernel<P, S, A><<<blocks, kThreads, 0, s>>>(m, c, inv, unscale);
        check("_fused_adam_", s);
      });
}

// ------------------------------------------------------------------ SGD

using SgdMeta = Meta<4, 1>;  // p, g, buf, master; first (0/1)

template <class P, class S, class A>
__global__ void __launch_bounds__(kThreads)
    sgd_kernel(const SgdMeta KILN_GRID_CONST m, const fm::SgdConsts<A> c, const A inv,
               const bool unscale) {
  const ChunkPos pos = chunk_pos(m);
  P* p = static_cast<P*>(m.ptr[0][pos.slot]);
  P* g = static_cast<P*>(m.ptr[1][pos.slot]);
  S* buf = static_cast<S*>(m.ptr[2][pos.slot]);
  float* master = static_cast<float*>(m.ptr[3][pos.slot]);
  const bool first = m.scal[0][pos.slot] != 0;
  const bool vec =
      aligned_for<kW>(p) && aligned_for<kW>(g) && aligned_for<kW>(buf) && aligned_for<kW>(master);
  over_chunk(pos.base, pos.len, vec, [&]<int W>(int64_t j) {
    P pr[W], gr[W];
    S br[W];
    float wr[W];
    load<W>(g, j, gr);
    if (buf && !first) load<W>(buf, j, br);
    if (master)
      load<W>(master, j, wr);
    else
      load<W>(p, j, pr);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      A gv = ld<A>(gr[k]);
      if (unscale) {
        gv = gv * inv;
        gr[k] = st<P>(gv);
      }
      A pv = master ? static_cast<A>(wr[k]) : ld<A>(pr[k]);
      A bv = buf && !first ? ld<A>(br[k]) : A(0);
      fm::sgd_element(pv, gv, &bv, first, c);
      br[k] = st<S>(bv);
      wr[k] = static_cast<float>(pv);
      pr[k] = st<P>(pv);
    }
    if (unscale) store<W>(g, j, gr);
    if (buf) store<W>(buf, j, br);
    if (master) store<W>(master, j, wr);
    store<W>(p, j, pr);
  });
}

template <class P, class S>
void sgd_lists(const FusedSgdArgs& a) {
  using A = acc_t<S>;
  const int dev = device_index(a.params[0]);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const bool has_momentum = a.momentum != 0;
  const fm::SgdConsts<A> c{static_cast<A>(-a.lr),
                           static_cast<A>(a.momentum),
                           static_cast<A>(1 - a.dampening),
                           static_cast<A>(a.weight_decay),
                           a.nesterov,
                           a.maximize,
                           has_momentum};
  const bool unscale = a.inv_grad_scale != 1.0;
  const A inv = static_cast<A>(a.inv_grad_scale);
  apply<4, 1>(
      sizes_of(a.params),
      [&](SgdMeta& m, int slot, size_t i) {
        m.ptr[0][slot] = a.params[i].data_ptr();
        m.ptr[1][slot] = a.grads[i].data_ptr();
        m.ptr[2][slot] = has_momentum ? a.momentum_buffers[i].data_ptr() : nullptr;
        m.ptr[3][slot] = a.masters.empty() ? nullptr : a.masters[i].data_ptr();
        m.scal[0][slot] = has_momentum && a.first[i] ? 1.0 : 0.0;
      },
      [&](const SgdMeta& m, int blocks) {
        sgd_kernel<P, S, A><<<blocks, kThreads, 0, s>>>(m, c, inv, unscale);
        check("_fused_sgd_", s);
      });
}

void fused_adam(const FusedAdamArgs& a) {
  detail::dispatch_param_state(a, "_fused_adam_", [&]<class P, class S>() { adam_lists<P, S>(a); });
}

void fused_sgd(const FusedSgdArgs& a) {
  detail::dispatch_param_state(a, "_fused_sgd_", [&]<class P, class S>() { sgd_lists<P, S>(a); });
}

// ------------------------------------------------------------------ unscale, norms, scale

using ListMeta = Meta<1, 0>;

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    unscale_kernel(const ListMeta KILN_GRID_CONST m, const A inv, const bool write, float* found) {
  const ChunkPos pos = chunk_pos(m);
  T* x = static_cast<T*>(m.ptr[0][pos.slot]);
  bool bad = false;
  over_chunk(pos.base, pos.len, aligned_for<kW>(x), [&]<int W>(int64_t j) {
    T r[W];
    load<W>(x, j, r);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A v = ld<A>(r[k]);
      bad |= !fm::finite(v);
      r[k] = st<T>(v * inv);
    }
    if (write) store<W>(x, j, r);
  });
  if (bad) *found = 1.0f;  // every writer stores the same value
}

void unscale_check(const std::vector<Tensor>& ts, double inv_scale, const Tensor& found_inf) {
  const int dev = device_index(ts[0]);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  float* found = static_cast<float*>(found_inf.data_ptr());
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "unscale", [&]<class T>() {
    using A = acc_t<T>;
    apply<1, 0>(
        sizes_of(ts), [&](ListMeta& m, int slot, size_t i) { m.ptr[0][slot] = ts[i].data_ptr(); },
        [&](const ListMeta& m, int blocks) {
          unscale_kernel<T, A>
              <<<blocks, kThreads, 0, s>>>(m, static_cast<A>(inv_scale), inv_scale != 1.0, found);
          check("_amp_foreach_non_finite_check_and_unscale_", s);
        });
  });
}

template <class A>
__device__ __forceinline__ A dpow(A x, A y) {
  if constexpr (sizeof(A) == sizeof(float))
    return ::powf(x, y);
  else
    return ::pow(x, y);
}

// Norm kinds: 0 inf (max |x|), 1 (sum |x|), 2 (sum x^2), 3 general p (sum |x|^p).
template <class A>
__device__ __forceinline__ A norm_term(A a, int kind, A p) {
  return kind == 2 ? a * a : kind == 3 ? dpow(a, p) : a;
}

template <class A>
__device__ __forceinline__ A norm_combine(A x, A y, int kind) {
  return kind == 0 ? MaxOp<A>()(x, y) : x + y;
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    norm_partial_kernel(const ListMeta KILN_GRID_CONST m, int kind, A p, A* partials) {
  __shared__ A smem[kMaxWarps];
  const ChunkPos pos = chunk_pos(m);
  const T* x = static_cast<const T*>(m.ptr[0][pos.slot]);
  A acc = 0;
  over_chunk(pos.base, pos.len, aligned_for<kW>(x), [&]<int W>(int64_t j) {
    T r[W];
    load<W>(x, j, r);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const A a = ld<A>(r[k]);
      acc = norm_combine(acc, norm_term(a < A(0) ? -a : a, kind, p), kind);
    }
  });
  acc = kind == 0 ? block_reduce(acc, MaxOp<A>(), smem) : block_reduce(acc, SumOp<A>(), smem);
  if (threadIdx.x == 0) partials[m.first_block + blockIdx.x] = acc;
}

// Per-tensor ranges of partials for the finishing kernel (one block per tensor).
constexpr int kFinishMax = 460;
struct FinishMeta {
  int32_t start[kFinishMax];
  int32_t count[kFinishMax];
  int32_t out_base;
};
static_assert(sizeof(FinishMeta) <= kArgBudget);

constexpr int kFinishThreads = 256;

template <class A>
__global__ void __launch_bounds__(kFinishThreads)
    norm_finish_kernel(const FinishMeta KILN_GRID_CONST f, const A* partials, int kind, A p,
                       A* out) {
  __shared__ A smem[kMaxWarps];
  const int b = blockIdx.x;
  A acc = 0;
  for (int k = threadIdx.x; k < f.count[b]; k += blockDim.x)
    acc = norm_combine(acc, partials[f.start[b] + k], kind);
  acc = kind == 0 ? block_reduce(acc, MaxOp<A>(), smem) : block_reduce(acc, SumOp<A>(), smem);
  if (threadIdx.x == 0)
    out[f.out_base + b] = kind == 2 ? dsqrt(acc) : kind == 3 ? dpow(acc, A(1) / p) : acc;
}

void norms(const std::vector<Tensor>& ts, double norm_type, const Tensor& out) {
  const int dev = device_index(ts[0]);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const int kind = std::isinf(norm_type) ? 0 : norm_type == 1 ? 1 : norm_type == 2 ? 2 : 3;
  const std::vector<int64_t> sizes = sizes_of(ts);
  int64_t total_blocks = 0;
  for (int64_t n : sizes) total_blocks += chunks_of(n);
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "_foreach_norm", [&]<class T>() {
    using A = acc_t<T>;
    const A p = static_cast<A>(kind == 3 ? norm_type : 1.0);
    Tensor part = scratch<A>(total_blocks > 0 ? total_blocks : 1, ts[0].device());
    A* partials = static_cast<A*>(part.data_ptr());
    std::vector<int64_t> start(ts.size(), 0);
    apply<1, 0>(
        sizes, [&](ListMeta& m, int slot, size_t i) { m.ptr[0][slot] = ts[i].data_ptr(); },
        [&](const ListMeta& m, int blocks) {
          norm_partial_kernel<T, A><<<blocks, kThreads, 0, s>>>(m, kind, p, partials);
          check("_foreach_norm", s);
        },
        [&](size_t i, int64_t first) { start[i] = first; });
    A* o = static_cast<A*>(out.data_ptr());
    for (size_t b0 = 0; b0 < ts.size(); b0 += kFinishMax) {
      FinishMeta f;
      const int nb = static_cast<int>(std::min<size_t>(kFinishMax, ts.size() - b0));
      f.out_base = static_cast<int32_t>(b0);
      for (int b = 0; b < nb; ++b) {
        f.start[b] = static_cast<int32_t>(start[b0 + b]);
        f.count[b] = static_cast<int32_t>(chunks_of(sizes[b0 + b]));
      }
      norm_finish_kernel<A><<<nb, kFinishThreads, 0, s>>>(f, partials, kind, p, o);
      check("_foreach_norm", s);
    }
  });
}

template <class T, class A>
__global__ void __launch_bounds__(kThreads)
    scale_kernel(const ListMeta KILN_GRID_CONST m, const A* coef) {
  const ChunkPos pos = chunk_pos(m);
  T* x = static_cast<T*>(m.ptr[0][pos.slot]);
  const A c = *coef;
  over_chunk(pos.base, pos.len, aligned_for<kW>(x), [&]<int W>(int64_t j) {
    T r[W];
    load<W>(x, j, r);
#pragma unroll
    for (int k = 0; k < W; ++k) r[k] = st<T>(ld<A>(r[k]) * c);
    store<W>(x, j, r);
  });
}

void scale(const std::vector<Tensor>& ts, const Tensor& coef) {
  const int dev = device_index(ts[0]);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "_foreach_mul_", [&]<class T>() {
    using A = acc_t<T>;
    const A* c = static_cast<const A*>(coef.data_ptr());
    apply<1, 0>(
        sizes_of(ts), [&](ListMeta& m, int slot, size_t i) { m.ptr[0][slot] = ts[i].data_ptr(); },
        [&](const ListMeta& m, int blocks) {
          scale_kernel<T, A><<<blocks, kThreads, 0, s>>>(m, c);
          check("_foreach_mul_", s);
        });
  });
}

}  // namespace

void register_foreach_kernels(::kiln::detail::KernelRegistry&) {
  auto& k = ::kiln::detail::mutable_multi_tensor_kernels(DeviceType::CUDA);
  k.fused_adam = &fused_adam;
  k.fused_sgd = &fused_sgd;
  k.unscale_check = &unscale_check;
  k.norms = &norms;
  k.scale = &scale;
}

}  // namespace kiln::gpu
