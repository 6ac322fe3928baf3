// GPU copy kernels: copy_ between host and device (non_blocking from/to pinned memory on the
// current stream), device to device with broadcasting and dtype casts, fill_, arange, linspace.

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/vendor.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/kernel_error.h"
#include "backend/gpu/pinned_allocator.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/gpu/offset_calc.cuh"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

namespace {

constexpr int kThreads = 256;

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

template <int Size>
using RawT = std::conditional_t<
    Size == 1, uint8_t,
    std::conditional_t<
        Size == 2, uint16_t,
        std::conditional_t<Size == 4, uint32_t, std::conditional_t<Size == 8, uint64_t, Bytes16>>>>;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? b : (int64_t{1} << 20));
}

// ---- kernels ---------------------------------------------------------------------------------

template <class O, class I>
__global__ void cast_contiguous_kernel(O* out, const I* in, int64_t n) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = ::kiln::detail::convert<O>(in[i]);
}

template <class O, class I>
__global__ void cast_strided_kernel(O* out, const I* in, int64_t n, OffsetCalc<2> oc) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int64_t off[2];
    oc.get(i, off);
    out[off[0]] = ::kiln::detail::convert<O>(in[off[1]]);
  }
}

// Note [Vectorized strided copies]
// --------------------------------
// Most copies that are not plain memcpys keep the innermost dimension unit-stride on both sides
// (q/k/v head splits, [B, T, H, D] <-> [B, H, T, D], casts of contiguous tensors): those move
// packs of V elements (16 bytes of the wider type) per thread, with the offset calculator in
// units of packs. Copies whose unit-stride dimensions differ (transposes, e.g. a weight gradient
// computed as [in, out] stored into [out, in]) go through 32x32 shared-memory tiles so that both
// the reads and the writes are coalesced.
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class O, class I, int V>
__global__ void cast_contiguous_vec_kernel(O* out, const I* in, int64_t n) {
  const int64_t nvec = n / V;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = tid; i < nvec; i += stride) {
    const Pack<I, V> a = reinterpret_cast<const Pack<I, V>*>(in)[i];
    Pack<O, V> b;
#pragma unroll
    for (int k = 0; k < V; ++k) b.v[k] = ::kiln::detail::convert<O>(a.v[k]);
    reinterpret_cast<Pack<O, V>*>(out)[i] = b;
  }
  if (tid < n - nvec * V) out[nvec * V + tid] = ::kiln::detail::convert<O>(in[nvec * V + tid]);
}

// oc: offsets in packs of V elements.
template <class O, class I, int V>
__global__ void cast_strided_vec_kernel(O* out, const I* in, int64_t nvec, OffsetCalc<2> oc) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec;
       i += stride) {
    int64_t off[2];
    oc.get(i, off);
    const Pack<I, V> a = reinterpret_cast<const Pack<I, V>*>(in)[off[1]];
    Pack<O, V> b;
#pragma unroll
    for (int k = 0; k < V; ++k) b.v[k] = ::kiln::detail::convert<O>(a.v[k]);
    reinterpret_cast<Pack<O, V>*>(out)[off[0]] = b;
  }
}

// Batched transpose: out[b][r][c] (c unit-stride in out) <- in[b][r][c] (r unit-stride in in),
// with r in [0, rows), c in [0, cols); `batch` gives the batch offsets (operand 0 out, 1 in).
constexpr int kTile = 32, kTileRows = 8;

template <class O, class I>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_kernel(O* out, const I* in, int64_t rows, int64_t cols, int64_t out_rs, int64_t in_cs,
                     int64_t tiles_c, int64_t nbatch, OffsetCalc<2> batch) {
  __shared__ I tile[kTile][kTile + 1];
  const int64_t tiles = blockIdx.x;
  const int64_t tr = tiles / tiles_c, tc = tiles - tr * tiles_c;
  const int64_t b = blockIdx.y + static_cast<int64_t>(blockIdx.z) * gridDim.y;
  if (b >= nbatch) return;
  int64_t off[2];
  batch.get(b, off);
  const int tx = threadIdx.x, ty = threadIdx.y;
  // Read: r varies fastest in memory on the input side, so threads walk r.
  for (int k = ty; k < kTile; k += kTileRows) {
    const int64_t r = tr * kTile + tx, c = tc * kTile + k;
    if (r < rows && c < cols) tile[k][tx] = in[off[1] + r + c * in_cs];
  }
  __syncthreads();
  for (int k = ty; k < kTile; k += kTileRows) {
    const int64_t r = tr * kTile + k, c = tc * kTile + tx;
    if (r < rows && c < cols)
      out[off[0] + r * out_rs + c] = ::kiln::detail::convert<O>(tile[tx][k]);
  }
}

