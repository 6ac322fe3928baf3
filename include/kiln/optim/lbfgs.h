// kiln::optim::LBFGS (torch.optim.LBFGS): limited-memory BFGS over all parameters as one vector,
// driven by a closure that recomputes the loss and gradients; optional strong-Wolfe line search.
#pragma once

#include "kiln/optim/optimizer.h"
#include "kiln/optim/options_macros.h"

namespace kiln::optim {

struct LBFGSOptions : OptimizerOptions {
  // max_eval defaults to max_iter * 5 / 4 (set when max_iter is set and max_eval is not).
  explicit LBFGSOptions(double lr = 1) {
    values_ = {{"lr", lr},
               {"max_iter", 20},
               {"max_eval", 25},
               {"tolerance_grad", 1e-7},
               {"tolerance_change", 1e-9},
               {"history_size", 100},
               {"strong_wolfe", 0}};
  }
  KILN_OPTIM_OPTION(LBFGSOptions, lr)
  LBFGSOptions& max_iter(double v) {
    set("max_iter", v);
    if (!max_eval_set_) set("max_eval", static_cast<double>(static_cast<int64_t>(v * 5 / 4)));
    return *this;
  }
  double max_iter() const { return get("max_iter"); }
  LBFGSOptions& max_eval(double v) {
    max_eval_set_ = true;
    set("max_eval", v);
    return *this;
  }
  double max_eval() const { return get("max_eval"); }
  KILN_OPTIM_OPTION(LBFGSOptions, tolerance_grad)
  KILN_OPTIM_OPTION(LBFGSOptions, tolerance_change)
  KILN_OPTIM_OPTION(LBFGSOptions, history_size)
  // 0: fixed step lr (PyTorch's line_search_fn=None); 1: "strong_wolfe".
  KILN_OPTIM_OPTION(LBFGSOptions, strong_wolfe)

 private:
  bool max_eval_set_ = false;
};

// One parameter group only (as PyTorch). step(closure) requires the closure, which must zero the
// gradients, compute the loss, call backward and return the loss.
// Differs from PyTorch: the curvature history lives in the LBFGS object and is not part of
// state_dict() (only the options are saved and restored).
class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = LBFGSOptions());
  Tensor step(const Closure& closure = nullptr) override;

 protected:
  void step_group(ParamGroup&) override {}

 private:
  Tensor gather_flat_grad();
  void add_grad(double step_size, const Tensor& direction);
  std::vector<Tensor> clone_params();
  void set_params(const std::vector<Tensor>& values);
  double directional_evaluate(const Closure& closure, const std::vector<Tensor>& x, double t,
                              const Tensor& d, Tensor& flat_grad);
  int64_t numel_ = -1;
  // Algorithm state (kept between steps, as PyTorch's state of the first parameter).
  Tensor d_, t_prev_flat_grad_, h_diag_;
  double t_ = 0, prev_loss_ = 0;
  int64_t n_iter_ = 0, func_evals_ = 0;
  std::vector<Tensor> old_dirs_, old_stps_;
  std::vector<double> ro_;
};

}  // namespace kiln::optim
