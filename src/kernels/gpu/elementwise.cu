// Host side of the generic GPU elementwise kernels (elementwise.cuh): scalar parameters, input
// casts, operand modes and the launch geometry.
#include "kernels/gpu/elementwise.cuh"

#include "backend/gpu/runtime.h"
#include "backend/gpu/small_ops.h"
#include "backend/gpu/stream.h"

namespace kiln::gpu {

fn::Params elem_params(const OpAttrs& a) {
  fn::Params p;
  if (a.has_s0) {
    complex<double> v = a.s0.to_complex();
    p.a = v.real();
    p.a_imag = v.imag();
    p.i = a.s0.is_floating_point() || a.s0.is_complex() ? static_cast<int64_t>(v.real())
                                                        : a.s0.to_int();
  }
  if (a.has_s1) {
    complex<double> v = a.s1.to_complex();
    p.b = v.real();
    p.b_imag = v.imag();
    p.j = a.s1.is_floating_point() || a.s1.is_complex() ? static_cast<int64_t>(v.real())
                                                        : a.s1.to_int();
  }
  return p;
}

void elem_cast_inputs(OpCall& c) {
  for (size_t i = c.promote_from; i < c.in.size(); ++i)
    if (c.in[i].dtype() != c.compute) c.in[i] = c.in[i].to(c.compute);
}

unsigned elem_blocks(int64_t n, int per_thread) {
  int64_t per_block = static_cast<int64_t>(kElemBlock) * per_thread;
  int64_t b = (n + per_block - 1) / per_block;
  KILN_CHECK(b < (int64_t{1} << 31), "elementwise GPU kernel: ", n, " elements are too many");
  return static_cast<unsigned>(b);
}

template <int N>
ElemLaunch elem_prepare(OpCall& c, ElemArgs<N>& a) {
  const Tensor& out = c.out[0];
  a.out = static_cast<char*>(out.data_ptr());
  a.n = out.numel();
  a.contiguous = out.is_contiguous();
  a.vec_ok = false;
  for (int k = 0; k < N; ++k) {
    const Tensor& t = c.in[k];
    a.in[k] = static_cast<const char*>(t.data_ptr());
    if (t.is_cpu()) {
      // A 0-dim CPU tensor (a wrapped number): its value travels with the arguments.
      KILN_ASSERT(t.dim() == 0 && t.element_size() <= 16, "host operand of a GPU kernel");
      std::memcpy(a.scalar[k], t.data_ptr(), static_cast<size_t>(t.element_size()));
      a.mode[k] = kInHostScalar;
      a.in[k] = nullptr;
    } else if (t.numel() == 1) {
      a.mode[k] = kInBroadcast;
    } else {
      a.mode[k] = kInDense;
      if (!(t.sizes() == out.sizes() && t.is_contiguous())) a.contiguous = false;
    }
  }
  if (!a.contiguous) {
    const Tensor* ops[N + 1];
    ops[0] = &out;
    for (int k = 0; k < N; ++k) ops[k + 1] = &c.in[k];
    a.oc = make_offset_calc<N + 1>(ops, op_name(c.op));
  } else {
    a.oc.ndim = 0;
  }
  int dev = out.device().index >= 0 ? out.device().index : current_device();
  // Not current_stream(): that would flush the batch this op may join (elem_launch flushes
  // before any launch of its own).
  return {dev, current_stream_noflush(dev)};
}

template ElemLaunch elem_prepare<1>(OpCall&, ElemArgs<1>&);
template ElemLaunch elem_prepare<2>(OpCall&, ElemArgs<2>&);
template ElemLaunch elem_prepare<3>(OpCall&, ElemArgs<3>&);

}  // namespace kiln::gpu