// Contiguous fill with 16-byte stores (`out` is 16-byte aligned): memory-bound, so the store
// width decides the bandwidth. The last n % (16 / sizeof(O)) elements are stored one by one.
template <class O>
__global__ void fill_contiguous_kernel(O* out, O value, int64_t n) {
  constexpr int kVec = 16 / sizeof(O);
  struct alignas(16) Pack {
    O v[kVec];
  };
  Pack p;
#pragma unroll
  for (int k = 0; k < kVec; ++k) p.v[k] = value;
  int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  int64_t nvec = n / kVec;
  auto* o = reinterpret_cast<Pack*>(out);
  for (int64_t i = tid; i < nvec; i += stride) o[i] = p;
  for (int64_t i = nvec * kVec + tid; i < n; i += stride) out[i] = value;
}

template <class O>
__global__ void fill_kernel(O* out, O value, int64_t n, OffsetCalc<1> oc) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int64_t off[1];
    oc.get(i, off);
    out[off[0]] = value;
  }
}

template <class O>
__global__ void arange_int_kernel(O* out, int64_t start, int64_t step, int64_t n) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<O>(start + i * step);
}

template <class O>
__global__ void arange_float_kernel(O* out, double start, double step, int64_t n) {
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = ::kiln::detail::convert<O>(start + static_cast<double>(i) * step);
}

// Symmetric linspace as on the CPU: the first half counts up from start, the second half down
// from end, so both endpoints are exact.
template <class O, class W>
__global__ void linspace_kernel(O* out, W start, W end, W step, int64_t n) {
  int64_t half = n / 2;
  int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    W v = i < half ? start + step * static_cast<double>(i)
                   : end - step * static_cast<double>(n - 1 - i);
    if constexpr (std::is_integral_v<O>)
      out[i] = static_cast<O>(v);  // truncation toward zero, as PyTorch
    else
      out[i] = ::kiln::detail::convert<O>(v);
  }
}

// ---- host helpers ----------------------------------------------------------------------------

int device_of(const Tensor& t) {
  int i = t.device().index;
  return i >= 0 ? i : current_device();
}

gpuStream_t as_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

bool same_layout_contiguous(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.sizes() == src.sizes() && dst.is_contiguous() &&
         src.is_contiguous();
}

