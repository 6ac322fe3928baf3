// GPU reduction kernels (sum, mean, nansum, nanmean, prod, amax/amin, max/min.dim, argmax/argmin,
// var_mean/std_mean, norm, logsumexp, any/all) over the engine of reduce.cuh, and its host side:
// geometry, split choice, workspace. Integer and bool sums/products are reduced as int64.
#include "kernels/gpu/reduce.cuh"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/gpu/reduce_ops.cuh"
#include "ops/tensor_factory.h"

namespace kiln::gpu::red {

using namespace ::kiln::detail;  // dtype masks

namespace {

// OffsetCalc over (size, stride) pairs listed outer first: size-1 dims dropped, mergeable
// neighbours merged.
OffsetCalc<1> calc_of(const std::vector<std::pair<int64_t, int64_t>>& dims, const char* op) {
  std::vector<std::pair<int64_t, int64_t>> m;
  for (auto [sz, st] : dims) {
    if (sz == 1) continue;
    if (!m.empty() && m.back().second == st * sz) {
      m.back().first *= sz;
      m.back().second = st;
    } else {
      m.push_back({sz, st});
    }
  }
  KILN_CHECK(static_cast<int>(m.size()) <= kMaxGpuDims, "[", op,
             "] GPU reductions support at most ", kMaxGpuDims, " non-mergeable dims");
  OffsetCalc<1> oc;
  if (m.empty()) {
    oc.ndim = 1;
    oc.sizes[0] = 1;
    oc.strides[0][0] = 0;
    return oc;
  }
  oc.ndim = static_cast<int>(m.size());
  for (int d = 0; d < oc.ndim; ++d) {
    oc.sizes[d] = m[d].first;
    oc.strides[0][d] = m[d].second;
  }
  return oc;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

RedGeom make_geom(const Tensor& x, IntArrayRef dims, bool ordered, int device) {
  const char* op = "reduce";
  const int64_t nd = x.dim();
  std::vector<bool> is_red(static_cast<size_t>(nd), false);
  for (int64_t d : dims) is_red[static_cast<size_t>(d)] = true;
  std::vector<std::pair<int64_t, int64_t>> kept, red;
  RedGeom g;
  for (int64_t d = 0; d < nd; ++d) {
    std::pair<int64_t, int64_t> e{x.sizes()[d], x.strides()[d]};
    if (is_red[static_cast<size_t>(d)]) {
      red.push_back(e);
      g.R *= e.first;
    } else {
      kept.push_back(e);
      g.O *= e.first;
    }
  }
  if (!ordered)  // memory order: larger strides outside
    std::stable_sort(red.begin(), red.end(),
                     [](auto& a, auto& b) { return std::abs(a.second) > std::abs(b.second); });
  g.kept = calc_of(kept, op);
  g.red = calc_of(red, op);
  if (g.O == 0) return g;  // nothing to launch
  const int64_t red_inner = g.red.strides[0][g.red.ndim - 1];
  const int64_t kept_inner = g.kept.strides[0][g.kept.ndim - 1];
  if (g.O == 1 || red_inner == 1)
    g.inner = true;
  else if (kept_inner == 1)
    g.inner = false;
  else
    g.inner = g.R >= kRedBlock;
  g.red_contig = g.red.ndim == 1 && red_inner == 1;
  // Enough blocks to fill the device: split the reduced range when the outputs alone do not.
  const int64_t target = 8 * static_cast<int64_t>(device_info(device).multi_processor_count);
  const int64_t blocks = g.inner ? std::min<int64_t>(g.O, 65535 * 16) : ceil_div(g.O, kRedBlock);
  int64_t splits = 1;
  if (blocks < target && g.R > 0)
    splits = std::min(ceil_div(target, blocks), ceil_div(g.R, g.inner ? 4096 : 64));
  splits = std::clamp<int64_t>(splits, 1, 65535);
  g.chunk = std::max<int64_t>(1, ceil_div(g.R, splits));
  if (g.red_contig && splits > 1) g.chunk = ceil_div(g.chunk, 16) * 16;  // aligned vector loads
  g.splits = g.R > 0 ? ceil_div(g.R, g.chunk) : 1;
  return g;
}

Tensor workspace(int64_t bytes, int device) {
  return empty_impl({bytes}, DType::UInt8, Device(kCUDA, device));
}

RedLaunch red_begin(const OpCall& c) {
  const Tensor& t = c.out.empty() ? c.in[0] : c.out[0];
  int dev = t.device().index >= 0 ? t.device().index : current_device();
  return {dev, current_stream(dev)};
}

namespace {

// Outputs are written by linear index: non-contiguous ones go through a temporary.
struct OutBuf {
  Tensor dst, buf;
  explicit OutBuf(const Tensor& t)
      : dst(t), buf(t.is_contiguous() ? t : empty_impl(t.sizes(), t.dtype(), t.device())) {}
  template <class T>
  T* ptr() const {
    KILN_ASSERT(buf.dtype() == dtype_of<T>(), "GPU reduction output dtype mismatch");
    return static_cast<T*>(buf.data_ptr());
  }
  void finish() const {
    if (!buf.is_same(dst)) const_cast<Tensor&>(dst).copy_(buf);
  }
};

int64_t reduced_count(const OpCall& c) {
  int64_t n = 1;
  for (int64_t d : c.attrs.ints)
    if (c.in[0].dim() > 0) n *= c.in[0].sizes()[d];
  return n;
}

// Bool and integer inputs of sum/prod are reduced as int64 (same wrapped results).
Tensor as_wide(const Tensor& x) {
  return is_integral(x.dtype(), true) && x.dtype() != DType::Int64 ? x.to(DType::Int64) : x;
}

template <bool kNan, bool kMean>
void sum_kernel(OpCall& c) {
  Tensor x = as_wide(c.in[0]);
  OutBuf o(c.out[0]);
  constexpr uint32_t mask =
      kMean ? (kFloatMask | kComplexMask) : (kNan ? (kFloatMask | kIntMask) : kNumericMask);
  dispatch_types<mask & ~kBoolMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    if constexpr (!std::is_integral_v<T> || std::is_same_v<T, int64_t>) {
      using Op = SumOp<T, kNan && !std::is_integral_v<T>, kMean>;
      launch_reduce(c, Op{o.ptr<typename Op::Out>(), reduced_count(c)}, x);
    } else {
      KILN_ASSERT(false, "integer sums are reduced as int64");
    }
  });
  o.finish();
}

void nanmean_kernel(OpCall& c) {
  OutBuf o(c.out[0]);
  dispatch_types<kFloatMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    launch_reduce(c, NanMeanOp<T>{o.ptr<T>()}, c.in[0]);
  });
  o.finish();
}

