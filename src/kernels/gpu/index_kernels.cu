// GPU kernels of the along-one-dim index ops (index_select, gather, the scatter family,
// index_add/copy/fill) and the registration of the whole GPU index family (the advanced and
// masked ops live in index_adv_kernels.cu). Semantics: src/kernels/cpu/index_kernels.cpp.
#include "backend/gpu/vendor.h"

#include <limits>

#include "kernels/gpu/index_scatter.cuh"
#include "kernels/gpu/index_util.cuh"
#include "kiln/ops/determinism.h"

namespace kiln::gpu {

using namespace ::kiln::gpu::idx;
using ::kiln::detail::convert;
using ::kiln::detail::is_complex_v;
using ::kiln::detail::opmath_t;

namespace {

// t's strides for a view with nd dims (index ops treat 0-dim tensors as 1-D of size 1).
DimVector strides_for(const Tensor& t, int64_t nd) {
  if (t.dim() == nd) return DimVector(t.strides().begin(), t.strides().end());
  return DimVector(nd, 0);
}

DimVector strides_without(const Tensor& t, int64_t nd, int64_t dim) {
  DimVector r = strides_for(t, nd);
  if (nd > 0) r[dim] = 0;
  return r;
}

int64_t dim_size(const Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.size(dim); }

// An int64 copy of an int32 index (the kernels are instantiated for int64 indices only).
Tensor as_int64_index(const Tensor& index) {
  if (index.dtype() == DType::Int64) return index;
  Tensor t = ::kiln::detail::empty_impl(index.sizes(), DType::Int64, index.device());
  gpu_copy(t, index);
  return t;
}

// ---- gather engine: out[p] = x[p with coordinate dim replaced by idx[p]] ---------------------
template <class U>
__global__ void gather_kernel_dev(U* out, const U* x, const int64_t* idx, int64_t total,
                                  OffsetCalc<3> oc, int64_t n, int64_t xs, KernelErrorSlot err,
                                  int op_id, int64_t dim) {
  KILN_GRID_LOOP(i, total) {
    int64_t off[3];
    oc.get(i, off);
    const int64_t v = idx[off[2]];
    const int64_t w = v < 0 ? v + n : v;
    if (static_cast<uint64_t>(w) >= static_cast<uint64_t>(n)) {
      report_index_error(err, op_id, v, n, dim);
      continue;
    }
    out[off[0]] = x[off[1] + w * xs];
  }
}

// iv: the index over out's shape (int64).
void gather_engine(OpId op, const Tensor& out, const Tensor& x, const Tensor& iv, int64_t dim) {
  if (out.numel() == 0) return;
  Tensor xv = ::kiln::detail::make_view(x, out.sizes(), strides_without(x, out.dim(), dim),
                                        x.storage_offset());
  const int64_t n = dim_size(x, dim);
  const int64_t xs = x.dim() == 0 ? 0 : x.stride(dim);
  const Tensor* ops[3] = {&out, &xv, &iv};
  OffsetCalc<3> oc = make_offset_calc<3>(ops, op_name(op));
  const int dev = device_of(out);
  DeviceGuard g(dev);
  StreamHandle st = current_stream(dev);
  KernelErrorSlot err = kernel_error_slot(dev);
  const int64_t total = out.numel();
  dispatch_raw(out.element_size(), [&]<class U>() {
    gather_kernel_dev<U><<<blocks_for(total), kThreads, 0, as_stream(st)>>>(
        static_cast<U*>(out.data_ptr()), static_cast<const U*>(x.data_ptr()),
        static_cast<const int64_t*>(iv.data_ptr()), total, oc, n, xs, err, static_cast<int>(op),
        dim);
  });
  check_launch(op_name(op), st);
}

void index_select_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor index = as_int64_index(c.in[1]);
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  if (out.numel() == 0) return;
  DimVector is(out.dim(), 0);
  if (out.dim() > 0) is[dim] = index.dim() == 0 ? 0 : index.stride(0);
  Tensor iv = ::kiln::detail::make_view(index, out.sizes(), is, index.storage_offset());
  gather_engine(OpId::IndexSelect, out, x, iv, dim);
}

void gather_gpu(OpCall& c) {
  gather_engine(OpId::Gather, c.out[0], c.in[0], as_int64_index(c.in[1]), c.attrs.i0);
}

// ---- scatter family ---------------------------------------------------------------------------

// A 0-dim device tensor of `dtype` holding v (converted as the CPU fill_ converts it).
Tensor device_value(const Scalar& v, DType dtype, Device dev) {
  Tensor t = ::kiln::detail::empty_impl({}, dtype, dev);
  gpu_fill(t, v);
  return t;
}

template <class T>
T identity_of(Red r) {
  using O = opmath_t<T>;
  if (r == Red::Mul) return convert<T>(O(1));
  if constexpr (!is_complex_v<T>) {
    using L = std::numeric_limits<O>;
    if (r == Red::Max) return convert<T>(L::has_infinity ? -L::infinity() : L::lowest());
    if (r == Red::Min) return convert<T>(L::has_infinity ? L::infinity() : L::max());
  }
  return convert<T>(O(0));
}

Red scatter_red(int64_t code) { return code == 1 ? Red::Add : code == 2 ? Red::Mul : Red::None; }

// out (already holding x) op= src over the index's shape; see ScatterPlan.
void scatter_run(OpId op, const Tensor& out_arg, const Tensor& index, const Tensor& src,
                 int64_t dim, Red r, bool include_self, const Scalar* alpha) {
  const char* name = op_name(op);
  if (index.numel() == 0) return;
  const int dev = device_of(out_arg);
  DeviceGuard g(dev);
  // The kernels address a contiguous output (so that the aux array shares its offsets).
  Tensor out = out_arg.is_contiguous() ? out_arg : empty_like_contig(out_arg);
  if (!out.is_same(out_arg)) gpu_copy(out, out_arg);
  ScatterPlan p(op, out, index, src, dim);
  const bool det = are_deterministic_algorithms_enabled();
  const DType dt = out.dtype();
  const bool fp = is_floating_point(dt) || is_complex(dt);
  if (!include_self) {  // start the touched elements from the reduction's identity
    Tensor idt = ::kiln::detail::empty_impl({}, dt, Device(kCPU));
    ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask>(
        dt, name, [&]<class T>() { *static_cast<T*>(idt.data_ptr()) = identity_of<T>(r); });
    Tensor idg = ::kiln::detail::empty_impl({}, dt, out.device());
    gpu_copy(idg, idt);
    p.store_value(idg, ScatterMode::Store);
  }
  if (r == Red::None) {
    // Last writer in index order wins, as on the CPU: mark the highest j, then write.
    p.winner_store();
  } else {
    Tensor cnt;
    if (r == Red::Mean) cnt = p.count(include_self);
    // Deterministic mode orders every floating reduction (max/min too: the sign of a zero and
    // the payload of a NaN depend on the order atomics land in).
    const bool seq = (fp && det) || (dt == DType::Complex128 && r == Red::Mul);
    p.reduce(r, alpha, seq);
    if (r == Red::Mean) p.divide(cnt);
  }
  if (!out.is_same(out_arg)) gpu_copy(out_arg, out);
}

void scatter_gpu(OpCall& c) {
  const Tensor &x = c.in[0], &index0 = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  const Tensor index = as_int64_index(index0);
  gpu_copy(out, x);
  Tensor sv;
  if (c.op == OpId::ScatterValue) {
    Tensor v = device_value(c.attrs.s0, out.dtype(), out.device());
    sv = ::kiln::detail::make_view(v, index.sizes(), DimVector(index.dim(), 0), 0);
  } else {
    const Tensor& src = c.in[2];
    sv = ::kiln::detail::make_view(src, index.sizes(), strides_for(src, index.dim()),
                                   src.storage_offset());
  }
  Red r = Red::None;
  bool include_self = true;
  if (c.op == OpId::ScatterAdd) {
    r = Red::Add;
  } else if (c.op == OpId::ScatterReduce) {
    static constexpr Red kRed[] = {Red::Add, Red::Mul, Red::Mean, Red::Max, Red::Min};
    r = kRed[c.attrs.i1];
    include_self = c.attrs.flag;
  } else {
    r = scatter_red(c.attrs.i1);
  }
  KILN_CHECK(!is_float8(out.dtype()) || r == Red::None, "[", op_name(c.op), "] does not support ",
             dtype_name(out.dtype()));
  KILN_CHECK(!is_complex(out.dtype()) || (r != Red::Max && r != Red::Min), "[", op_name(c.op),
             "] amax/amin do not support complex tensors");
  scatter_run(c.op, out, index, sv, dim, r, include_self, nullptr);
}

// An index over `shape` that repeats a 1-D index along dim (index_add/copy/fill).
Tensor expand_index_1d(const Tensor& index, IntArrayRef shape, int64_t dim) {
  DimVector st(shape.size(), 0);
  if (!shape.empty()) st[dim] = index.dim() == 0 ? 0 : index.stride(0);
  return ::kiln::detail::make_view(index, shape, st, index.storage_offset());
}

void index_add_copy_fill_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor index = as_int64_index(c.in[1]);
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  gpu_copy(out, x);
  if (c.op == OpId::IndexFill) {
    DimVector shape(out.sizes().begin(), out.sizes().end());
    if (!shape.empty()) shape[dim] = index.numel();
    Tensor iv = expand_index_1d(index, shape, dim);
    Tensor v = device_value(c.attrs.s0, out.dtype(), out.device());
    Tensor sv = ::kiln::detail::make_view(v, shape, DimVector(shape.size(), 0), 0);
    scatter_run(c.op, out, iv, sv, dim, Red::None, true, nullptr);
    return;
  }
  const Tensor& src = c.in[2];
  Tensor iv = expand_index_1d(index, src.sizes(), dim);
  const bool add = c.op == OpId::IndexAdd;
  scatter_run(c.op, out, iv, src, dim, add ? Red::Add : Red::None, true,
              add ? &c.attrs.s0 : nullptr);
}

}  // namespace

void register_index_adv_kernels(::kiln::detail::KernelRegistry& r);  // index_adv_kernels.cu

void register_index_kernels(::kiln::detail::KernelRegistry& r) {
  r.set(OpId::IndexSelect, kCUDA, &index_select_gpu);
  r.set(OpId::Gather, kCUDA, &gather_gpu);
  r.set(OpId::Scatter, kCUDA, &scatter_gpu);
  r.set(OpId::ScatterValue, kCUDA, &scatter_gpu);
  r.set(OpId::ScatterAdd, kCUDA, &scatter_gpu);
  r.set(OpId::ScatterReduce, kCUDA, &scatter_gpu);
  r.set(OpId::IndexAdd, kCUDA, &index_add_copy_fill_gpu);
  r.set(OpId::IndexCopy, kCUDA, &index_add_copy_fill_gpu);
  r.set(OpId::IndexFill, kCUDA, &index_add_copy_fill_gpu);
  register_index_adv_kernels(r);
}

}  // namespace kiln::gpu
