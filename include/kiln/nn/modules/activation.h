// Activation modules (torch.nn): thin wrappers around kiln::nn::functional, printing like
// PyTorch. Softmax/LogSoftmax/Softmin take the dim; PReLU learns its slopes.
#pragma once

#include <optional>
#include <string>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Modules without options.
#define KILN_ACTIVATION_MODULE(Name) \
  class Name##Impl : public Module { \
   public:                           \
    Name##Impl() : Module(#Name) {}  \
    Tensor forward(const Tensor& x); \
  };                                 \
  KILN_MODULE(Name)

KILN_ACTIVATION_MODULE(SELU);
KILN_ACTIVATION_MODULE(SiLU);
KILN_ACTIVATION_MODULE(Mish);
KILN_ACTIVATION_MODULE(Hardsigmoid);
KILN_ACTIVATION_MODULE(Hardswish);
KILN_ACTIVATION_MODULE(Sigmoid);
KILN_ACTIVATION_MODULE(Tanh);
KILN_ACTIVATION_MODULE(Softsign);
KILN_ACTIVATION_MODULE(LogSigmoid);
KILN_ACTIVATION_MODULE(Tanhshrink);
#undef KILN_ACTIVATION_MODULE

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(bool inplace = false) : Module("ReLU"), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override { return inplace ? "inplace=True" : ""; }
  bool inplace;
};
KILN_MODULE(ReLU);

class ReLU6Impl : public Module {
 public:
  explicit ReLU6Impl(bool inplace = false) : Module("ReLU6"), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override { return inplace ? "inplace=True" : ""; }
  bool inplace;
};
KILN_MODULE(ReLU6);

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(double negative_slope = 0.01, bool inplace = false)
      : Module("LeakyReLU"), negative_slope(negative_slope), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double negative_slope;
  bool inplace;
};
KILN_MODULE(LeakyReLU);

class ELUImpl : public Module {
 public:
  explicit ELUImpl(double alpha = 1.0, bool inplace = false)
      : Module("ELU"), alpha(alpha), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double alpha;
  bool inplace;
};
KILN_MODULE(ELU);

class CELUImpl : public Module {
 public:
  explicit CELUImpl(double alpha = 1.0, bool inplace = false)
      : Module("CELU"), alpha(alpha), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double alpha;
  bool inplace;
};
KILN_MODULE(CELU);

// approximate: "none" (erf) or "tanh".
class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none")
      : Module("GELU"), approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override { return "approximate='" + approximate + "'"; }
  std::string approximate;
};
KILN_MODULE(GELU);

class HardtanhImpl : public Module {
 public:
  explicit HardtanhImpl(double min_val = -1.0, double max_val = 1.0, bool inplace = false)
      : Module("Hardtanh"), min_val(min_val), max_val(max_val), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double min_val, max_val;
  bool inplace;
};
KILN_MODULE(Hardtanh);

class SoftplusImpl : public Module {
 public:
  explicit SoftplusImpl(double beta = 1.0, double threshold = 20.0)
      : Module("Softplus"), beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double beta, threshold;
};
KILN_MODULE(Softplus);

class SoftshrinkImpl : public Module {
 public:
  explicit SoftshrinkImpl(double lambd = 0.5) : Module("Softshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double lambd;
};
KILN_MODULE(Softshrink);

class HardshrinkImpl : public Module {
 public:
  explicit HardshrinkImpl(double lambd = 0.5) : Module("Hardshrink"), lambd(lambd) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double lambd;
};
KILN_MODULE(Hardshrink);

class ThresholdImpl : public Module {
 public:
  ThresholdImpl(double threshold, double value, bool inplace = false)
      : Module("Threshold"), threshold(threshold), value(value), inplace(inplace) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double threshold, value;
  bool inplace;
};
KILN_MODULE(Threshold);

class GLUImpl : public Module {
 public:
  explicit GLUImpl(int64_t dim = -1) : Module("GLU"), dim(dim) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }
  int64_t dim;
};
KILN_MODULE(GLU);

#define KILN_SOFTMAX_MODULE(Name)                                                               \
  class Name##Impl : public Module {                                                            \
   public:                                                                                      \
    explicit Name##Impl(std::optional<int64_t> dim = std::nullopt) : Module(#Name), dim(dim) {} \
    Tensor forward(const Tensor& x);                                                            \
    std::string extra_repr() const override {                                                   \
      return "dim=" + (dim ? std::to_string(*dim) : std::string("None"));                       \
    }                                                                                           \
    std::optional<int64_t> dim;                                                                 \
  };                                                                                            \
  KILN_MODULE(Name)

// dim must be given (PyTorch's implicit-dim choice is deprecated and not supported).
KILN_SOFTMAX_MODULE(Softmax);
KILN_SOFTMAX_MODULE(LogSoftmax);
KILN_SOFTMAX_MODULE(Softmin);
#undef KILN_SOFTMAX_MODULE

// max(0, x) + a * min(0, x) with one learned slope, or one per channel (dim 1), init `init`.
class PReLUImpl : public Module {
 public:
  explicit PReLUImpl(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t num_parameters;
  double init_value;
  Tensor weight;
};
KILN_MODULE(PReLU);

}  // namespace kiln::nn
