// The generic op path: autocast -> infer -> trace -> kernel -> copy-back -> autograd.
#include "ops/run.h"

#include "dispatch/registry.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

OpHooks& op_hooks() {
  static OpHooks h;
  return h;
}

bool& tracing_active() {
  thread_local bool active = false;
  return active;
}

namespace {
[[noreturn]] KILN_NOINLINE void no_kernel(const OpCall& c, Device dev) {
  if (dev.is_cuda())
    KILN_ERROR("[", op_name(c.op), "] has no kernel for device ", dev.str(),
               (kernel_registry().table[static_cast<int>(c.op)][0] ? " (it runs on the cpu)" : ""));
  KILN_ERROR("[", op_name(c.op), "] has no kernel for device ", dev.str());
}
}  // namespace

void run(OpCall& c) {
  OpHooks& h = op_hooks();
  if (KILN_UNLIKELY(h.autocast != nullptr)) h.autocast(c);
  const OpDef& def = op_def(c.op);
  if (def.infer) def.infer(c);
  if (KILN_UNLIKELY(h.trace != nullptr) && tracing_active() && h.trace(c)) return;
  Device dev = c.out.empty() ? (c.in.empty() ? Device(kCPU) : c.in[0].device()) : c.out[0].device();
  // A copy between the cpu and a GPU runs on the GPU's kernel, whichever side it is on.
  if (c.op == OpId::Copy && dev.is_cpu() && !c.in[0].is_cpu()) dev = c.in[0].device();
  Kernel k = find_kernel(c.op, dev.type);
  if (KILN_UNLIKELY(k == nullptr)) no_kernel(c, dev);
  if (KILN_UNLIKELY(h.profile_begin != nullptr)) h.profile_begin(c);
  k(c);
  if (KILN_UNLIKELY(h.profile_end != nullptr)) h.profile_end(c);
  if (KILN_UNLIKELY(!c.copy_back.empty())) {
    for (auto& [tmp, dst] : c.copy_back) dst.copy_(tmp);
    for (size_t i = 0; i < c.out.size(); ++i)
      for (auto& [tmp, dst] : c.copy_back)
        if (c.out[i].is_same(tmp)) c.out[i] = dst;
  }
  if (c.inplace || c.provided_out)
    for (const Tensor& o : c.out) o.impl()->bump_version();
  if (KILN_UNLIKELY(h.autograd != nullptr)) h.autograd(c);
}

Tensor wrap_scalar(const Scalar& s) {
  DType d = s.is_bool()       ? DType::Bool
            : s.is_integral() ? DType::Int64
            : s.is_complex()  ? DType::Complex128
                              : DType::Float64;
  Tensor t = empty_impl({}, d, Device(kCPU));
  if (!t.impl()->has_storage()) {  // symbolic while tracing: keep the value in a real tensor
    tracing_active() = false;
    t = empty_impl({}, d, Device(kCPU));
    tracing_active() = true;
  }
  switch (d) {
    case DType::Bool:
      *static_cast<bool*>(t.data_ptr()) = s.to<bool>();
      break;
    case DType::Int64:
      *static_cast<int64_t*>(t.data_ptr()) = s.to<int64_t>();
      break;
    case DType::Complex128:
      *static_cast<complex<double>*>(t.data_ptr()) = s.to<complex<double>>();
      break;
    default:
      *static_cast<double*>(t.data_ptr()) = s.to<double>();
  }
  t.impl()->set_wrapped_number(true);
  return t;
}

}  // namespace kiln::detail
