// CPU twins of the multi-tensor kernels (Note [Multi-tensor kernels] in optim/multi_tensor.h):
// fused Adam/AdamW and SGD steps, unscale + inf/NaN check, per-tensor norms and scaling, as
// loops over the per-element math of optim/foreach_math.h (parallel over the elements of each
// tensor; norms sum fixed-size blocks, so results do not depend on the number of threads).
#include <atomic>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "optim/foreach_math.h"
#include "optim/multi_tensor.h"

namespace kiln::cpu {
namespace {

using detail::convert;
using detail::FusedAdamArgs;
using detail::FusedSgdArgs;
namespace fm = detail::foreach_math;

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

// P: the param/grad storage type, S: the state type (float with master weights).
template <class P, class S>
void adam_lists(const FusedAdamArgs& a) {
  using A = acc_t<S>;
  fm::AdamConsts<A> c{static_cast<A>(a.beta1),
                      static_cast<A>(1 - a.beta1),
                      static_cast<A>(a.beta2),
                      static_cast<A>(1 - a.beta2),
                      static_cast<A>(a.eps),
                      static_cast<A>(a.weight_decay),
                      static_cast<A>(1 - a.lr * a.weight_decay),
                      a.decoupled,
                      a.amsgrad,
                      a.maximize};
  const bool unscale = a.inv_grad_scale != 1.0;
  const A inv = static_cast<A>(a.inv_grad_scale);
  for (size_t i = 0; i < a.params.size(); ++i) {
    P* p = ptr<P>(a.params[i]);
    P* g = ptr<P>(a.grads[i]);
    S* m = ptr<S>(a.exp_avgs[i]);
    S* v = ptr<S>(a.exp_avg_sqs[i]);
    S* vmax = a.amsgrad ? ptr<S>(a.max_exp_avg_sqs[i]) : nullptr;
    float* master = a.masters.empty() ? nullptr : ptr<float>(a.masters[i]);
    const A neg_step = static_cast<A>(a.neg_step[i]), bc2 = static_cast<A>(a.bc2_sqrt[i]);
    parallel_for(0, a.params[i].numel(), kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        A gv = convert<A>(g[j]);
        if (unscale) {
          gv = gv * inv;
          g[j] = convert<P>(gv);
        }
        A pv = master ? static_cast<A>(master[j]) : convert<A>(p[j]);
        A mv = convert<A>(m[j]), vv = convert<A>(v[j]);
        A vm = vmax ? convert<A>(vmax[j]) : A(0);
        fm::adam_element(pv, gv, mv, vv, &vm, c, neg_step, bc2);
        m[j] = convert<S>(mv);
        v[j] = convert<S>(vv);
        if (vmax) vmax[j] = convert<S>(vm);
        if (master) master[j] = static_cast<float>(pv);
        p[j] = convert<P>(pv);
      }
    });
  }
}

template <class P, class S>
void sgd_lists(const FusedSgdArgs& a) {
  using A = acc_t<S>;
  fm::SgdConsts<A> c{static_cast<A>(-a.lr),
                     static_cast<A>(a.momentum),
                     static_cast<A>(1 - a.dampening),
                     static_cast<A>(a.weight_decay),
                     a.nesterov,
                     a.maximize,
                     a.momentum != 0};
  const bool unscale = a.inv_grad_scale != 1.0;
  const A inv = static_cast<A>(a.inv_grad_scale);
  for (size_t i = 0; i < a.params.size(); ++i) {
    P* p = ptr<P>(a.params[i]);
    P* g = ptr<P>(a.grads[i]);
    S* buf = c.has_momentum ? ptr<S>(a.momentum_buffers[i]) : nullptr;
    const bool first = c.has_momentum && a.first[i] != 0;
    float* master = a.masters.empty() ? nullptr : ptr<float>(a.masters[i]);
    parallel_for(0, a.params[i].numel(), kGrainSize, [&](int64_t b0, int64_t e0) {
      for (int64_t j = b0; j < e0; ++j) {
        A gv = convert<A>(g[j]);
        if (unscale) {
          gv = gv * inv;
          g[j] = convert<P>(gv);
        }
        A pv = master ? static_cast<A>(master[j]) : convert<A>(p[j]);
        A b = buf ? convert<A>(buf[j]) : A(0);
        fm::sgd_element(pv, gv, &b, first, c);
        if (buf) buf[j] = convert<S>(b);
        if (master) master[j] = static_cast<float>(pv);
        p[j] = convert<P>(pv);
      }
    });
  }
}