bool half_or_float(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

// The offset calculator of oc in packs of v elements, when the innermost dimension is unit-stride
// and a multiple of v on both sides and every other stride a multiple of v.
bool pack_offsets(const OffsetCalc<2>& oc, int v, OffsetCalc<2>& packed) {
  const int in = oc.ndim - 1;
  if (oc.strides[0][in] != 1 || oc.strides[1][in] != 1 || oc.sizes[in] % v != 0) return false;
  packed = oc;
  packed.sizes[in] = oc.sizes[in] / v;
  for (int d = 0; d < in; ++d)
    for (int k = 0; k < 2; ++k) {
      if (oc.strides[k][d] % v != 0) return false;
      packed.strides[k][d] = oc.strides[k][d] / v;
    }
  return true;
}

bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// A batched transpose view of oc: dst unit-stride in its innermost dim c, src unit-stride in
// another dim r (neither broadcast); the other dims become the batch.
struct TransposePlan {
  int64_t rows = 0, cols = 0, out_rs = 0, in_cs = 0;
  OffsetCalc<2> batch;
  int64_t nbatch = 1;
};

bool transpose_plan(const OffsetCalc<2>& oc, TransposePlan& t) {
  const int c = oc.ndim - 1;
  if (oc.ndim < 2 || oc.strides[0][c] != 1 || oc.strides[1][c] == 1) return false;
  int r = -1;
  for (int d = 0; d < c; ++d)
    if (oc.strides[1][d] == 1) r = d;
  if (r < 0 || oc.strides[0][r] == 0 || oc.strides[1][c] == 0) return false;
  if (oc.sizes[r] < kTile || oc.sizes[c] < kTile) return false;  // thin: the plain kernel is fine
  t.rows = oc.sizes[r];
  t.cols = oc.sizes[c];
  t.out_rs = oc.strides[0][r];
  t.in_cs = oc.strides[1][c];
  int m = 0;
  for (int d = 0; d < oc.ndim; ++d) {
    if (d == r || d == c) continue;
    t.batch.sizes[m] = oc.sizes[d];
    t.batch.strides[0][m] = oc.strides[0][d];
    t.batch.strides[1][m] = oc.strides[1][d];
    t.nbatch *= oc.sizes[d];
    ++m;
  }
  if (m == 0) {
    t.batch.sizes[0] = 1;
    t.batch.strides[0][0] = t.batch.strides[1][0] = 0;
    m = 1;
  }
  t.batch.ndim = m;
  return t.nbatch <= (int64_t{65535} * 65535);
}

template <class O, class I>
void launch_transpose(O* o, const I* i, const TransposePlan& t, StreamHandle stream) {
  const int64_t tiles_r = (t.rows + kTile - 1) / kTile, tiles_c = (t.cols + kTile - 1) / kTile;
  const int64_t by = t.nbatch < 65535 ? t.nbatch : 65535;
  const dim3 grid(static_cast<unsigned>(tiles_r * tiles_c), static_cast<unsigned>(by),
                  static_cast<unsigned>((t.nbatch + by - 1) / by));
  transpose_kernel<O, I><<<grid, dim3(kTile, kTileRows), 0, as_stream(stream)>>>(
      o, i, t.rows, t.cols, t.out_rs, t.in_cs, tiles_c, t.nbatch, t.batch);
}

// The fast paths of device_cast_copy (Note [Vectorized strided copies]) for element types O, I;
// false when none applies.
template <class O, class I>
bool fast_copy(O* o, const I* i, int64_t n, const OffsetCalc<2>& oc, bool contiguous,
               StreamHandle stream) {
  constexpr int V = static_cast<int>(16 / (sizeof(O) > sizeof(I) ? sizeof(O) : sizeof(I)));
  if constexpr (V > 1) {
    const bool aligned = aligned_to(o, sizeof(O) * V) && aligned_to(i, sizeof(I) * V);
    if (aligned && contiguous) {
      const int64_t blocks = (n / V + kThreads - 1) / kThreads;
      cast_contiguous_vec_kernel<O, I, V>
          <<<blocks_for(blocks > 0 ? blocks * kThreads : V), kThreads, 0, as_stream(stream)>>>(o, i,
                                                                                               n);
      return true;
    }
    OffsetCalc<2> packed;
    if (aligned && !contiguous && pack_offsets(oc, V, packed)) {
      cast_strided_vec_kernel<O, I, V>
          <<<blocks_for(n / V), kThreads, 0, as_stream(stream)>>>(o, i, n / V, packed);
      return true;
    }
  }
  TransposePlan t;
  if (!contiguous && transpose_plan(oc, t)) {
    launch_transpose(o, i, t, stream);
    return true;
  }
  return false;
}

// dst <- src (broadcast, cast) with both on the current device, queued on `stream`.
// The dims of dst from the largest stride to the smallest (ties: src's order), when that is not
// the logical order; empty otherwise. A copy may visit the elements in any order, so walking
// dst's memory order makes e.g. a [N, K] gradient with strides (1, N), cast into a tensor of the
// same strides, one contiguous pass instead of a stride-N walk.
DimVector memory_order(const Tensor& dst, const Tensor& src) {
  const int64_t nd = dst.dim();
  if (nd < 2 || dst.is_contiguous()) return {};
  DimVector order(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    if (dst.stride(d) == 0 && dst.size(d) > 1) return {};  // overlapping destination
    order[static_cast<size_t>(d)] = d;
  }
  // Sort keys (dst stride, src stride), descending; size-1 dims (any stride) go innermost. A
  // strict order of keys: the permuted call finds its dims sorted and does not permute again.
  const int64_t off = nd - src.dim();
  auto key = [&](int64_t d) {
    if (dst.size(d) == 1) return std::pair<int64_t, int64_t>{-1, -1};
    const int64_t s = d < off || src.size(d - off) == 1 ? 0 : src.stride(d - off);
    return std::pair<int64_t, int64_t>{dst.stride(d), s};
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return key(a) > key(b); });
  for (int64_t d = 0; d < nd; ++d)
    if (order[static_cast<size_t>(d)] != d) return order;
  return {};
}

