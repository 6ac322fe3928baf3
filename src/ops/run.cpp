// The generic op path: autocast -> infer -> trace -> kernel -> copy-back -> autograd.
#include "ops/run.h"

#include "dispatch/registry.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

// Autograd's hooks are installed from the start (defined in src/autograd/record.cpp).
void* autograd_pre(OpCall& c);
void autograd_post(OpCall& c, void* pending);
void autograd_abort(void* pending);
// InferenceMode's thread-local flag (src/autograd/grad_mode.cpp).
extern constinit thread_local bool t_inference_mode;

OpHooks& op_hooks() {
  static OpHooks h = [] {
    OpHooks x;
    x.autograd_pre = &autograd_pre;
    x.autograd_post = &autograd_post;
    x.autograd_abort = &autograd_abort;
    return x;
  }();
  return h;
}

bool& tracing_active() {
  thread_local bool active = false;
  return active;
}

namespace {
// Drops a pending autograd record if the kernel throws.
struct PendingGuard {
  void* p = nullptr;
  void (*abort)(void*) = nullptr;
  ~PendingGuard() {
    if (p != nullptr) abort(p);
  }
};

// The no-grad fast path: when no input (nor, in place, the written tensor) carries autograd
// metadata, autograd_pre has nothing to record (it only looks at requires_grad through that
// metadata), so run() skips the call.
KILN_INLINE bool may_need_autograd(const OpCall& c) {
  for (const Tensor& t : c.in)
    if (t.defined() && t.impl()->autograd_meta() != nullptr) return true;
  return c.inplace && !c.out.empty() && c.out[0].defined() &&
         c.out[0].impl()->autograd_meta() != nullptr;
}

// Note [Inference tensors]: tensors allocated in inference mode are marked (one store each, in
// empty_impl); writing into a marked tensor outside inference mode is refused before the kernel
// runs, as PyTorch does.
KILN_NOINLINE void check_inference_write(const OpCall& c) {
  for (const Tensor& o : c.out)
    KILN_CHECK(!(o.defined() && o.impl()->is_inference()), "[", op_name(c.op),
               "] Inplace update to inference tensor outside InferenceMode is not allowed. You can "
               "make a clone to get a normal tensor before doing inplace update.");
}

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
  if (KILN_UNLIKELY(c.provided_out) && !t_inference_mode) check_inference_write(c);
  PendingGuard ag;
  if (h.autograd_pre != nullptr && may_need_autograd(c)) {
    ag.p = h.autograd_pre(c);
    ag.abort = h.autograd_abort;
  }
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
  if (ag.p != nullptr) {
    void* p = ag.p;
    ag.p = nullptr;
    h.autograd_post(c, p);
  }
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
