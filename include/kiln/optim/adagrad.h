// kiln::optim::Adagrad and kiln::optim::RMSprop (torch.optim): adaptive per-element step sizes
// from accumulated squared gradients.
#pragma once

#include "kiln/optim/optimizer.h"
#include "kiln/optim/options_macros.h"

namespace kiln::optim {

struct AdagradOptions : OptimizerOptions {
  explicit AdagradOptions(double lr = 1e-2) {
    values_ = {{"lr", lr},          {"lr_decay", 0},
               {"weight_decay", 0}, {"initial_accumulator_value", 0},
               {"eps", 1e-10},      {"maximize", 0}};
  }
  KILN_OPTIM_OPTION(AdagradOptions, lr)
  KILN_OPTIM_OPTION(AdagradOptions, lr_decay)
  KILN_OPTIM_OPTION(AdagradOptions, weight_decay)
  KILN_OPTIM_OPTION(AdagradOptions, initial_accumulator_value)
  KILN_OPTIM_OPTION(AdagradOptions, eps)
  KILN_OPTIM_OPTION(AdagradOptions, maximize)
};

// t += 1; g += wd * p; clr = lr / (1 + (t - 1) lr_decay); s += g^2 (s starts at
// initial_accumulator_value); p -= clr * g / (sqrt(s) + eps).
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = AdagradOptions());
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = AdagradOptions())
      : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void step_group(ParamGroup& group) override;
};

struct RMSpropOptions : OptimizerOptions {
  explicit RMSpropOptions(double lr = 1e-2) {
    values_ = {{"lr", lr},      {"alpha", 0.99}, {"eps", 1e-8},  {"weight_decay", 0},
               {"momentum", 0}, {"centered", 0}, {"maximize", 0}};
  }
  KILN_OPTIM_OPTION(RMSpropOptions, lr)
  KILN_OPTIM_OPTION(RMSpropOptions, alpha)
  KILN_OPTIM_OPTION(RMSpropOptions, eps)
  KILN_OPTIM_OPTION(RMSpropOptions, weight_decay)
  KILN_OPTIM_OPTION(RMSpropOptions, momentum)
  KILN_OPTIM_OPTION(RMSpropOptions, centered)  // 0/1
  KILN_OPTIM_OPTION(RMSpropOptions, maximize)
};

// g += wd * p; v = alpha v + (1 - alpha) g^2; centered: a = lerp(a, g, 1 - alpha),
// d = sqrt(v - a^2) + eps, else d = sqrt(v) + eps; momentum > 0: b = momentum b + g / d,
// p -= lr b; else p -= lr g / d.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = RMSpropOptions());
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = RMSpropOptions())
      : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void step_group(ParamGroup& group) override;
};

}  // namespace kiln::optim