void device_cast_copy(const Tensor& dst, const Tensor& src, StreamHandle stream) {
  int64_t n = dst.numel();
  if (n == 0) return;
  if (DimVector order = memory_order(dst, src); !order.empty()) {
    const Tensor d = dst.detach().permute(order);
    const Tensor s = src.detach().expand(dst.sizes()).permute(order);
    return device_cast_copy(d, s, stream);
  }
  if (same_layout_contiguous(dst, src)) {
    if (dst.data_ptr() != src.data_ptr())
      KILN_GPU_CHECK(
          "copy_", gpuMemcpyAsync(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()),
                                  gpuMemcpyDeviceToDevice, as_stream(stream)));
    return;
  }
  const Tensor* ops[2] = {&dst, &src};
  OffsetCalc<2> oc = make_offset_calc<2>(ops, "copy_");
  bool contiguous = oc.ndim == 1 && oc.strides[0][0] == 1 && oc.strides[1][0] == 1;
  if (dst.dtype() == src.dtype()) {
    // Same dtype: move raw elements of the right width (no per-dtype instantiation).
    auto run = [&]<int Size>() {
      using R = RawT<Size>;
      auto* o = static_cast<R*>(dst.data_ptr());
      auto* i = static_cast<const R*>(src.data_ptr());
      if (Size < 16 && fast_copy(o, i, n, oc, contiguous, stream)) return;
      if (contiguous)
        cast_contiguous_kernel<R, R><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(o, i, n);
      else
        cast_strided_kernel<R, R><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(o, i, n, oc);
    };
    switch (dst.element_size()) {
      case 1:
        run.template operator()<1>();
        break;
      case 2:
        run.template operator()<2>();
        break;
      case 4:
        run.template operator()<4>();
        break;
      case 8:
        run.template operator()<8>();
        break;
      default:
        run.template operator()<16>();
        break;
    }
  } else if (half_or_float(dst.dtype()) && half_or_float(src.dtype()) && [&] {
               bool done = false;
               ::kiln::detail::dispatch_types<::kiln::detail::kFloatMask>(
                   dst.dtype(), "copy_", [&]<class O>() {
                     ::kiln::detail::dispatch_types<::kiln::detail::kFloatMask>(
                         src.dtype(), "copy_", [&]<class I>() {
                           if constexpr (sizeof(O) <= 4 && sizeof(I) <= 4)
                             done = fast_copy(static_cast<O*>(dst.data_ptr()),
                                              static_cast<const I*>(src.data_ptr()), n, oc,
                                              contiguous, stream);
                         });
                   });
               return done;
             }()) {
    // autocast's casts: done by fast_copy.
  } else {
    ::kiln::detail::dispatch_types<::kiln::detail::kAllMask>(dst.dtype(), "copy_", [&]<class O>() {
      ::kiln::detail::dispatch_types<::kiln::detail::kAllMask>(
          src.dtype(), "copy_", [&]<class I>() {
            auto* o = static_cast<O*>(dst.data_ptr());
            auto* i = static_cast<const I*>(src.data_ptr());
            if (contiguous)
              cast_contiguous_kernel<O, I>
                  <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(o, i, n);
            else
              cast_strided_kernel<O, I>
                  <<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(o, i, n, oc);
          });
    });
  }
  check_launch("copy_", stream);
}

// A contiguous device tensor holding src with dst's dtype and shape (src itself when it already
// is one), on src's device.
Tensor device_contiguous_as(const Tensor& src, const Tensor& dst, StreamHandle stream) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous()) return src;
  Tensor tmp = ::kiln::detail::empty_impl(dst.sizes(), dst.dtype(), src.device());
  device_cast_copy(tmp, src, stream);
  return tmp;
}

