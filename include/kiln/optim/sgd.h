// kiln::optim::SGD (torch.optim.SGD): momentum, dampening, Nesterov, weight decay, maximize.
#pragma once

#include "kiln/optim/optimizer.h"
#include "kiln/optim/options_macros.h"

namespace kiln::optim {

struct SGDOptions : OptimizerOptions {
  explicit SGDOptions(double lr = 1e-3) {
    values_ = {{"lr", lr},      {"momentum", 0}, {"dampening", 0}, {"weight_decay", 0},
               {"nesterov", 0}, {"maximize", 0}, {"fused", 0},     {"master_weights", 0}};
  }
  KILN_OPTIM_OPTION(SGDOptions, lr)
  KILN_OPTIM_OPTION(SGDOptions, momentum)
  KILN_OPTIM_OPTION(SGDOptions, dampening)
  KILN_OPTIM_OPTION(SGDOptions, weight_decay)
  KILN_OPTIM_OPTION(SGDOptions, nesterov)  // 0/1
  KILN_OPTIM_OPTION(SGDOptions, maximize)  // 0/1
  // Note [Fused optimizer steps] (kiln/optim/optimizer.h).
  KILN_OPTIM_OPTION(SGDOptions, fused)           // 0/1
  KILN_OPTIM_OPTION(SGDOptions, master_weights)  // 0/1
};

// g = grad (+ weight_decay * p); with momentum: buf = momentum * buf + (1 - dampening) * g
// (buf = g on the first step), g = nesterov ? g + momentum * buf : buf; p -= lr * g.
// Nesterov needs momentum > 0 and dampening == 0. fused / master_weights: Note [Fused optimizer
// steps] in kiln/optim/optimizer.h.
class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults = SGDOptions());
  SGD(std::vector<Tensor> params, SGDOptions defaults = SGDOptions())
      : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults)) {}
  bool supports_grad_scale() const override;

 protected:
  void step_group(ParamGroup& group) override;
};

}  // namespace kiln::optim
