// GPU kernels of advanced indexing (index, index_put with and without accumulate) and of the mask
// ops (masked_fill, masked_select, masked_scatter) and nonzero. Semantics: the CPU kernels in
// src/kernels/cpu/index_put_kernels.cpp and index_masked_kernels.cpp.
#include "backend/gpu/vendor.h"

#include <cstring>

#include "kernels/gpu/index_compact.cuh"
#include "kernels/gpu/index_scatter.cuh"
#include "kernels/gpu/index_util.cuh"
#include "kiln/ops/determinism.h"

namespace kiln::gpu {

using namespace ::kiln::gpu::idx;

namespace {

Tensor as_int64(const Tensor& index) {
  if (index.dtype() == DType::Int64) return index;
  Tensor t = ::kiln::detail::empty_impl(index.sizes(), DType::Int64, index.device());
  gpu_copy(t, index);
  return t;
}

// ---- index / index_put ------------------------------------------------------------------------

// Reports through the implicit (per translation unit) slot of kernel_error.cuh, so that form is
// exercised too (prepare_kernel_errors runs in index_offsets).
__global__ void index_offsets_dev(int64_t* off, const int64_t* idx, int64_t nb, OffsetCalc<2> oc,
                                  int64_t n, int64_t xs, bool first, int op, int64_t dim) {
  KILN_GRID_LOOP(i, nb) {
    int64_t o[2];
    oc.get(i, o);
    const int64_t v = idx[o[1]];
    int64_t w = v < 0 ? v + n : v;
    if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(n)) {
      report_index_error(op, v, n, dim);
      w = 0;  // stays in range; the error surfaces at the next synchronization
    }
    off[o[0]] = (first ? 0 : off[o[0]]) + w * xs;
  }
}

// Element offsets into x (x's strides) of every position of the broadcast index shape B.
Tensor index_offsets(const OpCall& c, size_t begin, const Tensor& x, int64_t first, OpId op) {
  const int64_t m = static_cast<int64_t>(c.in.size() - begin);
  Tensor off = ::kiln::detail::empty_impl(c.in[begin].sizes(), DType::Int64, x.device());
  const int64_t nb = off.numel();
  if (nb == 0) return off;
  const int dev = device_of(x);
  StreamHandle st = current_stream(dev);
  prepare_kernel_errors(dev);
  for (int64_t k = 0; k < m; ++k) {
    Tensor idx = as_int64(c.in[begin + k]);
    const Tensor* ops[2] = {&off, &idx};
    OffsetCalc<2> oc = make_offset_calc<2>(ops, op_name(op));
    index_offsets_dev<<<blocks_for(nb), kThreads, 0, as_stream(st)>>>(
        static_cast<int64_t*>(off.data_ptr()), static_cast<const int64_t*>(idx.data_ptr()), nb, oc,
        x.size(first + k), x.stride(first + k), k == 0, static_cast<int>(op), first + k);
  }
  check_launch(op_name(op), st);
  return off;
}

// x restrided over R = x.shape[:first] + B + x.shape[first+m:] (stride 0 over B), and the
// offsets over R (stride 0 outside B), as on the CPU.
struct Restrided {
  Tensor xv, ov;
};
Restrided restride(const Tensor& x, const Tensor& off, int64_t first, int64_t m) {
  IntArrayRef b = off.sizes();
  const int64_t nb = static_cast<int64_t>(b.size());
  DimVector shape, xs, os;
  for (int64_t d = 0; d < first; ++d) shape.push_back(x.size(d)), xs.push_back(x.stride(d));
  for (int64_t d = 0; d < nb; ++d) shape.push_back(b[d]), xs.push_back(0);
  for (int64_t d = first + m; d < x.dim(); ++d)
    shape.push_back(x.size(d)), xs.push_back(x.stride(d));
  for (int64_t d = 0; d < first; ++d) os.push_back(0);
  for (int64_t d = 0; d < nb; ++d) os.push_back(off.stride(d));
  for (int64_t d = first + m; d < x.dim(); ++d) os.push_back(0);
  return {::kiln::detail::make_view(x, shape, xs, x.storage_offset()),
          ::kiln::detail::make_view(off, shape, os, 0)};
}

template <class U>
__global__ void index_gather_dev(U* out, const U* x, const int64_t* off, int64_t total,
                                 OffsetCalc<3> oc) {
  KILN_GRID_LOOP(i, total) {
    int64_t o[3];
    oc.get(i, o);
    out[o[0]] = x[o[1] + off[o[2]]];
  }
}

void index_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t first = c.attrs.i0, m = static_cast<int64_t>(c.in.size()) - 1;
  const int dev = device_of(x);
  DeviceGuard g(dev);
  Tensor off = index_offsets(c, 1, x, first, OpId::Index);
  if (out.numel() == 0) return;
  Restrided r = restride(x, off, first, m);
  const Tensor* ops[3] = {&out, &r.xv, &r.ov};
  OffsetCalc<3> oc = make_offset_calc<3>(ops, "index");
  StreamHandle st = current_stream(dev);
  const int64_t total = out.numel();
  dispatch_raw(x.element_size(), [&]<class U>() {
    index_gather_dev<U><<<blocks_for(total), kThreads, 0, as_stream(st)>>>(
        static_cast<U*>(out.data_ptr()), static_cast<const U*>(x.data_ptr()),
        static_cast<const int64_t*>(off.data_ptr()), total, oc);
  });
  check_launch("index", st);
}

