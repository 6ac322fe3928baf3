// The line sorts of Note [GPU sort keys] (sort_common.cuh): the shared-memory bitonic network for
// short lines, the global-memory bitonic network for long lines without CUB, the call into CUB
// (sort_cub.cu) otherwise, and a portable inclusive scan of int64 used by unique.
#include "backend/gpu/vendor.h"

#include <cstdlib>

#include "kernels/gpu/sort_common.cuh"

namespace kiln::gpu::sortg {

KeySpec key_spec(DType dt, bool desc) {
  KeySpec s;
  s.desc = desc;
  switch (dt) {
    case DType::Bool:
    case DType::UInt8:
      s.kind = KeyKind::Unsigned;
      break;
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      s.kind = KeyKind::Signed;
      break;
    case DType::Float16:
      s.kind = KeyKind::Float;
      s.inf = 0x7C00u;
      break;
    case DType::BFloat16:
      s.kind = KeyKind::Float;
      s.inf = 0x7F80u;
      break;
    case DType::Float32:
      s.kind = KeyKind::Float;
      s.inf = 0x7F800000u;
      break;
    case DType::Float64:
      s.kind = KeyKind::Float;
      s.inf = 0x7FF0000000000000ull;
      break;
    default:
      KILN_CHECK(false, "[sort] GPU sorts do not support ", dtype_name(dt), " inputs");
  }
  return s;
}

Launch launch_of(const Tensor& t) {
  Launch l;
  l.device = t.device().index >= 0 ? t.device().index : current_device();
  l.stream = reinterpret_cast<gpuStream_t>(current_stream(l.device));
  return l;
}

Tensor scratch(int64_t elems, DType dt, int device) {
  return ::kiln::detail::empty_impl({elems}, dt, Device(kCUDA, device));
}

namespace {

// KILN_GPU_SORT_PORTABLE=1 sorts long lines with the portable network even where CUB exists.
bool portable_forced() {
  const char* e = std::getenv("KILN_GPU_SORT_PORTABLE");
  return e != nullptr && e[0] == '1';
}

int64_t next_pow2(int64_t n) {
  int64_t p = 2;
  while (p < n) p <<= 1;
  return p;
}

template <class E>
struct TensorKeys {
  const E* x;
  OffsetCalc<1> batch;
  int64_t stride;
  KeySpec spec;
  __device__ int64_t base(int64_t l) const {
    int64_t o[1];
    batch.get(l, o);
    return o[0];
  }
  __device__ key_of_t<E> key(int64_t b, int64_t i) const {
    return make_key<E>(x[b + i * stride], spec);
  }
};

template <class K>
struct BufferKeys {
  const K* k;
  int64_t n;
  __device__ int64_t base(int64_t l) const { return l * n; }
  __device__ K key(int64_t b, int64_t i) const { return k[b + i]; }
};

// Compare-exchange of the (key, position) pairs at e and f so that e holds the smaller one when
// `up`, the larger one otherwise.
template <class K>
__device__ inline void cmp_swap(K* k, uint32_t* p, int64_t e, int64_t f, bool up) {
  const K ka = k[e], kb = k[f];
  const uint32_t pa = p[e], pb = p[f];
  const bool gt = ka > kb || (ka == kb && pa > pb);
  if (gt == up) {
    k[e] = kb;
    k[f] = ka;
    p[e] = pb;
    p[f] = pa;
  }
}

// lpb lines of n keys per block, each padded to npad (a power of two) with (all ones, ~0u), which
// sort after every real pair. Output: lines one after the other (pitch n).
template <class K, class Src>
__global__ void block_bitonic_kernel(Src src, int64_t lines, int n, int npad, int lpb, K* keys_out,
                                     uint32_t* pos_out) {
  extern __shared__ uint64_t smem_u64[];
  K* sk = reinterpret_cast<K*>(smem_u64);
  uint32_t* sp = reinterpret_cast<uint32_t*>(sk + lpb * npad);
  const int total = lpb * npad, half = npad / 2;
  const int64_t groups = (lines + lpb - 1) / lpb;
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
      const int sub = e / npad, i = e - sub * npad;
      const int64_t l = g * lpb + sub;
      if (l < lines && i < n) {
        sk[e] = src.key(src.base(l), i);
        sp[e] = static_cast<uint32_t>(i);
      } else {
        sk[e] = static_cast<K>(~K(0));
        sp[e] = ~0u;
      }
    }
    __syncthreads();
    for (int k = 2; k <= npad; k <<= 1)
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int c = threadIdx.x; c < lpb * half; c += blockDim.x) {
          const int sub = c / half, t = c - sub * half;
          const int i = 2 * t - (t & (j - 1));
          cmp_swap(sk, sp, sub * npad + i, sub * npad + i + j, (i & k) == 0);
        }
        __syncthreads();
      }
    for (int e = threadIdx.x; e < total; e += blockDim.x) {
      const int sub = e / npad, i = e - sub * npad;
      const int64_t l = g * lpb + sub;
      if (l < lines && i < n) {
        keys_out[l * n + i] = sk[e];
        pos_out[l * n + i] = sp[e];
      }
    }
    __syncthreads();
  }
}