// The host side of a copy either waits for the stream or, for non_blocking copies to/from
// pinned memory, keeps the pinned block from reuse until the stream passes this point.
void finish_host_copy(const void* host_ptr, bool non_blocking, int dev, StreamHandle stream) {
  if (non_blocking && !launch_blocking() && pinned_record_stream(host_ptr, dev, stream)) return;
  if (non_blocking && !launch_blocking() && is_pinned_ptr(host_ptr)) return;  // user-pinned
  KILN_GPU_CHECK("copy_", gpuStreamSynchronize(as_stream(stream)));
  check_kernel_errors();  // Note [Kernel error channel]: a copy to the host is a sync point
}

void copy_host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int dev = device_of(dst);
  DeviceGuard guard(dev);
  StreamHandle stream = current_stream(dev);
  // Move src's elements as they are (dtype, shape) and broadcast/cast on the device.
  Tensor host = src.is_contiguous() ? src : src.contiguous();
  Tensor staged = same_layout_contiguous(dst, host)
                      ? dst
                      : ::kiln::detail::empty_impl(host.sizes(), host.dtype(), Device(kCUDA, dev));
  if (host.nbytes() > 0)
    KILN_GPU_CHECK("copy_", gpuMemcpyAsync(staged.data_ptr(), host.data_ptr(),
                                           static_cast<size_t>(host.nbytes()),
                                           gpuMemcpyHostToDevice, as_stream(stream)));
  if (!staged.is_same(dst)) device_cast_copy(dst, staged, stream);
  // A temporary host copy is pageable: the driver has consumed it when the call returns.
  finish_host_copy(host.data_ptr(), non_blocking && host.is_same(src), dev, stream);
}

void copy_device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int dev = device_of(src);
  DeviceGuard guard(dev);
  StreamHandle stream = current_stream(dev);
  Tensor dev_src = device_contiguous_as(src, dst, stream);
  bool direct = dst.is_contiguous();
  Tensor host = direct ? dst : ::kiln::detail::empty_impl(dst.sizes(), dst.dtype(), Device(kCPU));
  KILN_GPU_CHECK("copy_", gpuMemcpyAsync(host.data_ptr(), dev_src.data_ptr(),
                                         static_cast<size_t>(host.nbytes()), gpuMemcpyDeviceToHost,
                                         as_stream(stream)));
  finish_host_copy(host.data_ptr(), non_blocking && direct, dev, stream);
  if (!direct) const_cast<Tensor&>(dst).copy_(host);
}

void copy_device_to_device(const Tensor& dst, const Tensor& src) {
  int ddev = device_of(dst), sdev = device_of(src);
  if (ddev == sdev) {
    DeviceGuard guard(ddev);
    device_cast_copy(dst, src, current_stream(ddev));
    return;
  }
  // Between devices: make a contiguous source of dst's dtype on src's device, copy it peer to
  // peer on dst's current stream (after src's stream), then lay it out on dst's device. Each
  // side's stream waits for the other, so neither reuses the memory too early.
  StreamHandle sstream = current_stream(sdev), dstream = current_stream(ddev);
  Tensor tmp_src;
  {
    DeviceGuard guard(sdev);
    tmp_src = device_contiguous_as(src, dst, sstream);
  }
  DeviceGuard guard(ddev);
  bool direct = dst.is_contiguous();
  Tensor tmp_dst =
      direct ? dst : ::kiln::detail::empty_impl(dst.sizes(), dst.dtype(), dst.device());
  stream_wait_stream(sdev, dstream, sstream, "copy_");
  enable_peer_access(ddev, sdev);  // a direct copy where the GPUs can reach each other
  KILN_GPU_CHECK("copy_",
                 gpuMemcpyPeerAsync(tmp_dst.data_ptr(), ddev, tmp_src.data_ptr(), sdev,
                                    static_cast<size_t>(dst.nbytes()), as_stream(dstream)));
  if (!direct) device_cast_copy(dst, tmp_dst, dstream);
  stream_wait_stream(sdev, sstream, dstream, "copy_");
  if (launch_blocking()) KILN_GPU_CHECK("copy_", gpuStreamSynchronize(as_stream(dstream)));
}