// Plain index_put: the last position in row-major order of R wins (Note [GPU scatter
// determinism]): mark the highest position + 1 per destination, then write.
template <class U>
__global__ void index_put_store_dev(U* out, const U* vals, const int64_t* off, int64_t total,
                                    OffsetCalc<3> oc, unsigned long long* aux, bool mark) {
  KILN_GRID_LOOP(i, total) {
    int64_t o[3];
    oc.get(i, o);
    const int64_t d = o[0] + off[o[2]];
    if (mark)
      atomicMax(aux + d, static_cast<unsigned long long>(i + 1));
    else if (aux[d] == static_cast<unsigned long long>(i + 1))
      out[d] = vals[o[1]];
  }
}

template <class T>
__global__ void index_put_atomic_dev(T* out, const T* vals, const int64_t* off, int64_t total,
                                     OffsetCalc<3> oc) {
  KILN_GRID_LOOP(i, total) {
    int64_t o[3];
    oc.get(i, o);
    atomic_combine<T, Red::Add>(out + o[0] + off[o[2]], vals[o[1]]);
  }
}

// Deterministic accumulate: one thread per position of R with B collapsed, B in row-major order.
template <class T>
__global__ void index_put_ordered_dev(T* out, const T* vals, const int64_t* off, int64_t rest,
                                      OffsetCalc<2> ocr, int64_t nb, OffsetCalc<2> ocb) {
  KILN_GRID_LOOP(r, rest) {
    int64_t o[2];
    ocr.get(r, o);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t ob[2];
      ocb.get(b, ob);
      const int64_t d = o[0] + off[ob[1]];
      out[d] = combine_val<T, Red::Add>(out[d], vals[o[1] + ob[0]]);
    }
  }
}

void index_put_gpu(OpCall& c) {
  const Tensor &x = c.in[0], &values = c.in[1];
  const Tensor& out_arg = c.out[0];
  const int64_t first = c.attrs.i0, m = static_cast<int64_t>(c.in.size()) - 2;
  const bool accumulate = c.attrs.flag;
  const int dev = device_of(x);
  DeviceGuard g(dev);
  StreamHandle st = current_stream(dev);
  gpu_copy(out_arg, x);
  // Work on a contiguous output so that the aux array shares its offsets.
  Tensor out = out_arg.is_contiguous() ? out_arg : empty_like_contig(out_arg);
  if (!out.is_same(out_arg)) gpu_copy(out, out_arg);
  Tensor off = index_offsets(c, 2, out, first, OpId::IndexPut);
  const int64_t total = values.numel();
  if (total > 0) {
    Restrided r = restride(out, off, first, m);
    const Tensor* ops[3] = {&r.xv, &values, &r.ov};
    OffsetCalc<3> oc = make_offset_calc<3>(ops, "index_put");
    const int64_t* offp = static_cast<const int64_t*>(off.data_ptr());
    if (!accumulate) {
      Tensor aux = ::kiln::detail::empty_impl(out.sizes(), DType::Int64, out.device());
      gpu_fill(aux, Scalar(int64_t{0}));
      auto* a = static_cast<unsigned long long*>(aux.data_ptr());
      dispatch_raw(out.element_size(), [&]<class U>() {
        for (bool mark : {true, false})
          index_put_store_dev<U><<<blocks_for(total), kThreads, 0, as_stream(st)>>>(
              static_cast<U*>(out.data_ptr()), static_cast<const U*>(values.data_ptr()), offp,
              total, oc, a, mark);
      });
    } else {
      const DType dt = out.dtype();
      const bool ordered =
          are_deterministic_algorithms_enabled() && (is_floating_point(dt) || is_complex(dt));
      ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask>(dt, "index_put", [&]<class T>() {
        T* o = static_cast<T*>(out.data_ptr());
        const T* v = static_cast<const T*>(values.data_ptr());
        if (!ordered) {
          index_put_atomic_dev<T>
              <<<blocks_for(total), kThreads, 0, as_stream(st)>>>(o, v, offp, total, oc);
          return;
        }
        // R with the B dims collapsed to 1, and B itself.
        const int64_t nbd = off.dim();
        DimVector rs(r.xv.sizes().begin(), r.xv.sizes().end());
        for (int64_t d = first; d < first + nbd; ++d) rs[d] = 1;
        Tensor xr = ::kiln::detail::make_view(r.xv, rs, r.xv.strides(), r.xv.storage_offset());
        Tensor vr =
            ::kiln::detail::make_view(values, rs, values.strides(), values.storage_offset());
        DimVector vbs(values.strides().begin() + first, values.strides().begin() + first + nbd);
        Tensor vb = ::kiln::detail::make_view(values, off.sizes(), vbs, values.storage_offset());
        const Tensor* opr[2] = {&xr, &vr};
        const Tensor* opb[2] = {&vb, &off};
        OffsetCalc<2> ocr = make_offset_calc<2>(opr, "index_put");
        OffsetCalc<2> ocb = make_offset_calc<2>(opb, "index_put");
        const int64_t rest = xr.numel(), nb = off.numel();
        index_put_ordered_dev<T>
            <<<blocks_for(rest), kThreads, 0, as_stream(st)>>>(o, v, offp, rest, ocr, nb, ocb);
      });
    }
    check_launch("index_put", st);
  }
  if (!out.is_same(out_arg)) gpu_copy(out_arg, out);
}

