// CPU kernels of sum, mean, nansum, nanmean and prod. The front end (ops/reduce.cpp) casts the
// input to the requested dtype; the output is int64 for bool/integer inputs, else the input's.
#include "core/dispatch_dtype.h"
#include "kernels/cpu/reduce_kernels.h"
#include "kernels/cpu/reduce_ops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KILN_REDUCE_F16C 1
#else
#define KILN_REDUCE_F16C 0
#endif

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks

namespace red {

#if KILN_REDUCE_F16C
namespace {
__attribute__((target("avx,f16c"))) void half_to_float_f16c(const Half* p, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))));
  for (; i < n; ++i) out[i] = convert<float>(p[i]);
}
const bool g_has_f16c = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}();
}  // namespace
#endif

void half_to_float_n(const Half* p, int64_t s, int64_t n, float* out) {
  static_assert(sizeof(Half) == 2, "Half is 16 bits");
#if KILN_REDUCE_F16C
  if (s == 1 && g_has_f16c) {
    half_to_float_f16c(p, n, out);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = convert<float>(p[i * s]);
}

}  // namespace red

namespace {

template <class Out>
Out* out_ptr(const OpCall& c, int i = 0) {
  KILN_ASSERT(c.out[i].dtype() == dtype_of<Out>(), "reduction output dtype mismatch");
  return static_cast<Out*>(c.out[i].data_ptr());
}

template <bool kNan, bool kMean>
void sum_kernel(OpCall& c) {
  constexpr uint32_t mask = kMean ? (kFloatMask | kComplexMask) : (kNan ? kRealMask : kNumericMask);
  dispatch_types<mask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::SumOp<T, kNan && !std::is_integral_v<T>, kMean> op;
    op.out = out_ptr<typename decltype(op)::Out>(c);
    op.count = reduced_count(c);
    red::reduce(op, c, 1);
  });
}

void nanmean_kernel(OpCall& c) {
  dispatch_types<kFloatMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::NanMeanOp<T> op;
    op.out = out_ptr<T>(c);
    red::reduce(op, c, 1);
  });
}

void prod_kernel(OpCall& c) {
  dispatch_types<kNumericMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    red::ProdOp<T> op;
    op.out = out_ptr<typename decltype(op)::Out>(c);
    red::reduce(op, c, 1);
  });
}

}  // namespace

void register_reduce_sum_kernels(KernelRegistry& r) {
  r.set(OpId::Sum, kCPU, &sum_kernel<false, false>);
  r.set(OpId::Mean, kCPU, &sum_kernel<false, true>);
  r.set(OpId::NanSum, kCPU, &sum_kernel<true, false>);
  r.set(OpId::NanMean, kCPU, &nanmean_kernel);
  r.set(OpId::Prod, kCPU, &prod_kernel);
}

}  // namespace kiln::cpu
