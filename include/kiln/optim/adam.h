// The Adam family of torch.optim: Adam, AdamW (decoupled weight decay), Adamax, NAdam, RAdam.
// Updates follow PyTorch's single-tensor implementations; each class comment gives the formula.
#pragma once

#include "kiln/optim/optimizer.h"
#include "kiln/optim/options_macros.h"

namespace kiln::optim {

struct AdamOptions : OptimizerOptions {
  explicit AdamOptions(double lr = 1e-3) {
    values_ = {{"lr", lr},      {"beta1", 0.9},      {"beta2", 0.999},
               {"eps", 1e-8},   {"weight_decay", 0}, {"amsgrad", 0},
               {"maximize", 0}, {"fused", 0},        {"master_weights", 0}};
  }
  KILN_OPTIM_OPTION(AdamOptions, lr)
  KILN_OPTIM_BETAS(AdamOptions)
  KILN_OPTIM_OPTION(AdamOptions, eps)
  KILN_OPTIM_OPTION(AdamOptions, weight_decay)
  KILN_OPTIM_OPTION(AdamOptions, amsgrad)   // 0/1
  KILN_OPTIM_OPTION(AdamOptions, maximize)  // 0/1
  // Note [Fused optimizer steps] (kiln/optim/optimizer.h).
  KILN_OPTIM_OPTION(AdamOptions, fused)           // 0/1
  KILN_OPTIM_OPTION(AdamOptions, master_weights)  // 0/1
};

// AdamW's options: Adam's with weight_decay 1e-2 by default.
struct AdamWOptions : OptimizerOptions {
  explicit AdamWOptions(double lr = 1e-3) {
    values_ = {{"lr", lr},      {"beta1", 0.9},         {"beta2", 0.999},
               {"eps", 1e-8},   {"weight_decay", 1e-2}, {"amsgrad", 0},
               {"maximize", 0}, {"fused", 0},           {"master_weights", 0}};
  }
  KILN_OPTIM_OPTION(AdamWOptions, lr)
  KILN_OPTIM_BETAS(AdamWOptions)
  KILN_OPTIM_OPTION(AdamWOptions, eps)
  KILN_OPTIM_OPTION(AdamWOptions, weight_decay)
  KILN_OPTIM_OPTION(AdamWOptions, amsgrad)
  KILN_OPTIM_OPTION(AdamWOptions, maximize)
  KILN_OPTIM_OPTION(AdamWOptions, fused)           // 0/1
  KILN_OPTIM_OPTION(AdamWOptions, master_weights)  // 0/1
};

// t += 1; g (+= wd * p for Adam; p *= 1 - lr * wd for AdamW); m = lerp(m, g, 1 - b1);
// v = b2 * v + (1 - b2) g^2; (amsgrad: vmax = max(vmax, v), used instead of v);
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// fused / master_weights: Note [Fused optimizer steps] in kiln/optim/optimizer.h.
class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults = AdamOptions());
  Adam(std::vector<Tensor> params, AdamOptions defaults = AdamOptions())
      : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}
  bool supports_grad_scale() const override;

 protected:
  Adam(std::vector<ParamGroup> groups, OptimizerOptions defaults, std::string name, bool decoupled);
  void step_group(ParamGroup& group) override;
  bool decoupled_ = false;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = AdamWOptions());
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = AdamWOptions())
      : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}
};

struct AdamaxOptions : OptimizerOptions {
  explicit AdamaxOptions(double lr = 2e-3) {
    values_ = {{"lr", lr},    {"beta1", 0.9},      {"beta2", 0.999},
               {"eps", 1e-8}, {"weight_decay", 0}, {"maximize", 0}};
  }
  KILN_OPTIM_OPTION(AdamaxOptions, lr)
  KILN_OPTIM_BETAS(AdamaxOptions)
  KILN_OPTIM_OPTION(AdamaxOptions, eps)
  KILN_OPTIM_OPTION(AdamaxOptions, weight_decay)
  KILN_OPTIM_OPTION(AdamaxOptions, maximize)
};

// t += 1; g += wd * p; m = lerp(m, g, 1 - b1); u = max(b2 * u, |g| + eps);
// p -= lr / (1 - b1^t) * m / u.
class Adamax : public Optimizer {
 public:
  Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults = AdamaxOptions());
  Adamax(std::vector<Tensor> params, AdamaxOptions defaults = AdamaxOptions())
      : Adamax(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void step_group(ParamGroup& group) override;
};

struct NAdamOptions : OptimizerOptions {
  explicit NAdamOptions(double lr = 2e-3) {
    values_ = {{"lr", lr},
               {"beta1", 0.9},
               {"beta2", 0.999},
               {"eps", 1e-8},
               {"weight_decay", 0},
               {"momentum_decay", 4e-3},
               {"decoupled_weight_decay", 0},
               {"maximize", 0}};
  }
  KILN_OPTIM_OPTION(NAdamOptions, lr)
  KILN_OPTIM_BETAS(NAdamOptions)
  KILN_OPTIM_OPTION(NAdamOptions, eps)
  KILN_OPTIM_OPTION(NAdamOptions, weight_decay)
  KILN_OPTIM_OPTION(NAdamOptions, momentum_decay)
  KILN_OPTIM_OPTION(NAdamOptions, decoupled_weight_decay)  // 0/1
  KILN_OPTIM_OPTION(NAdamOptions, maximize)
};

// t += 1; mu_t = b1 (1 - 0.5 * 0.96^(t psi)), mu_{t+1} likewise, prod *= mu_t (psi =
// momentum_decay); m, v as Adam; d = sqrt(v / (1 - b2^t)) + eps;
// p -= lr (1 - mu_t) / (1 - prod) * g / d + lr mu_{t+1} / (1 - prod mu_{t+1}) * m / d.
class NAdam : public Optimizer {
 public:
  NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults = NAdamOptions());
  NAdam(std::vector<Tensor> params, NAdamOptions defaults = NAdamOptions())
      : NAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void step_group(ParamGroup& group) override;
};

struct RAdamOptions : OptimizerOptions {
  explicit RAdamOptions(double lr = 1e-3) {
    values_ = {{"lr", lr},     {"beta1", 0.9},      {"beta2", 0.999},
               {"eps", 1e-8},  {"weight_decay", 0}, {"decoupled_weight_decay", 0},
               {"maximize", 0}};
  }
  KILN_OPTIM_OPTION(RAdamOptions, lr)
  KILN_OPTIM_BETAS(RAdamOptions)
  KILN_OPTIM_OPTION(RAdamOptions, eps)
  KILN_OPTIM_OPTION(RAdamOptions, weight_decay)
  KILN_OPTIM_OPTION(RAdamOptions, decoupled_weight_decay)  // 0/1
  KILN_OPTIM_OPTION(RAdamOptions, maximize)
};

// t += 1; m, v as Adam; rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 t b2^t / (1 - b2^t);
// mhat = m / (1 - b1^t); if rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf /
// ((rho_inf - 4)(rho_inf - 2) rho_t)), p -= lr * mhat * r * sqrt(1 - b2^t) / (sqrt(v) + eps);
// else p -= lr * mhat.
class RAdam : public Optimizer {
 public:
  RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults = RAdamOptions());
  RAdam(std::vector<Tensor> params, RAdamOptions defaults = RAdamOptions())
      : RAdam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}

 protected:
  void step_group(ParamGroup& group) override;
};

}  // namespace kiln::optim
