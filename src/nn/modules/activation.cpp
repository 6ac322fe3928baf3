// Activation and dropout modules: forwards and printing.
#include "kiln/nn/modules/activation.h"

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/ops/factories.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;
using repr::py_float;

Tensor SELUImpl::forward(const Tensor& x) { return F::selu(x); }
Tensor SiLUImpl::forward(const Tensor& x) { return F::silu(x); }
Tensor MishImpl::forward(const Tensor& x) { return F::mish(x); }
Tensor HardsigmoidImpl::forward(const Tensor& x) { return F::hardsigmoid(x); }
Tensor HardswishImpl::forward(const Tensor& x) { return F::hardswish(x); }
Tensor SigmoidImpl::forward(const Tensor& x) { return F::sigmoid(x); }
Tensor TanhImpl::forward(const Tensor& x) { return F::tanh(x); }
Tensor SoftsignImpl::forward(const Tensor& x) { return F::softsign(x); }
Tensor LogSigmoidImpl::forward(const Tensor& x) { return F::logsigmoid(x); }
Tensor TanhshrinkImpl::forward(const Tensor& x) { return F::tanhshrink(x); }

Tensor ReLUImpl::forward(const Tensor& x) { return F::relu(x, inplace); }
Tensor ReLU6Impl::forward(const Tensor& x) { return F::relu6(x, inplace); }

Tensor LeakyReLUImpl::forward(const Tensor& x) { return F::leaky_relu(x, negative_slope, inplace); }
std::string LeakyReLUImpl::extra_repr() const {
  return "negative_slope=" + py_float(negative_slope) + (inplace ? ", inplace=True" : "");
}

Tensor ELUImpl::forward(const Tensor& x) { return F::elu(x, alpha, inplace); }
std::string ELUImpl::extra_repr() const {
  return "alpha=" + py_float(alpha) + (inplace ? ", inplace=True" : "");
}

Tensor CELUImpl::forward(const Tensor& x) { return F::celu(x, alpha, inplace); }
std::string CELUImpl::extra_repr() const {
  return "alpha=" + py_float(alpha) + (inplace ? ", inplace=True" : "");
}

Tensor GELUImpl::forward(const Tensor& x) { return F::gelu(x, approximate); }

Tensor HardtanhImpl::forward(const Tensor& x) { return F::hardtanh(x, min_val, max_val, inplace); }
std::string HardtanhImpl::extra_repr() const {
  return "min_val=" + py_float(min_val) + ", max_val=" + py_float(max_val) +
         (inplace ? ", inplace=True" : "");
}

Tensor SoftplusImpl::forward(const Tensor& x) { return F::softplus(x, beta, threshold); }
std::string SoftplusImpl::extra_repr() const {
  return "beta=" + py_float(beta) + ", threshold=" + py_float(threshold);
}

Tensor SoftshrinkImpl::forward(const Tensor& x) { return F::softshrink(x, lambd); }
std::string SoftshrinkImpl::extra_repr() const { return py_float(lambd); }

Tensor HardshrinkImpl::forward(const Tensor& x) { return F::hardshrink(x, lambd); }
std::string HardshrinkImpl::extra_repr() const { return py_float(lambd); }

Tensor ThresholdImpl::forward(const Tensor& x) {
  return F::threshold(x, threshold, value, inplace);
}
std::string ThresholdImpl::extra_repr() const {
  return "threshold=" + py_float(threshold) + ", value=" + py_float(value) +
         (inplace ? ", inplace=True" : "");
}

Tensor GLUImpl::forward(const Tensor& x) { return F::glu(x, dim); }

Tensor SoftmaxImpl::forward(const Tensor& x) {
  KILN_CHECK(dim, "[Softmax] dim must be given");
  return F::softmax(x, *dim);
}
Tensor LogSoftmaxImpl::forward(const Tensor& x) {
  KILN_CHECK(dim, "[LogSoftmax] dim must be given");
  return F::log_softmax(x, *dim);
}
Tensor SoftminImpl::forward(const Tensor& x) {
  KILN_CHECK(dim, "[Softmin] dim must be given");
  return F::softmin(x, *dim);
}

PReLUImpl::PReLUImpl(int64_t n, double init)
    : Module("PReLU"), num_parameters(n), init_value(init) {
  KILN_CHECK(n >= 1, "[PReLU] num_parameters must be positive, got ", n);
  weight = register_parameter("weight", kiln::empty({n}));
  reset_parameters();
}
void PReLUImpl::reset_parameters() { init::constant_(weight, init_value); }
Tensor PReLUImpl::forward(const Tensor& x) {
  Tensor w = weight;
  if (num_parameters > 1) {
    KILN_CHECK(x.dim() >= 2 && x.size(1) == num_parameters, "[PReLU] expected input with ",
               num_parameters, " channels in dim 1");
    std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
    shape[1] = num_parameters;
    w = w.view(shape);
  }
  return x.where(x.ge(0), x.mul(w));
}
std::string PReLUImpl::extra_repr() const {
  return "num_parameters=" + std::to_string(num_parameters);
}

// ---- dropout ----

#define KILN_DROPOUT_DEFS(Name, fn)                                                           \
  Name##Impl::Name##Impl(double p, bool inplace) : Module(#Name), p(p), inplace(inplace) {    \
    KILN_CHECK(p >= 0 && p <= 1,                                                              \
               "[" #Name                                                                      \
               "] dropout probability has to be between 0 and 1, "                            \
               "but got ",                                                                    \
               p);                                                                            \
  }                                                                                           \
  Tensor Name##Impl::forward(const Tensor& x) { return F::fn(x, p, is_training(), inplace); } \
  std::string Name##Impl::extra_repr() const {                                                \
    return "p=" + py_float(p) + ", inplace=" + repr::py_bool(inplace);                        \
  }

KILN_DROPOUT_DEFS(Dropout, dropout)
KILN_DROPOUT_DEFS(Dropout1d, dropout1d)
KILN_DROPOUT_DEFS(Dropout2d, dropout2d)
KILN_DROPOUT_DEFS(Dropout3d, dropout3d)
KILN_DROPOUT_DEFS(AlphaDropout, alpha_dropout)
#undef KILN_DROPOUT_DEFS

}  // namespace kiln::nn