template <class K, class Src>
SortedLines block_sort(const Src& src, int64_t lines, int64_t n, bool wide, const Launch& l,
                       const char* op) {
  SortedLines s;
  s.lines = lines;
  s.n = s.pitch = n;
  s.wide = wide;
  s.keys = scratch(lines * n, wide ? DType::Int64 : DType::Int32, l.device);
  s.pos = scratch(lines * n, DType::Int32, l.device);
  const int npad = static_cast<int>(next_pow2(n)), half = npad / 2;
  const int lpb = half >= 256 ? 1 : 256 / half;
  const int threads = lpb * half < 1024 ? lpb * half : 1024;
  const size_t shm = static_cast<size_t>(lpb) * npad * (sizeof(K) + sizeof(uint32_t));
  const int64_t groups = (lines + lpb - 1) / lpb;
  const unsigned grid = static_cast<unsigned>(groups < (int64_t{1} << 20) ? groups : 1 << 20);
  block_bitonic_kernel<K, Src><<<grid, threads, shm, l.stream>>>(
      src, lines, static_cast<int>(n), npad, lpb, static_cast<K*>(s.keys.data_ptr()),
      static_cast<uint32_t*>(s.pos.data_ptr()));
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  return s;
}

template <class E>
__global__ void gather_keys_kernel(TensorKeys<E> src, int64_t lines, int64_t n, key_of_t<E>* keys) {
  const int64_t total = lines * n, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t l = t / n, i = t - l * n;
    keys[t] = src.key(src.base(l), i);
  }
}

__global__ void iota_kernel(uint32_t* p, int64_t lines, int64_t n) {
  const int64_t total = lines * n, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step)
    p[t] = static_cast<uint32_t>(t % n);
}

// Global bitonic network: lines of pitch npad, padded like block_bitonic_kernel.
template <class K>
__global__ void pad_kernel(const K* in, int64_t lines, int64_t n, int64_t npad, K* k, uint32_t* p) {
  const int64_t total = lines * npad, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t l = t / npad, i = t - l * npad;
    k[t] = i < n ? in[l * n + i] : static_cast<K>(~K(0));
    p[t] = i < n ? static_cast<uint32_t>(i) : ~0u;
  }
}

template <class K>
__global__ void global_step_kernel(K* k, uint32_t* p, int64_t lines, int64_t npad, int64_t kk,
                                   int64_t j) {
  const int64_t half = npad / 2, total = lines * half;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < total;
       c += step) {
    const int64_t l = c / half, t = c - l * half;
    const int64_t i = 2 * t - (t & (j - 1));
    cmp_swap(k, p, l * npad + i, l * npad + i + j, (i & kk) == 0);
  }
}

