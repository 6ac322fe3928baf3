// torch.nn modules that complete the #6 list: Upsample (+ UpsamplingNearest2d/Bilinear2d),
// RReLU, Softmax2d, and the losses CTCLoss, MultiMarginLoss, MultiLabelMarginLoss and
// TripletMarginWithDistanceLoss.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/nn/modules/loss.h"

namespace kiln::nn {

// F::interpolate with fixed options: give size or scale_factor (one value for every spatial dim,
// or one per dim). mode as F::interpolate ("nearest", "linear", "bilinear", "bicubic",
// "trilinear", "nearest-exact").
class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(std::optional<std::vector<int64_t>> size = std::nullopt,
                        std::optional<std::vector<double>> scale_factor = std::nullopt,
                        std::string mode = "nearest",
                        std::optional<bool> align_corners = std::nullopt,
                        std::optional<bool> recompute_scale_factor = std::nullopt);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  std::optional<std::vector<int64_t>> size;
  std::optional<std::vector<double>> scale_factor;
  std::string mode;
  std::optional<bool> align_corners, recompute_scale_factor;
};
KILN_MODULE(Upsample);

// Upsample(mode "nearest") / Upsample(mode "bilinear", align_corners=true) for 4-D input.
class UpsamplingNearest2dImpl : public UpsampleImpl {
 public:
  explicit UpsamplingNearest2dImpl(std::optional<std::vector<int64_t>> size = std::nullopt,
                                   std::optional<std::vector<double>> scale_factor = std::nullopt);
};
KILN_MODULE(UpsamplingNearest2d);
class UpsamplingBilinear2dImpl : public UpsampleImpl {
 public:
  explicit UpsamplingBilinear2dImpl(std::optional<std::vector<int64_t>> size = std::nullopt,
                                    std::optional<std::vector<double>> scale_factor = std::nullopt);
};
KILN_MODULE(UpsamplingBilinear2d);

// Randomized leaky ReLU: in training each negative element gets a slope drawn from
// U(lower, upper) (the default cpu/cuda generator); in eval the slope is (lower + upper) / 2.
class RReLUImpl : public Module {
 public:
  explicit RReLUImpl(double lower = 1.0 / 8, double upper = 1.0 / 3, bool inplace = false);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  double lower, upper;
  bool inplace;
};
KILN_MODULE(RReLU);

// Softmax over the channel dim of [N, C, H, W] or [C, H, W] (dim -3).
class Softmax2dImpl : public Module {
 public:
  Softmax2dImpl() : Module("Softmax2d") {}
  Tensor forward(const Tensor& x);
};
KILN_MODULE(Softmax2d);

// F::ctc_loss with fixed blank / reduction / zero_infinity.
class CTCLossImpl : public LossBase {
 public:
  explicit CTCLossImpl(int64_t blank = 0, Reduction reduction = Reduction::Mean,
                       bool zero_infinity = false)
      : LossBase("CTCLoss", reduction), blank(blank), zero_infinity(zero_infinity) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  int64_t blank;
  bool zero_infinity;
};
KILN_MODULE(CTCLoss);

// Multi-class hinge loss on input [N, C] (or [C]) and class indices target [N] (or []):
// loss_n = sum_{i != y_n} w[y_n] * max(0, margin - x[n, y_n] + x[n, i])^p / C, p = 1 or 2.
class MultiMarginLossImpl : public LossBase {
 public:
  explicit MultiMarginLossImpl(int64_t p = 1, double margin = 1.0, Tensor weight = {},
                               Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  int64_t p;
  double margin;
  Tensor weight;  // a buffer when defined
};
KILN_MODULE(MultiMarginLoss);

// Multi-label hinge loss: target [N, C] (or [C]) holds class indices, ended by the first -1.
// loss_n = sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[n, j] - x[n, i])) / C.
class MultiLabelMarginLossImpl : public LossBase {
 public:
  explicit MultiLabelMarginLossImpl(Reduction reduction = Reduction::Mean)
      : LossBase("MultiLabelMarginLoss", reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target);
};
KILN_MODULE(MultiLabelMarginLoss);

// max(0, margin + d(a, p) - d(a, n)) with a user distance (default F::pairwise_distance);
// swap uses min(d(a, n), d(p, n)) as the negative distance.
class TripletMarginWithDistanceLossImpl : public LossBase {
 public:
  using Distance = std::function<Tensor(const Tensor&, const Tensor&)>;
  explicit TripletMarginWithDistanceLossImpl(Distance distance_function = nullptr,
                                             double margin = 1.0, bool swap = false,
                                             Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  Distance distance_function;
  double margin;
  bool swap;
};
KILN_MODULE(TripletMarginWithDistanceLoss);

}  // namespace kiln::nn