void fused_adam(const FusedAdamArgs& a) {
  detail::dispatch_param_state(a, "_fused_adam_", [&]<class P, class S>() { adam_lists<P, S>(a); });
}

void fused_sgd(const FusedSgdArgs& a) {
  detail::dispatch_param_state(a, "_fused_sgd_", [&]<class P, class S>() { sgd_lists<P, S>(a); });
}

void unscale_check(const std::vector<Tensor>& ts, double inv_scale, const Tensor& found_inf) {
  std::atomic<bool> found{false};
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "unscale", [&]<class T>() {
    using A = acc_t<T>;
    const A inv = static_cast<A>(inv_scale);
    for (const Tensor& t : ts) {
      T* x = ptr<T>(t);
      parallel_for(0, t.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        bool bad = false;
        for (int64_t j = b; j < e; ++j) {
          const A v = convert<A>(x[j]);
          bad |= !fm::finite(v);
          if (inv_scale != 1.0) x[j] = convert<T>(v * inv);
        }
        if (bad) found.store(true, std::memory_order_relaxed);
      });
    }
  });
  if (found.load()) *ptr<float>(found_inf) = 1.0f;
}

// The norm's accumulation over x[b, e) in double: max |x| (NaN sticks) or the sum of |x|^p terms.
template <class T>
double norm_block(const T* x, int64_t b, int64_t e, double p) {
  using A = acc_t<T>;
  double acc = 0;
  for (int64_t j = b; j < e; ++j) {
    const double a = std::fabs(static_cast<double>(convert<A>(x[j])));
    if (std::isinf(p))
      acc = (a != a || a > acc) && acc == acc ? a : acc;
    else if (p == 2)
      acc += a * a;
    else if (p == 1)
      acc += a;
    else
      acc += std::pow(a, p);
  }
  return acc;
}

void norms(const std::vector<Tensor>& ts, double p, const Tensor& out) {
  constexpr int64_t kBlock = 65536;  // fixed blocks: the same sums for any number of threads
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "_foreach_norm", [&]<class T>() {
    using A = acc_t<T>;
    A* o = ptr<A>(out);
    for (size_t i = 0; i < ts.size(); ++i) {
      const T* x = ptr<T>(ts[i]);
      const int64_t n = ts[i].numel(), blocks = (n + kBlock - 1) / kBlock;
      std::vector<double> part(static_cast<size_t>(blocks), 0.0);
      parallel_for(0, blocks, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k)
          part[k] = norm_block(x, k * kBlock, std::min(n, (k + 1) * kBlock), p);
      });
      double acc = 0;
      for (double v : part)
        acc = std::isinf(p) ? ((v != v || v > acc) && acc == acc ? v : acc) : acc + v;
      const double r = std::isinf(p) || p == 1 ? acc
                       : p == 2                ? std::sqrt(acc)
                                               : std::pow(acc, 1 / p);
      o[i] = static_cast<A>(r);
    }
  });
}

void scale(const std::vector<Tensor>& ts, const Tensor& coef) {
  detail::dispatch_types<detail::kFloatMask>(ts[0].dtype(), "_foreach_mul_", [&]<class T>() {
    using A = acc_t<T>;
    const A c = *ptr<A>(coef);
    for (const Tensor& t : ts) {
      T* x = ptr<T>(t);
      parallel_for(0, t.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) x[j] = convert<T>(convert<A>(x[j]) * c);
      });
    }
  });
}

}  // namespace

void register_foreach_kernels(detail::KernelRegistry&) {
  auto& k = detail::mutable_multi_tensor_kernels(DeviceType::CPU);
  k.fused_adam = &fused_adam;
  k.fused_sgd = &fused_sgd;
  k.unscale_check = &unscale_check;
  k.norms = &norms;
  k.scale = &scale;
}

}  // namespace kiln::cpu