// ---- masked_fill ------------------------------------------------------------------------------

template <class U>
__global__ void masked_fill_dev(U* out, const U* x, const bool* mask, U value, int64_t n,
                                OffsetCalc<3> oc) {
  KILN_GRID_LOOP(i, n) {
    int64_t o[3];
    oc.get(i, o);
    out[o[0]] = mask[o[2]] ? value : x[o[1]];
  }
}

void masked_fill_gpu(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  if (n == 0) return;
  // The value in out's dtype, converted as the CPU fill_ converts it.
  Tensor one = ::kiln::detail::empty_impl({}, out.dtype(), Device(kCPU));
  {
    OpCall f(OpId::Fill);
    f.out.push_back(one);
    f.attrs.s0 = c.attrs.s0;
    f.attrs.has_s0 = true;
    ::kiln::detail::find_kernel(OpId::Fill, kCPU)(f);
  }
  const int dev = device_of(out);
  DeviceGuard g(dev);
  StreamHandle st = current_stream(dev);
  const Tensor* ops[3] = {&out, &c.in[0], &c.in[1]};
  OffsetCalc<3> oc = make_offset_calc<3>(ops, "masked_fill");
  dispatch_raw(out.element_size(), [&]<class U>() {
    U v;
    std::memcpy(static_cast<void*>(&v), one.data_ptr(), sizeof(U));
    masked_fill_dev<U><<<blocks_for(n), kThreads, 0, as_stream(st)>>>(
        static_cast<U*>(out.data_ptr()), static_cast<const U*>(c.in[0].data_ptr()),
        static_cast<const bool*>(c.in[1].data_ptr()), v, n, oc);
  });
  check_launch("masked_fill", st);
}

// ---- compaction: masked_select, masked_scatter, nonzero (Note [GPU compaction]) ---------------

struct MaskFlag {
  const bool* mask;
  OffsetCalc<2> oc;  // operand 1 is the mask
  __device__ bool operator()(int64_t e) const {
    int64_t o[2];
    oc.get(e, o);
    return mask[o[1]];
  }
};

template <class U>
struct SelectWrite {
  U* out;
  int64_t os;
  const U* x;
  OffsetCalc<2> oc;
  __device__ void operator()(int64_t e, int64_t pos) const {
    int64_t o[2];
    oc.get(e, o);
    out[pos * os] = x[o[0]];
  }
};

template <class U>
struct ScatterWrite {
  U* out;
  const U* src;
  OffsetCalc<2> oc;
  __device__ void operator()(int64_t e, int64_t pos) const {
    int64_t o[2];
    oc.get(e, o);
    out[o[0]] = src[pos];
  }
};

