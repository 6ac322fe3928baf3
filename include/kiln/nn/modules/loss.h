// Loss modules (torch.nn.*Loss): hold the options and call kiln::nn::functional. reduction is
// the Reduction enum (None, Mean, Sum) of kiln/nn/functional/loss.h.
#pragma once

#include "kiln/nn/functional/loss.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

using functional::Reduction;

class LossBase : public Module {
 public:
  LossBase(std::string name, Reduction reduction) : Module(std::move(name)), reduction(reduction) {}
  Reduction reduction;
};

#define KILN_SIMPLE_LOSS(Name)                                                                 \
  class Name##Impl : public LossBase {                                                         \
   public:                                                                                     \
    explicit Name##Impl(Reduction reduction = Reduction::Mean) : LossBase(#Name, reduction) {} \
    Tensor forward(const Tensor& input, const Tensor& target);                                 \
  };                                                                                           \
  KILN_MODULE(Name)
KILN_SIMPLE_LOSS(MSELoss);
KILN_SIMPLE_LOSS(L1Loss);
KILN_SIMPLE_LOSS(SoftMarginLoss);
#undef KILN_SIMPLE_LOSS

class CrossEntropyLossImpl : public LossBase {
 public:
  explicit CrossEntropyLossImpl(Tensor weight = {}, int64_t ignore_index = -100,
                                Reduction reduction = Reduction::Mean,
                                double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor weight;  // a buffer when defined
  int64_t ignore_index;
  double label_smoothing;
};
KILN_MODULE(CrossEntropyLoss);

class NLLLossImpl : public LossBase {
 public:
  explicit NLLLossImpl(Tensor weight = {}, int64_t ignore_index = -100,
                       Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor weight;
  int64_t ignore_index;
};
KILN_MODULE(NLLLoss);

class BCELossImpl : public LossBase {
 public:
  explicit BCELossImpl(Tensor weight = {}, Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor weight;
};
KILN_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public LossBase {
 public:
  explicit BCEWithLogitsLossImpl(Tensor weight = {}, Reduction reduction = Reduction::Mean,
                                 Tensor pos_weight = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor weight, pos_weight;
};
KILN_MODULE(BCEWithLogitsLoss);

class SmoothL1LossImpl : public LossBase {
 public:
  explicit SmoothL1LossImpl(Reduction reduction = Reduction::Mean, double beta = 1.0)
      : LossBase("SmoothL1Loss", reduction), beta(beta) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  double beta;
};
KILN_MODULE(SmoothL1Loss);

class HuberLossImpl : public LossBase {
 public:
  explicit HuberLossImpl(Reduction reduction = Reduction::Mean, double delta = 1.0)
      : LossBase("HuberLoss", reduction), delta(delta) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  double delta;
};
KILN_MODULE(HuberLoss);

class KLDivLossImpl : public LossBase {
 public:
  explicit KLDivLossImpl(Reduction reduction = Reduction::Mean, bool log_target = false)
      : LossBase("KLDivLoss", reduction), log_target(log_target) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  bool log_target;
};
KILN_MODULE(KLDivLoss);

class PoissonNLLLossImpl : public LossBase {
 public:
  explicit PoissonNLLLossImpl(bool log_input = true, bool full = false, double eps = 1e-8,
                              Reduction reduction = Reduction::Mean)
      : LossBase("PoissonNLLLoss", reduction), log_input(log_input), full(full), eps(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  bool log_input, full;
  double eps;
};
KILN_MODULE(PoissonNLLLoss);

class GaussianNLLLossImpl : public LossBase {
 public:
  explicit GaussianNLLLossImpl(bool full = false, double eps = 1e-6,
                               Reduction reduction = Reduction::Mean)
      : LossBase("GaussianNLLLoss", reduction), full(full), eps(eps) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var);
  bool full;
  double eps;
};
KILN_MODULE(GaussianNLLLoss);

#define KILN_MARGIN_LOSS(Name, default_margin)                                                 \
  class Name##Impl : public LossBase {                                                         \
   public:                                                                                     \
    explicit Name##Impl(double margin = default_margin, Reduction reduction = Reduction::Mean) \
        : LossBase(#Name, reduction), margin(margin) {}                                        \
    double margin;                                                                             \
    Tensor forward(const Tensor& a, const Tensor& b, const Tensor& target);                    \
  };                                                                                           \
  KILN_MODULE(Name)
KILN_MARGIN_LOSS(CosineEmbeddingLoss, 0.0);
KILN_MARGIN_LOSS(MarginRankingLoss, 0.0);
#undef KILN_MARGIN_LOSS

class HingeEmbeddingLossImpl : public LossBase {
 public:
  explicit HingeEmbeddingLossImpl(double margin = 1.0, Reduction reduction = Reduction::Mean)
      : LossBase("HingeEmbeddingLoss", reduction), margin(margin) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  double margin;
};
KILN_MODULE(HingeEmbeddingLoss);

class TripletMarginLossImpl : public LossBase {
 public:
  explicit TripletMarginLossImpl(double margin = 1.0, double p = 2.0, double eps = 1e-6,
                                 bool swap = false, Reduction reduction = Reduction::Mean)
      : LossBase("TripletMarginLoss", reduction), margin(margin), p(p), eps(eps), swap(swap) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  double margin, p, eps;
  bool swap;
};
KILN_MODULE(TripletMarginLoss);

class MultiLabelSoftMarginLossImpl : public LossBase {
 public:
  explicit MultiLabelSoftMarginLossImpl(Tensor weight = {}, Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor weight;
};
KILN_MODULE(MultiLabelSoftMarginLoss);

}  // namespace kiln::nn