template <class K>
SortedLines global_sort(const K* in, int64_t lines, int64_t n, bool wide, const Launch& l,
                        const char* op) {
  SortedLines s;
  s.lines = lines;
  s.n = n;
  s.wide = wide;
  s.pitch = next_pow2(n);
  const int64_t total = lines * s.pitch;
  s.keys = scratch(total, wide ? DType::Int64 : DType::Int32, l.device);
  s.pos = scratch(total, DType::Int32, l.device);
  K* k = static_cast<K*>(s.keys.data_ptr());
  uint32_t* p = static_cast<uint32_t*>(s.pos.data_ptr());
  constexpr int kThreads = 256;
  pad_kernel<K>
      <<<blocks_for(total, kThreads), kThreads, 0, l.stream>>>(in, lines, n, s.pitch, k, p);
  for (int64_t kk = 2; kk <= s.pitch; kk <<= 1)
    for (int64_t j = kk >> 1; j > 0; j >>= 1)
      global_step_kernel<K>
          <<<blocks_for(total / 2, kThreads), kThreads, 0, l.stream>>>(k, p, lines, s.pitch, kk, j);
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  return s;
}

}  // namespace

SortedLines sort_key_lines(const Tensor& keys, int64_t lines, int64_t n, bool wide, int key_bits,
                           const Launch& l, const char* op) {
  KILN_CHECK(n < (int64_t{1} << 32), "[", op, "] lines of 2^32 or more elements are not supported");
  if (lines == 0 || n == 0) {
    SortedLines s;
    s.lines = lines;
    s.n = s.pitch = n;
    s.wide = wide;
    s.keys = scratch(0, wide ? DType::Int64 : DType::Int32, l.device);
    s.pos = scratch(0, DType::Int32, l.device);
    return s;
  }
  auto run = [&]<class K>() -> SortedLines {
    const K* in = static_cast<const K*>(keys.data_ptr());
    if (n <= kBlockSortMax) return block_sort<K>(BufferKeys<K>{in, n}, lines, n, wide, l, op);
    if (!portable_forced()) {
      SortedLines s;
      s.lines = lines;
      s.n = s.pitch = n;
      s.wide = wide;
      s.keys = scratch(lines * n, wide ? DType::Int64 : DType::Int32, l.device);
      s.pos = scratch(lines * n, DType::Int32, l.device);
      Tensor pos_in = scratch(lines * n, DType::Int32, l.device);
      auto* pi = static_cast<uint32_t*>(pos_in.data_ptr());
      iota_kernel<<<blocks_for(lines * n, 256), 256, 0, l.stream>>>(pi, lines, n);
      check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
      if (cub_sort_lines(in, s.keys.data_ptr(), pi, static_cast<uint32_t*>(s.pos.data_ptr()), lines,
                         n, wide, key_bits, l, op))
        return s;
    }
    return global_sort<K>(in, lines, n, wide, l, op);
  };
  return wide ? run.template operator()<uint64_t>() : run.template operator()<uint32_t>();
}

SortedLines sort_tensor_lines(const Tensor& x, int64_t dim, bool desc, const char* op) {
  const Launch l = launch_of(x);
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  KILN_CHECK(n < (int64_t{1} << 32), "[", op, "] lines of 2^32 or more elements are not supported");
  const int64_t lines = n == 0 ? 0 : x.numel() / n;
  const KeySpec spec = key_spec(x.dtype(), desc);
  const Tensor* ops[1] = {&x};
  const Lines<1> ln = make_lines<1>(ops, dim, op);
  SortedLines out;
  dispatch_elem(x.dtype(), op, [&]<class E>() {
    using K = key_of_t<E>;
    constexpr bool kWide = sizeof(K) == 8;
    const TensorKeys<E> src{static_cast<const E*>(x.data_ptr()), ln.batch, ln.stride[0], spec};
    if (lines == 0 || n == 0) {
      out = sort_key_lines(scratch(0, kWide ? DType::Int64 : DType::Int32, l.device), lines, n,
                           kWide, 0, l, op);
    } else if (n <= kBlockSortMax) {
      out = block_sort<K>(src, lines, n, kWide, l, op);
    } else {
      Tensor keys = scratch(lines * n, kWide ? DType::Int64 : DType::Int32, l.device);
      gather_keys_kernel<E><<<blocks_for(lines * n, 256), 256, 0, l.stream>>>(
          src, lines, n, static_cast<K*>(keys.data_ptr()));
      check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
      out = sort_key_lines(keys, lines, n, kWide, static_cast<int>(8 * sizeof(E)), l, op);
    }
  });
  return out;
}

