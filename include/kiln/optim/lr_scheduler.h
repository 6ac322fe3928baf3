// Learning-rate schedulers (torch.optim.lr_scheduler): StepLR, MultiStepLR, ExponentialLR,
// CosineAnnealingLR, LinearLR, LambdaLR, OneCycleLR, SequentialLR, ReduceLROnPlateau.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// Note [Scheduler recurrences]: as PyTorch, step() computes each group's new lr from its current
// lr (the "chainable" form, so several schedulers can act on one optimizer), and step(epoch)
// jumps to the closed form at `epoch` where one exists. Constructing a scheduler sets
// last_epoch to 0 and applies the epoch-0 lr (PyTorch's initial step). The first scheduler on
// an optimizer records each group's lr as "initial_lr" in its options; base_lrs() are those.
// What a scheduler needs to resume (PyTorch's scheduler.state_dict()); SequentialLR keeps its
// schedulers' states in `children`. Restoring it does not touch the optimizer's lrs: restore the
// optimizer's state dict for those, as in PyTorch.
struct LRSchedulerState {
  int64_t last_epoch = -1;
  int64_t step_count = 0;
  std::vector<double> base_lrs, last_lr;
  std::vector<LRSchedulerState> children;
};

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer, int64_t last_epoch = -1);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  virtual void step();
  // Sets last_epoch = epoch and the lrs from the closed form (get_lr() when there is none).
  virtual void step(int64_t epoch);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() { return optimizer_; }
  virtual LRSchedulerState state_dict() const;
  virtual void load_state_dict(const LRSchedulerState& state);

 protected:
  friend class SequentialLR;
  // Runs the initial step; the derived constructor calls it once its fields are set.
  void initial_step();
  // The new lr of every group at last_epoch_, from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  std::vector<double> group_lrs() const;
  void apply(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  int64_t last_epoch_;
  int64_t step_count_ = 0;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

// lr = base * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  int64_t step_size_;
  double gamma_;
};

// lr = base * gamma^(number of milestones <= epoch); a repeated milestone counts each time.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1,
              int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = base * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  double gamma_;
};

// lr = eta_min + (base - eta_min) (1 + cos(pi epoch / T_max)) / 2 for epoch <= T_max (PyTorch's
// recurrence, which keeps oscillating past T_max).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min = 0, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  int64_t t_max_;
  double eta_min_;
};

// lr = base * (start + (end - start) * min(epoch, total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  double start_, end_;
  int64_t total_iters_;
};

// lr = base * lambda(epoch); one function for all groups or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& opt, Lambda lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& opt, std::vector<Lambda> lambdas, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<Lambda> lambdas_;
};

struct OneCycleLROptions {
  int64_t total_steps = 0;  // or epochs * steps_per_epoch
  int64_t epochs = 0, steps_per_epoch = 0;
  double pct_start = 0.3;
  bool anneal_cos = true;  // false: linear annealing
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;
  double div_factor = 25, final_div_factor = 1e4;
  bool three_phase = false;
};

// The 1cycle policy: lr rises from max_lr / div_factor to max_lr over pct_start of the steps,
// then anneals to initial / final_div_factor (three_phase: back to initial first); momentum (or
// Adam's beta1) moves the opposite way when cycle_momentum. One max_lr per group or one for all.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleLROptions options,
             int64_t last_epoch = -1);
  OneCycleLR(Optimizer& opt, double max_lr, OneCycleLROptions options, int64_t last_epoch = -1)
      : OneCycleLR(opt, std::vector<double>{max_lr}, options, last_epoch) {}
  int64_t total_steps() const { return total_steps_; }

 protected:
  std::vector<double> get_lr() override;
  struct Phase {
    double end_step;
    int start_lr, end_lr;  // 0 initial, 1 max, 2 min
    bool start_m_max, end_m_max;
  };
  double anneal(double start, double end, double pct) const;
  OneCycleLROptions o_;
  int64_t total_steps_;
  std::vector<Phase> phases_;
  std::vector<std::array<double, 3>> lrs_;  // initial, max, min per group
  bool use_beta1_ = false;
};

// Runs schedulers one after another: schedulers[i] from milestones[i - 1] on (its epoch restarts
// at 0 there, through its closed form).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones, int64_t last_epoch = -1);
  void step() override;
  LRSchedulerState state_dict() const override;
  void load_state_dict(const LRSchedulerState& state) override;

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

struct ReduceLROnPlateauOptions {
  bool mode_max = false;  // false: "min" (lower metric is better)
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  bool threshold_rel = true;  // false: "abs"
  int64_t cooldown = 0;
  std::vector<double> min_lrs = {0};  // one for all groups or one per group
  double eps = 1e-8;
};

// Multiplies the lr by `factor` after `patience` steps without improvement of the metric,
// then waits `cooldown` steps; lrs never go below min_lr and changes below eps are skipped.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  double best() const { return best_; }
  struct State {
    double best = 0;
    int64_t num_bad_epochs = 0, cooldown_counter = 0, last_epoch = 0;
    std::vector<double> last_lr;
  };
  State state_dict() const {
    return {best_, num_bad_epochs_, cooldown_counter_, last_epoch_, last_lr_};
  }
  void load_state_dict(const State& s) {
    best_ = s.best;
    num_bad_epochs_ = s.num_bad_epochs;
    cooldown_counter_ = s.cooldown_counter;
    last_epoch_ = s.last_epoch;
    last_lr_ = s.last_lr;
  }

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions o_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace kiln::optim