void masked_select_gpu(OpCall& c) {
  const Tensor &x = c.in[0], &mask = c.in[1];
  Tensor& out = c.out[0];
  const int64_t n = x.numel();
  const int dev = device_of(x);
  DeviceGuard g(dev);
  // Row-major walk over x's shape (OffsetCalc keeps row-major order of the linear index).
  const Tensor* ops[2] = {&x, &mask};
  OffsetCalc<2> oc = make_offset_calc<2>(ops, "masked_select");
  MaskFlag flag{static_cast<const bool*>(mask.data_ptr()), oc};
  Tensor buf;
  const int64_t total = compact_count(flag, n, x.device(), &buf, "masked_select");
  ::kiln::detail::resize_impl(out, {total});
  if (total == 0) return;
  dispatch_raw(x.element_size(), [&]<class U>() {
    SelectWrite<U> w{static_cast<U*>(out.data_ptr()), out.stride(0),
                     static_cast<const U*>(x.data_ptr()), oc};
    compact_write(flag, w, n, buf, "masked_select");
  });
}

void masked_scatter_gpu(OpCall& c) {
  const Tensor &x = c.in[0], &mask = c.in[1];
  const Tensor source = c.in[2].is_contiguous() ? c.in[2] : [&] {
    Tensor t = empty_like_contig(c.in[2]);
    gpu_copy(t, c.in[2]);
    return t;
  }();
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  const int dev = device_of(out);
  DeviceGuard g(dev);
  const Tensor* ops[2] = {&out, &mask};
  OffsetCalc<2> oc = make_offset_calc<2>(ops, "masked_scatter");
  MaskFlag flag{static_cast<const bool*>(mask.data_ptr()), oc};
  Tensor buf;
  const int64_t total = compact_count(flag, n, out.device(), &buf, "masked_scatter");
  KILN_CHECK(total <= source.numel(), "[masked_scatter] the mask has ", total,
             " true elements but source has only ", source.numel(), " elements");
  gpu_copy(out, x);
  if (total == 0) return;
  dispatch_raw(out.element_size(), [&]<class U>() {
    ScatterWrite<U> w{static_cast<U*>(out.data_ptr()), static_cast<const U*>(source.data_ptr()),
                      oc};
    compact_write(flag, w, n, buf, "masked_scatter");
  });
}

template <class T>
__device__ __forceinline__ bool is_nonzero(const T& v) {
  if constexpr (::kiln::detail::is_complex_v<T>)
    return v.real() != decltype(v.real())(0) || v.imag() != decltype(v.real())(0);
  else if constexpr (std::is_same_v<T, bool>)
    return v;
  else
    return ::kiln::detail::convert<double>(v) != 0.0;
}

template <class T>
struct NonzeroFlag {
  const T* x;
  OffsetCalc<1> oc;
  __device__ bool operator()(int64_t e) const {
    int64_t o[1];
    oc.get(e, o);
    return is_nonzero(x[o[0]]);
  }
};

struct NonzeroWrite {
  int64_t* out;
  int nd;
  int64_t sizes[64];
  __device__ void operator()(int64_t e, int64_t pos) const {
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t q = e / sizes[d];
      out[pos * nd + d] = e - q * sizes[d];
      e = q;
    }
  }
};

void nonzero_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor& out = c.out[0];
  const int64_t n = x.numel(), nd = x.dim();
  KILN_CHECK(nd <= 64, "[nonzero] tensors with more than 64 dims are not supported");
  const int dev = device_of(x);
  DeviceGuard g(dev);
  const Tensor* ops[1] = {&x};
  OffsetCalc<1> oc = make_offset_calc<1>(ops, "nonzero");
  ::kiln::detail::dispatch_types<::kiln::detail::kAllMask>(x.dtype(), "nonzero", [&]<class T>() {
    NonzeroFlag<T> flag{static_cast<const T*>(x.data_ptr()), oc};
    Tensor buf;
    const int64_t total = compact_count(flag, n, x.device(), &buf, "nonzero");
    ::kiln::detail::resize_impl(out, {total, nd});
    if (total == 0 || nd == 0) return;
    NonzeroWrite w{static_cast<int64_t*>(out.data_ptr()), static_cast<int>(nd), {}};
    for (int64_t d = 0; d < nd; ++d) w.sizes[d] = x.size(d);
    compact_write(flag, w, n, buf, "nonzero");
  });
}

}  // namespace

void register_index_adv_kernels(::kiln::detail::KernelRegistry& r) {
  r.set(OpId::Index, kCUDA, &index_gpu);
  r.set(OpId::IndexPut, kCUDA, &index_put_gpu);
  r.set(OpId::MaskedFill, kCUDA, &masked_fill_gpu);
  r.set(OpId::MaskedSelect, kCUDA, &masked_select_gpu);
  r.set(OpId::MaskedScatter, kCUDA, &masked_scatter_gpu);
  r.set(OpId::Nonzero, kCUDA, &nonzero_gpu);
}

}  // namespace kiln::gpu
