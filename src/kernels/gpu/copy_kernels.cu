// GPU copy kernels: copy_ between host and device (non_blocking from/to pinned memory on the
// current stream), device to device with broadcasting and dtype casts, fill_, arange, linspace.

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/vendor.h"

#include <cstring>
#include <type_traits>

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

// dst <- src (broadcast, cast) with both on the current device, queued on `stream`.
void device_cast_copy(const Tensor& dst, const Tensor& src, StreamHandle stream) {
  int64_t n = dst.numel();
  if (n == 0) return;
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