void prod_kernel(OpCall& c) {
  Tensor x = as_wide(c.in[0]);
  OutBuf o(c.out[0]);
  dispatch_types<(kFloatMask | kComplexMask) | dtype_bit(DType::Int64)>(
      x.dtype(), op_name(c.op), [&]<class T>() {
        ProdOp<T> op{o.ptr<typename ProdOp<T>::Out>()};
        launch_reduce(c, op, x);
      });
  o.finish();
}

template <bool kMax>
void extreme_kernel(OpCall& c) {
  OutBuf o(c.out[0]);
  dispatch_types<kRealMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    launch_reduce(c, ExtremeOp<T, kMax>{o.ptr<T>()}, c.in[0]);
  });
  o.finish();
}

template <bool kMax, bool kValues>
void arg_kernel(OpCall& c) {
  OutBuf v(c.out[0]);
  OutBuf i(kValues ? c.out[1] : c.out[0]);
  dispatch_types<kRealMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    ArgOp<T, kMax> op{kValues ? v.ptr<T>() : nullptr, i.ptr<int64_t>()};
    launch_reduce(c, op, c.in[0], /*ordered=*/true);
  });
  v.finish();
  if (kValues) i.finish();
}

template <bool kSqrt>
void var_mean_kernel(OpCall& c) {
  OutBuf var(c.out[0]), mean(c.out[1]);
  dispatch_types<kFloatMask | kComplexMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    WelfordOp<T> op{var.ptr<real_t<T>>(), mean.ptr<T>(), c.attrs.s0.to<double>(), kSqrt};
    launch_reduce(c, op, c.in[0]);
  });
  var.finish();
  mean.finish();
}

void norm_kernel(OpCall& c) {
  const double p = c.attrs.s0.to<double>();
  const int kind = p == 0                     ? kNormZero
                   : p == 1                   ? kNormOne
                   : p == 2                   ? kNormTwo
                   : (std::isinf(p) && p > 0) ? kNormInf
                   : std::isinf(p)            ? kNormNegInf
                                              : kNormGeneral;
  OutBuf o(c.out[0]);
  dispatch_types<kFloatMask | kComplexMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    launch_reduce(c, NormOp<T>{o.ptr<real_t<T>>(), p, kind}, c.in[0]);
  });
  o.finish();
}

void logsumexp_kernel(OpCall& c) {
  OutBuf o(c.out[0]);
  dispatch_types<kFloatMask>(c.in[0].dtype(), op_name(c.op),
                             [&]<class T>() { launch_reduce(c, LseOp<T>{o.ptr<T>()}, c.in[0]); });
  o.finish();
}

template <bool kAll>
void any_all_kernel(OpCall& c) {
  OutBuf o(c.out[0]);
  const bool u8 = c.out[0].dtype() == DType::UInt8;
  KILN_ASSERT(u8 || c.out[0].dtype() == DType::Bool, "any/all output must be bool or uint8");
  dispatch_types<kNumericMask>(c.in[0].dtype(), op_name(c.op), [&]<class T>() {
    launch_reduce(c, AnyAllOp<T, kAll>{o.buf.data_ptr(), u8}, c.in[0]);
  });
  o.finish();
}

}  // namespace

}  // namespace kiln::gpu::red

namespace kiln::gpu {

void register_reduce_kernels(::kiln::detail::KernelRegistry& r) {
  using namespace red;
  r.set(OpId::Sum, kCUDA, &sum_kernel<false, false>);
  r.set(OpId::Mean, kCUDA, &sum_kernel<false, true>);
  r.set(OpId::NanSum, kCUDA, &sum_kernel<true, false>);
  r.set(OpId::NanMean, kCUDA, &nanmean_kernel);
  r.set(OpId::Prod, kCUDA, &prod_kernel);
  r.set(OpId::Amax, kCUDA, &extreme_kernel<true>);
  r.set(OpId::Amin, kCUDA, &extreme_kernel<false>);
  r.set(OpId::MaxDim, kCUDA, &arg_kernel<true, true>);
  r.set(OpId::MinDim, kCUDA, &arg_kernel<false, true>);
  r.set(OpId::ArgMax, kCUDA, &arg_kernel<true, false>);
  r.set(OpId::ArgMin, kCUDA, &arg_kernel<false, false>);
  r.set(OpId::VarMean, kCUDA, &var_mean_kernel<false>);
  r.set(OpId::StdMean, kCUDA, &var_mean_kernel<true>);
  r.set(OpId::Norm, kCUDA, &norm_kernel);
  r.set(OpId::LogSumExp, kCUDA, &logsumexp_kernel);
  r.set(OpId::Any, kCUDA, &any_all_kernel<false>);
  r.set(OpId::All, kCUDA, &any_all_kernel<true>);
}

}  // namespace kiln::gpu
