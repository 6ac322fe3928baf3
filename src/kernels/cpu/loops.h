// Generic CPU elementwise kernels over the functors: unary_kernel<F, Mask>, binary_kernel,
// ternary_kernel. Inputs are brought to the compute dtype, then a strided loop with a
// contiguous fast path (vectorizable) runs in parallel chunks.
#pragma once

#include "core/dispatch_dtype.h"
#include "kernels/convert.h"
#include "kernels/cpu/iter.h"
#include "kernels/functors.h"
#include "ops/op.h"

namespace kiln::cpu {

fn::Params make_params(const OpAttrs& a);

// Replaces inputs (from c.promote_from on) that are not of c.compute by converted copies.
void cast_inputs(OpCall& c);

// The storage type of a functor's result R when the compute type is C and the input storage T.
template <class T, class C, class R>
using out_storage_t = std::conditional_t<std::is_same_v<R, C>, T, R>;

template <class OutT, class C, class T>
KILN_INLINE OutT store_as(const T& v) {
  return detail::convert<OutT>(v);
}

template <template <class> class F, uint32_t Mask>
void unary_kernel(OpCall& c) {
  cast_inputs(c);
  fn::Params p = make_params(c.attrs);
  detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = detail::opmath_t<T>;
    const F<C> f(p);
    using R = std::decay_t<decltype(f(C()))>;
    using O = out_storage_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "unary output dtype mismatch");
    StridedIter it;
    it.add(c.out[0]);
    it.add(c.in[0]);
    it.build(c.out[0].sizes());
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(O) && s[1] == sizeof(T)) {
        O* o = reinterpret_cast<O*>(d[0]);
        const T* a = reinterpret_cast<const T*>(d[1]);
        for (int64_t i = 0; i < n; ++i) o[i] = detail::convert<O>(f(detail::convert<C>(a[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T& a = *reinterpret_cast<const T*>(d[1] + i * s[1]);
          *reinterpret_cast<O*>(d[0] + i * s[0]) = detail::convert<O>(f(detail::convert<C>(a)));
        }
      }
    });
  });
}

template <template <class> class F, uint32_t Mask>
void binary_kernel(OpCall& c) {
  cast_inputs(c);
  fn::Params p = make_params(c.attrs);
  detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = detail::opmath_t<T>;
    const F<C> f(p);
    using R = std::decay_t<decltype(f(C(), C()))>;
    using O = out_storage_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "binary output dtype mismatch");
    StridedIter it;
    it.add(c.out[0]);
    it.add(c.in[0]);
    it.add(c.in[1]);
    it.build(c.out[0].sizes());
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      O* o = reinterpret_cast<O*>(d[0]);
      const T* a = reinterpret_cast<const T*>(d[1]);
      const T* b = reinterpret_cast<const T*>(d[2]);
      if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = detail::convert<O>(f(detail::convert<C>(a[i]), detail::convert<C>(b[i])));
      } else if (s[0] == sizeof(O) && s[1] == sizeof(T) && s[2] == 0) {
        const C bv = detail::convert<C>(*b);
        for (int64_t i = 0; i < n; ++i) o[i] = detail::convert<O>(f(detail::convert<C>(a[i]), bv));
      } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(T)) {
        const C av = detail::convert<C>(*a);
        for (int64_t i = 0; i < n; ++i) o[i] = detail::convert<O>(f(av, detail::convert<C>(b[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T& x = *reinterpret_cast<const T*>(d[1] + i * s[1]);
          const T& y = *reinterpret_cast<const T*>(d[2] + i * s[2]);
          *reinterpret_cast<O*>(d[0] + i * s[0]) =
              detail::convert<O>(f(detail::convert<C>(x), detail::convert<C>(y)));
        }
      }
    });
  });
}

// Ternary: inputs in[0..2]; inputs before c.promote_from keep their dtype (where's bool cond),
// which the functor receives as its own storage type `Cond` (bool by default).
template <template <class> class F, uint32_t Mask, class Cond = void>
void ternary_kernel(OpCall& c) {
  cast_inputs(c);
  fn::Params p = make_params(c.attrs);
  detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = detail::opmath_t<T>;
    using A = std::conditional_t<std::is_void_v<Cond>, T, Cond>;
    using CA = std::conditional_t<std::is_void_v<Cond>, C, Cond>;
    const F<C> f(p);
    using R = std::decay_t<decltype(f(CA(), C(), C()))>;
    using O = out_storage_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "ternary output dtype mismatch");
    StridedIter it;
    it.add(c.out[0]);
    for (int k = 0; k < 3; ++k) it.add(c.in[k]);
    it.build(c.out[0].sizes());
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const A& x = *reinterpret_cast<const A*>(d[1] + i * s[1]);
        const T& y = *reinterpret_cast<const T*>(d[2] + i * s[2]);
        const T& z = *reinterpret_cast<const T*>(d[3] + i * s[3]);
        *reinterpret_cast<O*>(d[0] + i * s[0]) = detail::convert<O>(
            f(detail::convert<CA>(x), detail::convert<C>(y), detail::convert<C>(z)));
      }
    });
  });
}

}  // namespace kiln::cpu