// ---- inclusive scan
// ------------------------------------------------------------------------------

namespace {

constexpr int kScanThreads = 512, kScanItems = 4, kScanTile = kScanThreads * kScanItems;

__global__ void __launch_bounds__(kScanThreads)
    scan_tile_sums_kernel(const int64_t* in, int64_t n, int64_t* sums) {
  __shared__ int64_t sh[kScanThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kScanTile;
  int64_t t = 0;
  for (int j = threadIdx.x; j < kScanTile; j += kScanThreads)
    if (base + j < n) t += in[base + j];
  sh[threadIdx.x] = t;
  __syncthreads();
  for (int w = kScanThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = sh[0];
}

// Each tile scanned in the block; `carry` (inclusive scan of the tile sums) adds the tiles before.
__global__ void __launch_bounds__(kScanThreads)
    scan_tiles_kernel(const int64_t* in, int64_t* out, int64_t n, const int64_t* carry) {
  __shared__ int64_t sh[kScanThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kScanTile + threadIdx.x * kScanItems;
  int64_t v[kScanItems];
  int64_t t = 0;
#pragma unroll
  for (int j = 0; j < kScanItems; ++j) {
    t += base + j < n ? in[base + j] : 0;
    v[j] = t;
  }
  sh[threadIdx.x] = t;
  __syncthreads();
  for (int off = 1; off < kScanThreads; off <<= 1) {
    const int64_t a = static_cast<int>(threadIdx.x) >= off ? sh[threadIdx.x - off] : 0;
    __syncthreads();
    sh[threadIdx.x] += a;
    __syncthreads();
  }
  int64_t before = sh[threadIdx.x] - t;
  if (carry != nullptr && blockIdx.x > 0) before += carry[blockIdx.x - 1];
#pragma unroll
  for (int j = 0; j < kScanItems; ++j)
    if (base + j < n) out[base + j] = v[j] + before;
}

}  // namespace

void inclusive_scan(const int64_t* in, int64_t* out, int64_t n, const Launch& l, const char* op) {
  if (n == 0) return;
  const int64_t tiles = (n + kScanTile - 1) / kScanTile;
  KILN_CHECK(tiles < (int64_t{1} << 31), "[", op, "] scan of ", n, " elements is too large");
  const unsigned grid = static_cast<unsigned>(tiles);
  if (tiles == 1) {
    scan_tiles_kernel<<<1, kScanThreads, 0, l.stream>>>(in, out, n, nullptr);
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
    return;
  }
  Tensor sums = scratch(tiles, DType::Int64, l.device);
  Tensor carry = scratch(tiles, DType::Int64, l.device);
  auto* ps = static_cast<int64_t*>(sums.data_ptr());
  auto* pc = static_cast<int64_t*>(carry.data_ptr());
  scan_tile_sums_kernel<<<grid, kScanThreads, 0, l.stream>>>(in, n, ps);
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  inclusive_scan(ps, pc, tiles, l, op);
  scan_tiles_kernel<<<grid, kScanThreads, 0, l.stream>>>(in, out, n, pc);
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
}

}  // namespace kiln::gpu::sortg