// ---- registered kernels ----------------------------------------------------------------------

// out[0] <- in[0]; c.attrs.flag is non_blocking.
void copy_kernel(OpCall& c) {
  const Tensor& dst = c.out[0];
  const Tensor& src = c.in[0];
  if (dst.numel() == 0) return;
  if (dst.is_cuda() && src.is_cuda())
    copy_device_to_device(dst, src);
  else if (dst.is_cuda())
    copy_host_to_device(dst, src, c.attrs.flag);
  else
    copy_device_to_host(dst, src, c.attrs.flag);
}

void fill_gpu_kernel(OpCall& c) {
  const Tensor& dst = c.out[0];
  int64_t n = dst.numel();
  if (n == 0) return;
  // The value in dst's dtype, converted exactly as the CPU fill_ converts it.
  Tensor one = ::kiln::detail::empty_impl({}, dst.dtype(), Device(kCPU));
  one.fill_(c.attrs.s0);
  int dev = device_of(dst);
  DeviceGuard guard(dev);
  StreamHandle stream = current_stream(dev);
  const Tensor* ops[1] = {&dst};
  OffsetCalc<1> oc = make_offset_calc<1>(ops, "fill_");
  ::kiln::detail::dispatch_types<::kiln::detail::kAllMask>(dst.dtype(), "fill_", [&]<class O>() {
    O v;
    std::memcpy(static_cast<void*>(&v), one.data_ptr(), sizeof(O));
    auto* o = static_cast<O*>(dst.data_ptr());
    if (oc.ndim == 1 && oc.strides[0][0] == 1 && reinterpret_cast<uintptr_t>(o) % 16 == 0)
      fill_contiguous_kernel<O>
          <<<blocks_for((n + 15) / 16), kThreads, 0, as_stream(stream)>>>(o, v, n);
    else
      fill_kernel<O><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(o, v, n, oc);
  });
  check_launch("fill_", stream);
}

void arange_gpu_kernel(OpCall& c) {
  const Tensor& dst = c.out[0];
  int64_t n = dst.numel();
  if (n == 0) return;
  KILN_ASSERT(dst.is_contiguous());
  int dev = device_of(dst);
  DeviceGuard guard(dev);
  StreamHandle stream = current_stream(dev);
  ::kiln::detail::dispatch_types<::kiln::detail::kRealMask & ~::kiln::detail::kBoolMask>(
      dst.dtype(), "arange", [&]<class O>() {
        auto* o = static_cast<O*>(dst.data_ptr());
        if constexpr (std::is_integral_v<O>)
          arange_int_kernel<O><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
              o, c.attrs.s0.to<int64_t>(), c.attrs.s1.to<int64_t>(), n);
        else
          arange_float_kernel<O><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
              o, c.attrs.s0.to<double>(), c.attrs.s1.to<double>(), n);
      });
  check_launch("arange", stream);
}

void linspace_gpu_kernel(OpCall& c) {
  const Tensor& dst = c.out[0];
  int64_t n = dst.numel();
  if (n == 0) return;
  KILN_ASSERT(dst.is_contiguous());
  int dev = device_of(dst);
  DeviceGuard guard(dev);
  StreamHandle stream = current_stream(dev);
  ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask & ~::kiln::detail::kBoolMask>(
      dst.dtype(), "linspace", [&]<class O>() {
        using W = std::conditional_t<::kiln::detail::is_complex_v<O>, complex<double>, double>;
        W start = c.attrs.s0.to<W>(), end = c.attrs.s1.to<W>();
        W step = n == 1 ? W(0) : (end - start) / static_cast<double>(n - 1);
        linspace_kernel<O, W><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(
            static_cast<O*>(dst.data_ptr()), start, end, step, n);
      });
  check_launch("linspace", stream);
}

}  // namespace

void register_copy_kernels(::kiln::detail::KernelRegistry& r) {
  r.set(OpId::Copy, kCUDA, &copy_kernel);
  r.set(OpId::Fill, kCUDA, &fill_gpu_kernel);
  r.set(OpId::Arange, kCUDA, &arange_gpu_kernel);
  r.set(OpId::Linspace, kCUDA, &linspace_gpu_kernel);
}

}  // namespace kiln::gpu
