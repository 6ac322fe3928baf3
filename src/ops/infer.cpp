// Elementwise infer, broadcasting, device checks and output allocation.
#include "ops/infer.h"

#include <algorithm>
#include <numeric>

#include "kiln/type_promotion.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

DimVector broadcast_shapes(const char* op, IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(sa == sb || sa == 1 || sb == 1, "[", op, "] shapes ", a, " and ", b,
               " cannot be broadcast: size ", sa, " vs ", sb, " at dim ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

Device common_device(const OpCall& c) {
  const char* op = op_name(c.op);
  std::optional<Device> dev;
  std::optional<Device> cpu_scalar;
  for (const Tensor& t : c.in) {
    if (!t.defined()) continue;
    if (t.is_cpu() && t.dim() == 0) {
      cpu_scalar = t.device();
      continue;
    }
    if (!dev) {
      dev = t.device();
    } else {
      KILN_CHECK(
          *dev == t.device(), "[", op,
          "] expected all tensors to be on the same device, but found at least two devices, ",
          dev->str(), " and ", t.device().str());
    }
  }
  if (dev) return *dev;
  return cpu_scalar ? *cpu_scalar : Device(kCPU);
}

Tensor make_output(IntArrayRef shape, DType dtype, Device device, const Tensor& like) {
  if (like.defined() && !like.is_contiguous() && like.sizes() == shape && like.dim() > 1) {
    // Follow like's stride order when it is dense and non-overlapping (e.g. a transposed input).
    int64_t n = like.dim();
    DimVector perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    IntArrayRef st = like.strides();
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
      if (shape[x] == 1 || shape[y] == 1) return false;
      return st[x] > st[y];
    });
    int64_t expect = 1;
    bool dense = true;
    for (int64_t i = n - 1; i >= 0; --i) {
      int64_t d = perm[i];
      if (shape[d] != 1 && st[d] != expect) dense = false;
      expect *= shape[d];
    }
    if (dense) {
      DimVector strides(n);
      int64_t s = 1;
      for (int64_t i = n - 1; i >= 0; --i) {
        strides[perm[i]] = s;
        s *= std::max<int64_t>(shape[perm[i]], 1);
      }
      return empty_strided_impl(shape, strides, dtype, device);
    }
  }
  return empty_impl(shape, dtype, device);
}

Tensor check_provided_out(OpCall& c, Tensor& out, IntArrayRef shape, DType dtype, Device device) {
  const char* op = op_name(c.op);
  KILN_CHECK(out.device() == device, "[", op, "] expected the output on ", device.str(),
             " but it is on ", out.device().str());
  if (out.sizes() != shape) {
    KILN_CHECK(out.numel() == 0 && !c.inplace, "[", op, "] output with shape ", out.sizes(),
               " doesn't match the broadcast shape ", shape);
    resize_impl(out, shape);
  }
  KILN_CHECK(can_cast(dtype, out.dtype()), "[", op, "] result type ", dtype_name(dtype),
             " can't be cast to the desired output type ", dtype_name(out.dtype()));
  if (out.dtype() == dtype) return out;
  Tensor tmp = make_output(shape, dtype, device);
  c.copy_back.emplace_back(tmp, out);
  return tmp;
}

namespace {

void check_flags(const OpCall& c, const OpDef& d, DType common) {
  if ((d.flags & kNoComplex) && is_complex(common))
    KILN_ERROR("[", d.name, "] does not support complex inputs (got ", dtype_name(common), ")");
  if ((d.flags & kNoBool) && common == DType::Bool)
    KILN_ERROR("[", d.name, "] does not support bool inputs",
               (c.op == OpId::Neg ? "; use logical_not() to invert a mask" : ""),
               (c.op == OpId::Sub ? "; use logical_xor() or ~ instead" : ""));
  if ((d.flags & kIntegralOnly) && !is_integral(common, true))
    KILN_ERROR("[", d.name, "] is only supported for integer and bool tensors, got ",
               dtype_name(common));
  if ((d.flags & kFloatOnly) && !is_floating_point(common) && !is_complex(common))
    KILN_ERROR("[", d.name, "] is only supported for floating point tensors, got ",
               dtype_name(common));
}

}  // namespace

void infer_elementwise(OpCall& c) {
  const OpDef& d = op_def(c.op);
  Device dev = common_device(c);
  ResultTypeState rs;
  DimVector shape;
  const Tensor* like = nullptr;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const Tensor& t = c.in[i];
    KILN_CHECK(t.defined(), "[", d.name, "] input ", i, " is an undefined tensor");
    if (i >= c.promote_from) rs.add(t);
    shape = i == 0 ? DimVector(t.sizes()) : broadcast_shapes(d.name, shape, t.sizes());
  }
  for (const Tensor& t : c.in)
    if (!like && t.sizes() == IntArrayRef(shape)) like = &t;
  DType common = c.attrs.dtype ? *c.attrs.dtype : rs.result();
  DType out_dtype = common;
  switch (d.rule) {
    case DTypeRule::Same:
    case DTypeRule::Custom:
      break;
    case DTypeRule::Float:
      if (is_integral(common, true)) common = out_dtype = get_default_dtype();
      break;
    case DTypeRule::Compare:
    case DTypeRule::Logical:
      out_dtype = DType::Bool;
      break;
    case DTypeRule::Integral:
      KILN_CHECK(is_integral(common, true), "[", d.name,
                 "] is only supported for integer and bool tensors, got ", dtype_name(common));
      break;
    case DTypeRule::ToReal:
      out_dtype = to_real(common);
      break;
    case DTypeRule::FloatToReal:
      if (is_integral(common, true)) common = get_default_dtype();
      out_dtype = to_real(common);
      break;
  }
  check_flags(c, d, common);
  c.compute = common;
  if (c.provided_out) {
    Tensor& out = c.out[0];
    c.out[0] = check_provided_out(c, out, shape, out_dtype, dev);
  } else {
    c.out.clear();
    c.out.push_back(make_output(shape, out_dtype, dev, like ? *like : Tensor()));
  }
}

InferFn default_infer(OpKind kind) {
  switch (kind) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Ternary:
      return &infer_elementwise;
    default:
      return nullptr;  // the op family sets c.out itself before run()
  }
}

}  // namespace kiln::detail
