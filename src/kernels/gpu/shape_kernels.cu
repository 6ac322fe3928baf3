// GPU kernels of the shape family (cat, flip, tril/triu, diag_embed, repeat_interleave): element
// moves through the GPU copy kernel over views, plus a zeroing kernel for tril/triu. Semantics:
// src/kernels/cpu/shape_kernels.cpp.
#include "backend/gpu/vendor.h"

#include <vector>

#include "kernels/gpu/index_util.cuh"

namespace kiln::gpu {

using namespace ::kiln::gpu::idx;

namespace {

// Each input is copied (converting dtype) into its slice of the output along dim.
void cat_gpu(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  DeviceGuard g(device_of(out));
  int64_t pos = 0;
  for (const Tensor& t : c.in) {
    const int64_t n = t.size(dim);
    if (n > 0 && t.numel() > 0) {
      DimVector sizes(out.sizes().begin(), out.sizes().end());
      sizes[dim] = n;
      Tensor slice = ::kiln::detail::make_view(out, sizes, out.strides(),
                                               out.storage_offset() + pos * out.stride(dim));
      gpu_copy(slice, t);
    }
    pos += n;
  }
}

// A view of x with negative strides over the flipped dims, copied into the output.
void flip_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  DimVector st(x.strides());
  int64_t off = x.storage_offset();
  for (int64_t d : c.attrs.ints) {
    off += (x.size(d) - 1) * st[d];
    st[d] = -st[d];
  }
  DeviceGuard g(device_of(x));
  gpu_copy(c.out[0], ::kiln::detail::make_view(x, x.sizes(), st, off));
}

// Zeros element (i, j) of each matrix where j - i > k (tril) or j - i < k (triu).
template <class U, bool kLower>
__global__ void tri_zero_dev(U* out, int64_t n, int64_t rows, int64_t cols, int64_t k,
                             OffsetCalc<1> oc) {
  KILN_GRID_LOOP(e, n) {
    const int64_t q = e / cols, j = e - q * cols, i = q % rows;
    const bool zero = kLower ? j - i > k : j - i < k;
    if (!zero) continue;
    int64_t o[1];
    oc.get(e, o);
    out[o[0]] = U{};
  }
}

template <bool kLower>
void tri_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t nd = x.dim(), rows = x.size(nd - 2), cols = x.size(nd - 1), k = c.attrs.i0;
  const int64_t n = x.numel();
  if (n == 0) return;
  const int dev = device_of(out);
  DeviceGuard g(dev);
  const bool same = x.data_ptr() == out.data_ptr() && x.strides() == out.strides();
  if (!same) gpu_copy(out, x);
  const Tensor* ops[1] = {&out};
  OffsetCalc<1> oc = make_offset_calc<1>(ops, kLower ? "tril" : "triu");
  StreamHandle st = current_stream(dev);
  dispatch_raw(out.element_size(), [&]<class U>() {
    tri_zero_dev<U, kLower><<<blocks_for(n), kThreads, 0, as_stream(st)>>>(
        static_cast<U*>(out.data_ptr()), n, rows, cols, k, oc);
  });
  check_launch(kLower ? "tril" : "triu", st);
}

// Zeros, then x into the (dim1, dim2) diagonal at offset (out is fresh and contiguous).
void diag_embed_gpu(OpCall& c) {
  const Tensor& out = c.out[0];
  if (out.numel() == 0) return;
  DeviceGuard g(device_of(out));
  StreamHandle st = current_stream(device_of(out));
  KILN_GPU_CHECK("diag_embed", gpuMemsetAsync(out.data_ptr(), 0, static_cast<size_t>(out.nbytes()),
                                              as_stream(st)));
  const int64_t d1 = c.attrs.i1 / 64, d2 = c.attrs.i1 % 64;
  gpu_copy(out.diagonal(c.attrs.i0, d1, d2), c.in[0]);
}

// out slices along dim: slice j of x repeated repeats[j] times (repeats is a CPU tensor): the
// source slice of every output slice goes to the device, then index_select's GPU kernel.
void repeat_interleave_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  const Tensor reps = c.in[1].to(Device(kCPU)).contiguous();
  const int64_t* rp = static_cast<const int64_t*>(reps.data_ptr());
  const int64_t dim = c.attrs.i0, n = x.size(dim), total = out.size(dim);
  if (out.numel() == 0) return;
  Tensor src = ::kiln::detail::empty_impl({total}, DType::Int64, Device(kCPU));
  int64_t* sp = static_cast<int64_t*>(src.data_ptr());
  for (int64_t j = 0, p = 0; j < n; ++j)
    for (int64_t r = 0; r < rp[j]; ++r) sp[p++] = j;
  DeviceGuard g(device_of(out));
  Tensor sg = ::kiln::detail::empty_impl({total}, DType::Int64, out.device());
  gpu_copy(sg, src);
  OpCall s(OpId::IndexSelect);
  s.in.push_back(x);
  s.in.push_back(sg);
  s.out.push_back(out);
  s.attrs.i0 = dim;
  s.compute = x.dtype();
  ::kiln::detail::find_kernel(OpId::IndexSelect, kCUDA)(s);
}

}  // namespace

void register_shape_kernels(::kiln::detail::KernelRegistry& r) {
  r.set(OpId::Cat, kCUDA, &cat_gpu);
  r.set(OpId::Flip, kCUDA, &flip_gpu);
  r.set(OpId::Tril, kCUDA, &tri_gpu<true>);
  r.set(OpId::Triu, kCUDA, &tri_gpu<false>);
  r.set(OpId::DiagEmbed, kCUDA, &diag_embed_gpu);
  r.set(OpId::RepeatInterleave, kCUDA, &repeat_interleave_gpu);
}

}  // namespace kiln::gpu
