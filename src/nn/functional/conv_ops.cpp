// Internal entry points of the convolution, pooling and im2col/col2im primitives (nn_ops.h):
// shape checks, output sizes, allocation and the OpCall for each. float16/bfloat16 convolutions
// on the CPU run in float32 (cast in and out: the kernels are BLAS-backed); the GPU kernels take
// them as they are (cuDNN).
#include "nn/functional/nn_ops.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {
namespace {

bool reduced(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

void check_same(const char* op, const Tensor& a, const Tensor& b, const char* an, const char* bn) {
  KILN_CHECK(a.dtype() == b.dtype(), "[", op, "] ", an, " (", dtype_name(a.dtype()), ") and ", bn,
             " (", dtype_name(b.dtype()), ") must have the same dtype");
  KILN_CHECK(a.device() == b.device(), "[", op, "] ", an, " and ", bn,
             " must be on the same device");
}

void set_conv_attrs(OpCall& c, const ConvParams& p) {
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(p.stride[i]);
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(p.padding[i]);
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(p.dilation[i]);
  c.attrs.i0 = p.groups;
}

void check_params(const char* op, const ConvParams& p) {
  for (int i = 0; i < 3; ++i) {
    KILN_CHECK(p.stride[i] > 0, "[", op, "] stride must be positive, but got ", p.stride[i]);
    KILN_CHECK(p.padding[i] >= 0, "[", op, "] padding must be non-negative, but got ",
               p.padding[i]);
    KILN_CHECK(p.dilation[i] > 0, "[", op, "] dilation must be positive, but got ", p.dilation[i]);
  }
  KILN_CHECK(p.groups > 0, "[", op, "] groups must be positive, but got ", p.groups);
}

// Checks x [N, C, *3] against w [O, C/g, *3]; returns the output shape.
DimVector conv_out_shape(const char* op, IntArrayRef x, IntArrayRef w, const ConvParams& p) {
  KILN_CHECK(x.size() == 5 && w.size() == 5, "[", op, "] expected 5-D input and weight");
  KILN_CHECK(w[0] % p.groups == 0, "[", op, "] out_channels (", w[0],
             ") must be divisible by groups (", p.groups, ")");
  KILN_CHECK(x[1] == w[1] * p.groups, "[", op, "] expected input with ", w[1] * p.groups,
             " channels (weight of shape ", w, ", groups ", p.groups, "), but got input of shape ",
             x);
  DimVector out{x[0], w[0]};
  for (int i = 0; i < 3; ++i) {
    const int64_t padded = x[2 + i] + 2 * p.padding[i];
    const int64_t span = p.dilation[i] * (w[2 + i] - 1) + 1;
    KILN_CHECK(padded >= span, "[", op, "] kernel size (", span,
               " after dilation) can't be greater than the padded input size (", padded, ")");
    out.push_back((padded - span) / p.stride[i] + 1);
  }
  return out;
}

}  // namespace

Tensor convolution_op(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p) {
  const char* op = "convolution";
  KILN_CHECK(x.defined() && w.defined(), "[", op, "] input and weight must be defined");
  KILN_CHECK(is_floating_point(x.dtype()), "[", op, "] expected a floating point input, but got ",
             dtype_name(x.dtype()));
  check_same(op, x, w, "input", "weight");
  if (bias.defined()) {
    check_same(op, x, bias, "input", "bias");
    KILN_CHECK(bias.dim() == 1 && bias.numel() == w.size(0), "[", op, "] expected bias of shape [",
               w.size(0), "], but got ", bias.sizes());
  }
  check_params(op, p);
  if (reduced(x.dtype()) && !x.is_cuda())
    return convolution_op(x.to(kFloat32), w.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias,
                          p)
        .to(x.dtype());
  const DimVector shape = conv_out_shape(op, x.sizes(), w.sizes(), p);
  OpCall c(OpId::Convolution);
  c.in.push_back(x.contiguous());
  c.in.push_back(w.contiguous());
  if (bias.defined()) c.in.push_back(bias.contiguous());
  c.attrs.flag = bias.defined();
  set_conv_attrs(c, p);
  c.out.push_back(empty_impl(shape, x.dtype(), x.device()));
  c.compute = x.dtype();
  return run1(c);
}

Tensor convolution_backward_input_op(const Tensor& grad, const Tensor& w, IntArrayRef input_sizes,
                                     const ConvParams& p) {
  const char* op = "convolution_backward_input";
  KILN_CHECK(grad.defined() && w.defined() && is_floating_point(grad.dtype()), "[", op,
             "] expected floating point grad and weight");
  check_same(op, grad, w, "grad", "weight");
  check_params(op, p);
  if (reduced(grad.dtype()) && !grad.is_cuda())
    return convolution_backward_input_op(grad.to(kFloat32), w.to(kFloat32), input_sizes, p)
        .to(grad.dtype());
  const DimVector out = conv_out_shape(op, input_sizes, w.sizes(), p);
  KILN_CHECK(grad.sizes() == IntArrayRef(out), "[", op, "] grad of shape ", grad.sizes(),
             " doesn't match the convolution output shape ", IntArrayRef(out));
  OpCall c(OpId::ConvolutionBackwardInput);
  c.in.push_back(grad.contiguous());
  c.in.push_back(w.contiguous());
  set_conv_attrs(c, p);
  c.out.push_back(empty_impl(input_sizes, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  return run1(c);
}

Tensor convolution_backward_weight_op(const Tensor& grad, const Tensor& x, IntArrayRef weight_sizes,
                                      const ConvParams& p) {
  const char* op = "convolution_backward_weight";
  KILN_CHECK(grad.defined() && x.defined() && is_floating_point(grad.dtype()), "[", op,
             "] expected floating point grad and input");
  check_same(op, grad, x, "grad", "input");
  check_params(op, p);
  if (reduced(grad.dtype()) && !grad.is_cuda())
    return convolution_backward_weight_op(grad.to(kFloat32), x.to(kFloat32), weight_sizes, p)
        .to(grad.dtype());
  const DimVector out = conv_out_shape(op, x.sizes(), weight_sizes, p);
  KILN_CHECK(grad.sizes() == IntArrayRef(out), "[", op, "] grad of shape ", grad.sizes(),
             " doesn't match the convolution output shape ", IntArrayRef(out));
  OpCall c(OpId::ConvolutionBackwardWeight);
  c.in.push_back(grad.contiguous());
  c.in.push_back(x.contiguous());
  set_conv_attrs(c, p);
  c.out.push_back(empty_impl(weight_sizes, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  return run1(c);
}

// ---------------------------------------------------------------- pooling

int64_t pool_output_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil) {
  const int64_t span = dil * (k - 1) + 1;
  const int64_t num = in + 2 * pad - span + (ceil ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceil && (out - 1) * s >= in + pad) --out;
  return out;
}

namespace {

void check_pool(const char* op, const Tensor& x, const Pool2dParams& p, bool dilation) {
  KILN_CHECK(x.defined() && x.dim() == 4, "[", op, "] expected a 4-D input");
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(p.kernel[i] > 0, "[", op, "] kernel_size must be positive, but got ", p.kernel[i]);
    KILN_CHECK(p.stride[i] > 0, "[", op, "] stride must be positive, but got ", p.stride[i]);
    KILN_CHECK(p.dilation[i] > 0, "[", op, "] dilation must be positive, but got ", p.dilation[i]);
    KILN_CHECK(p.padding[i] >= 0 && p.padding[i] <= p.kernel[i] / 2, "[", op,
               "] pad should be at most half of effective kernel size, but got pad=", p.padding[i],
               ", kernel_size=", p.kernel[i]);
    KILN_CHECK(x.size(1) == 0 || x.size(2 + i) > 0 || x.size(0) == 0, "[", op, "] input of shape ",
               x.sizes(), " has an empty spatial dim");
  }
  (void)dilation;
}

DimVector pool_shape(const char* op, const Tensor& x, const Pool2dParams& p) {
  DimVector out{x.size(0), x.size(1)};
  for (int i = 0; i < 2; ++i) {
    const int64_t o = pool_output_size(x.size(2 + i), p.kernel[i], p.stride[i], p.padding[i],
                                       p.dilation[i], p.ceil_mode);
    KILN_CHECK(o > 0, "[", op, "] output size is too small: input ", x.sizes(), ", kernel ",
               p.kernel[i], ", stride ", p.stride[i], ", padding ", p.padding[i], " give ", o);
    out.push_back(o);
  }
  return out;
}

void set_pool_attrs(OpCall& c, const Pool2dParams& p, bool dilation) {
  for (auto* a : {&p.kernel, &p.stride, &p.padding})
    for (int i = 0; i < 2; ++i) c.attrs.ints.push_back((*a)[i]);
  if (dilation)
    for (int i = 0; i < 2; ++i) c.attrs.ints.push_back(p.dilation[i]);
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool2d_op(const Tensor& x, const Pool2dParams& p) {
  const char* op = "max_pool2d";
  check_pool(op, x, p, true);
  KILN_CHECK(x.dtype() != DType::Bool && !is_complex(x.dtype()), "[", op, "] unsupported dtype ",
             dtype_name(x.dtype()));
  OpCall c(OpId::MaxPool2d);
  c.in.push_back(x.contiguous());
  set_pool_attrs(c, p, true);
  const DimVector shape = pool_shape(op, x, p);
  c.out.push_back(empty_impl(shape, x.dtype(), x.device()));
  c.out.push_back(empty_impl(shape, DType::Int64, x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

Tensor max_pool2d_backward_op(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes) {
  const char* op = "max_pool2d_backward";
  KILN_CHECK(grad.defined() && grad.dim() == 4 && is_floating_point(grad.dtype()), "[", op,
             "] expected a 4-D floating point grad");
  KILN_CHECK(
      indices.defined() && indices.dtype() == DType::Int64 && indices.sizes() == grad.sizes(), "[",
      op, "] expected int64 indices shaped like grad ", grad.sizes());
  KILN_CHECK(
      input_sizes.size() == 4 && input_sizes[0] == grad.size(0) && input_sizes[1] == grad.size(1),
      "[", op, "] bad input sizes ", input_sizes, " for grad ", grad.sizes());
  OpCall c(OpId::MaxPool2dBackward);
  c.in.push_back(grad.contiguous());
  c.in.push_back(indices.contiguous());
  c.out.push_back(empty_impl(input_sizes, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  return run1(c);
}

Tensor avg_pool2d_op(const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                     int64_t divisor_override) {
  const char* op = "avg_pool2d";
  check_pool(op, x, p, false);
  KILN_CHECK(is_floating_point(x.dtype()), "[", op, "] expected a floating point input, got ",
             dtype_name(x.dtype()));
  KILN_CHECK(divisor_override >= 0, "[", op, "] divisor must be not zero");
  Pool2dParams q = p;
  q.dilation = {1, 1};
  OpCall c(OpId::AvgPool2d);
  c.in.push_back(x.contiguous());
  set_pool_attrs(c, q, false);
  c.attrs.flag = count_include_pad;
  c.attrs.i0 = divisor_override;
  c.out.push_back(empty_impl(pool_shape(op, x, q), x.dtype(), x.device()));
  c.compute = x.dtype();
  return run1(c);
}

Tensor avg_pool2d_backward_op(const Tensor& grad, IntArrayRef input_sizes, const Pool2dParams& p,
                              bool count_include_pad, int64_t divisor_override) {
  const char* op = "avg_pool2d_backward";
  KILN_CHECK(input_sizes.size() == 4, "[", op, "] expected 4-D input sizes");
  Pool2dParams q = p;
  q.dilation = {1, 1};
  const DimVector shape = pool_shape(op, empty_impl(input_sizes, grad.dtype(), grad.device()), q);
  KILN_CHECK(grad.sizes() == IntArrayRef(shape), "[", op, "] grad of shape ", grad.sizes(),
             " doesn't match the pooled shape ", IntArrayRef(shape));
  OpCall c(OpId::AvgPool2dBackward);
  c.in.push_back(grad.contiguous());
  set_pool_attrs(c, q, false);
  c.attrs.flag = count_include_pad;
  c.attrs.i0 = divisor_override;
  c.out.push_back(empty_impl(input_sizes, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  return run1(c);
}

namespace {
void check_adaptive(const char* op, const Tensor& x, int64_t oh, int64_t ow) {
  KILN_CHECK(x.defined() && x.dim() == 4, "[", op, "] expected a 4-D input");
  KILN_CHECK(oh >= 0 && ow >= 0, "[", op, "] output size must be non-negative");
  KILN_CHECK(x.numel() == 0 || (x.size(2) > 0 && x.size(3) > 0), "[", op, "] input of shape ",
             x.sizes(), " has an empty spatial dim");
}
}  // namespace

Tensor adaptive_avg_pool2d_op(const Tensor& x, int64_t oh, int64_t ow) {
  const char* op = "adaptive_avg_pool2d";
  check_adaptive(op, x, oh, ow);
  KILN_CHECK(is_floating_point(x.dtype()), "[", op, "] expected a floating point input");
  OpCall c(OpId::AdaptiveAvgPool2d);
  c.in.push_back(x.contiguous());
  c.out.push_back(empty_impl({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device()));
  c.compute = x.dtype();
  return run1(c);
}

Tensor adaptive_avg_pool2d_backward_op(const Tensor& grad, IntArrayRef input_sizes) {
  const char* op = "adaptive_avg_pool2d_backward";
  KILN_CHECK(grad.defined() && grad.dim() == 4 && input_sizes.size() == 4 &&
                 input_sizes[0] == grad.size(0) && input_sizes[1] == grad.size(1),
             "[", op, "] grad ", grad.defined() ? grad.sizes() : IntArrayRef(),
             " doesn't match input sizes ", input_sizes);
  OpCall c(OpId::AdaptiveAvgPool2dBackward);
  c.in.push_back(grad.contiguous());
  c.out.push_back(empty_impl(input_sizes, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  return run1(c);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_op(const Tensor& x, int64_t oh, int64_t ow) {
  const char* op = "adaptive_max_pool2d";
  check_adaptive(op, x, oh, ow);
  KILN_CHECK(is_floating_point(x.dtype()), "[", op, "] expected a floating point input");
  OpCall c(OpId::AdaptiveMaxPool2d);
  c.in.push_back(x.contiguous());
  c.out.push_back(empty_impl({x.size(0), x.size(1), oh, ow}, x.dtype(), x.device()));
  c.out.push_back(empty_impl({x.size(0), x.size(1), oh, ow}, DType::Int64, x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

// ---------------------------------------------------------------- im2col / col2im

namespace {
void set_im2col_attrs(OpCall& c, const Im2ColParams& p, const char* op) {
  for (auto* a : {&p.kernel, &p.dilation, &p.padding, &p.stride})
    for (int i = 0; i < 2; ++i) c.attrs.ints.push_back((*a)[i]);
  for (int i = 0; i < 2; ++i)
    KILN_CHECK(p.kernel[i] > 0 && p.dilation[i] > 0 && p.stride[i] > 0 && p.padding[i] >= 0, "[",
               op, "] kernel_size, dilation and stride must be positive, padding non-negative");
}
int64_t blocks(const char* op, int64_t in, int64_t k, int64_t d, int64_t pad, int64_t s) {
  const int64_t span = d * (k - 1) + 1;
  KILN_CHECK(in + 2 * pad >= span, "[", op, "] kernel (", span,
             " after dilation) is larger than the padded input (", in + 2 * pad, ")");
  return (in + 2 * pad - span) / s + 1;
}
}  // namespace

Tensor im2col_op(const Tensor& x, const Im2ColParams& p) {
  const char* op = "im2col";
  KILN_CHECK(x.defined() && x.dim() == 4, "[", op, "] expected a 4-D input");
  KILN_CHECK(is_floating_point(x.dtype()), "[", op, "] expected a floating point input");
  if (reduced(x.dtype())) return im2col_op(x.to(kFloat32), p).to(x.dtype());
  OpCall c(OpId::Im2Col);
  set_im2col_attrs(c, p, op);
  const int64_t l = blocks(op, x.size(2), p.kernel[0], p.dilation[0], p.padding[0], p.stride[0]) *
                    blocks(op, x.size(3), p.kernel[1], p.dilation[1], p.padding[1], p.stride[1]);
  c.in.push_back(x.contiguous());
  c.out.push_back(
      empty_impl({x.size(0), x.size(1) * p.kernel[0] * p.kernel[1], l}, x.dtype(), x.device()));
  c.compute = x.dtype();
  return run1(c);
}

Tensor col2im_op(const Tensor& cols, int64_t out_h, int64_t out_w, const Im2ColParams& p) {
  const char* op = "col2im";
  KILN_CHECK(cols.defined() && cols.dim() == 3, "[", op, "] expected a 3-D input [N, C*k, L]");
  KILN_CHECK(is_floating_point(cols.dtype()), "[", op, "] expected a floating point input");
  if (reduced(cols.dtype())) return col2im_op(cols.to(kFloat32), out_h, out_w, p).to(cols.dtype());
  OpCall c(OpId::Col2Im);
  set_im2col_attrs(c, p, op);
  const int64_t kk = p.kernel[0] * p.kernel[1];
  KILN_CHECK(cols.size(1) % kk == 0, "[", op, "] expected size(1) = ", cols.size(1),
             " to be divisible by the kernel size product ", kk);
  const int64_t l = blocks(op, out_h, p.kernel[0], p.dilation[0], p.padding[0], p.stride[0]) *
                    blocks(op, out_w, p.kernel[1], p.dilation[1], p.padding[1], p.stride[1]);
  KILN_CHECK(cols.size(2) == l, "[", op, "] expected ", l, " blocks for output size [", out_h, ", ",
             out_w, "], but got ", cols.size(2));
  c.in.push_back(cols.contiguous());
  c.out.push_back(
      empty_impl({cols.size(0), cols.size(1) / kk, out_h, out_w}, cols.dtype(), cols.device()));
  c.compute = cols.dtype();
  return run1(c);
}

}  // namespace kiln::detail
