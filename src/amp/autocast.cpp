// kiln::amp::autocast: the per-thread scope state, the op-layer hook (run(): autocast -> infer)
// that casts a call's inputs by PyTorch's lists, and the weight-cast cache.
#include <map>
#include <mutex>

#include "amp/autocast_state.h"
#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace detail {
constinit thread_local bool t_autocast_on = false;
}  // namespace detail

namespace {

using detail::AutocastPolicy;

// Note [autocast lists]: PyTorch's autocast op lists mapped onto kiln's primitives. Every
// matmul-like call (matmul, mm, mv, linear, addmm, baddbmm, bmm, dot, einsum's products) ends in
// the Bmm primitive, so one row covers them. Backward primitives (ConvolutionBackward*,
// *Backward) are not listed: the gradient pass never autocasts (AutocastSuspend in the engine).
// CrossEntropyLoss is handled by its front end (Note [autocast cross-entropy] in
// src/nn/functional/loss_ops.cpp): half-precision logits stay, the loss is float32.
// Promotion ops (where, addcmul, addcdiv, lerp, cat) already promote to the widest input through
// the ordinary type rules; they are listed so that the rule is explicit and survives changes.
AutocastPolicy policy_of(OpId op) {
  switch (op) {
    case OpId::Bmm:
    case OpId::Convolution:
    case OpId::FlashAttention:
    case OpId::FlashAttentionVarlen:
      return AutocastPolicy::Lower;
    case OpId::Softmax:
    case OpId::LogSoftmax:
    case OpId::LayerNorm:
    case OpId::RmsNorm:
    case OpId::NllLoss:
    case OpId::Exp:
    case OpId::Expm1:
    case OpId::Log:
    case OpId::Log2:
    case OpId::Log10:
    case OpId::Log1p:
    case OpId::Pow:
    case OpId::Square:  // torch.square is pow(x, 2); kiln's pow(x, 2) runs Square
    case OpId::Reciprocal:
    case OpId::Rsqrt:
    case OpId::Acos:
    case OpId::Asin:
    case OpId::Cosh:
    case OpId::Sinh:
    case OpId::Tan:
    case OpId::Erfinv:
    case OpId::Softplus:
    case OpId::Sum:
    case OpId::NanSum:
    case OpId::Prod:
    case OpId::CumSum:
    case OpId::CumProd:
    case OpId::Norm:
    case OpId::LogSumExp:
      return AutocastPolicy::Float32;
    case OpId::Cat:
    case OpId::Where:
    case OpId::Addcmul:
    case OpId::Addcdiv:
    case OpId::Lerp:
    case OpId::IndexPut:
    case OpId::IndexCopy:
    case OpId::ScatterAdd:
      return AutocastPolicy::Promote;
    default:
      return AutocastPolicy::None;
  }
}

const AutocastPolicy* policy_table() {
  static const auto* table = [] {
    auto* t = new AutocastPolicy[kNumOps];
    for (int i = 0; i < kNumOps; ++i) t[i] = policy_of(static_cast<OpId>(i));
    return t;
  }();
  return table;
}

struct CacheEntry {
  Tensor source;  // keeps the key's TensorImpl alive (no address reuse)
  uint32_t version = 0;
  bool recorded = false;  // made with grad mode on (a cast made under no_grad has no history)
  Tensor cast;
};

struct Tls {
  bool enabled[kNumDeviceTypes] = {false, false};
  DType dtype[kNumDeviceTypes] = {DType::BFloat16, DType::Float16};
  bool cache_enabled = true;
  int depth = 0;  // open autocast objects (enabled or not)
  int suspended = 0;
  std::map<std::pair<const detail::TensorImpl*, DType>, CacheEntry> cache;
};
Tls& tls() {
  thread_local Tls t;
  return t;
}

// The op hook is installed while some thread has autocast on, so that the common case (no
// autocast anywhere) costs run() a single null test.
std::mutex g_mu;
int g_threads_on = 0;

void autocast_hook(OpCall& c);

void refresh() {
  Tls& t = tls();
  const bool on = (t.enabled[0] || t.enabled[1]) && t.suspended == 0;
  if (on == detail::t_autocast_on) return;
  detail::t_autocast_on = on;
  std::lock_guard<std::mutex> lock(g_mu);
  g_threads_on += on ? 1 : -1;
  detail::op_hooks().autocast = g_threads_on > 0 ? &autocast_hook : nullptr;
}

bool is_low(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
bool is_castable_float(DType d) { return is_low(d) || d == DType::Float32 || d == DType::Float64; }

// One cast; leaves that require grad are cached for the outermost scope (PyTorch's rule),
// revalidated by the storage version so an in-place update (optimizer step) is never missed.
Tensor cast_to(const Tensor& x, DType target) {
  Tls& t = tls();
  const bool cacheable = t.cache_enabled && x.requires_grad() && x.is_leaf();
  if (!cacheable) return x.to(target);
  auto key = std::make_pair(static_cast<const detail::TensorImpl*>(x.impl()), target);
  auto it = t.cache.find(key);
  const uint32_t v = x.impl()->version();
  const bool grad = is_grad_enabled();
  if (it != t.cache.end() && it->second.version == v && (it->second.recorded || !grad))
    return it->second.cast;
  Tensor y = x.to(target);
  t.cache[key] = CacheEntry{x, v, grad, y};
  return y;
}

// The target dtype of `policy` for these inputs on device slot `dev`, or nullopt for no cast.
template <class Get>
std::optional<DType> target_of(AutocastPolicy policy, int dev, size_t n, Get get) {
  switch (policy) {
    case AutocastPolicy::Lower:
      return tls().dtype[dev];
    case AutocastPolicy::Float32:
      return DType::Float32;
    case AutocastPolicy::Promote: {
      std::optional<DType> widest;
      bool mixed = false;
      for (size_t i = 0; i < n; ++i) {
        const Tensor* x = get(i);
        if (!x->defined() || !is_castable_float(x->dtype()) || x->impl()->is_wrapped_number())
          continue;
        if (widest && *widest != x->dtype()) mixed = true;
        widest = widest ? promote_types(*widest, x->dtype()) : x->dtype();
      }
      return mixed ? widest : std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// Whether input x is cast to `target` under `policy` (wrapped C++ numbers never are).
bool should_cast(AutocastPolicy policy, const Tensor& x, DType target) {
  if (!x.defined() || x.dtype() == target || x.impl()->is_wrapped_number()) return false;
  switch (policy) {
    case AutocastPolicy::Lower:
      return x.dtype() == DType::Float32;  // float64 stays (PyTorch casts only float32)
    case AutocastPolicy::Float32:
      return is_low(x.dtype());
    case AutocastPolicy::Promote:
      return is_castable_float(x.dtype());
    default:
      return false;
  }
}

int device_slot(const Tensor& x) { return x.device().is_cuda() ? 1 : 0; }

void autocast_hook(OpCall& c) {
  if (!detail::t_autocast_on || c.provided_out) return;  // out=/in-place calls are not autocast
  const AutocastPolicy policy = policy_table()[static_cast<int>(c.op)];
  if (policy == AutocastPolicy::None) return;
  const Tensor* first = nullptr;
  for (const Tensor& x : c.in)
    if (x.defined() && !x.impl()->is_wrapped_number()) {
      first = &x;
      break;
    }
  if (first == nullptr) return;
  const int dev = device_slot(*first);
  if (!tls().enabled[dev]) return;
  // Reductions given an explicit dtype keep it (PyTorch's fp32_set_opt_dtype rule).
  if (policy == AutocastPolicy::Float32 && c.attrs.dtype) return;
  auto target = target_of(policy, dev, c.in.size(), [&](size_t i) { return &c.in[i]; });
  if (!target) return;
  SmallVector<DType, 3> old;
  for (Tensor& x : c.in) {
    if (!should_cast(policy, x, *target)) continue;
    old.push_back(x.dtype());
    x = cast_to(x, *target);
  }
  if (old.empty()) return;
  auto was_old = [&](DType d) {
    for (DType o : old)
      if (o == d) return true;
    return false;
  };
  if (was_old(c.compute)) c.compute = *target;
  // Ops whose front end allocated the outputs (no infer): re-make those of the old dtype.
  if (op_def(c.op).infer == nullptr)
    for (Tensor& o : c.out)
      if (o.defined() && was_old(o.dtype()))
        o = o.is_contiguous()
                ? detail::empty_impl(o.sizes(), *target, o.device())
                : detail::empty_strided_impl(o.sizes(), o.strides(), *target, o.device());
}

}  // namespace

namespace detail {

void autocast_args(AutocastPolicy policy, std::initializer_list<Tensor*> tensors) {
  if (!t_autocast_on || policy == AutocastPolicy::None) return;
  const Tensor* first = nullptr;
  for (Tensor* x : tensors)
    if (x->defined()) {
      first = x;
      break;
    }
  if (first == nullptr) return;
  const int dev = device_slot(*first);
  if (!tls().enabled[dev]) return;
  std::vector<Tensor*> v(tensors);
  auto target = target_of(policy, dev, v.size(), [&](size_t i) { return v[i]; });
  if (!target) return;
  for (Tensor* x : v)
    if (should_cast(policy, *x, *target)) *x = cast_to(*x, *target);
}

AutocastSuspend::AutocastSuspend() : prev_(t_autocast_on) {
  ++tls().suspended;
  refresh();
}
AutocastSuspend::~AutocastSuspend() {
  --tls().suspended;
  refresh();
}

AutocastSnapshot autocast_snapshot() {
  AutocastSnapshot s;
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    s.enabled[d] = tls().enabled[d];
    s.dtype[d] = tls().dtype[d];
  }
  return s;
}

AutocastRestore::AutocastRestore(const AutocastSnapshot& s)
    : prev_(autocast_snapshot()), prev_suspended_(tls().suspended) {
  Tls& t = tls();
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    t.enabled[d] = s.enabled[d];
    t.dtype[d] = s.dtype[d];
  }
  t.suspended = 0;
  ++t.depth;
  refresh();
}

AutocastRestore::~AutocastRestore() {
  Tls& t = tls();
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    t.enabled[d] = prev_.enabled[d];
    t.dtype[d] = prev_.dtype[d];
  }
  t.suspended = prev_suspended_;
  if (--t.depth == 0) t.cache.clear();
  refresh();
}

}  // namespace detail

namespace amp {

autocast::autocast(DeviceType device, std::optional<DType> dtype, bool enabled, bool cache_enabled)
    : device_(device) {
  Tls& t = tls();
  const int dev = static_cast<int>(device);
  KILN_CHECK(dev >= 0 && dev < kNumDeviceTypes, "[autocast] unknown device type");
  if (dtype)
    KILN_CHECK(is_low(*dtype), "[autocast] dtype must be float16 or bfloat16, got ",
               dtype_name(*dtype));
  prev_enabled_ = t.enabled[dev];
  prev_dtype_ = t.dtype[dev];
  prev_cache_ = t.cache_enabled;
  ++t.depth;
  t.enabled[dev] = enabled;
  if (dtype) t.dtype[dev] = *dtype;
  t.cache_enabled = cache_enabled;
  refresh();
}

autocast::~autocast() {
  Tls& t = tls();
  const int dev = static_cast<int>(device_);
  t.enabled[dev] = prev_enabled_;
  t.dtype[dev] = prev_dtype_;
  t.cache_enabled = prev_cache_;
  if (--t.depth == 0) t.cache.clear();  // the outermost scope ends
  refresh();
}

bool is_autocast_enabled(DeviceType device) { return tls().enabled[static_cast<int>(device)]; }
DType get_autocast_dtype(DeviceType device) { return tls().dtype[static_cast<int>(device)]; }
void clear_autocast_cache() { tls().cache.clear(); }
int64_t autocast_cache_size() { return static_cast<int64_t>(tls().cache.size()); }

}  // namespace amp
}  // namespace kiln
