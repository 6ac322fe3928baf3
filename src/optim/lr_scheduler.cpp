// Learning-rate schedulers: PyTorch's recurrences (get_lr) and closed forms.
#include "kiln/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kiln::optim {

namespace {
constexpr double kPi = std::numbers::pi;
}

// ---------------------------------------------------------------- base

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch)
    : optimizer_(optimizer), last_epoch_(last_epoch) {
  for (auto& g : optimizer_.param_groups()) {
    if (last_epoch == -1) {
      if (!g.options.has("initial_lr")) g.options.set("initial_lr", g.lr());
    } else {
      KILN_CHECK(g.options.has("initial_lr"),
                 "[LRScheduler] param 'initial_lr' is not specified in a param group when "
                 "resuming (last_epoch = ",
                 last_epoch, ")");
    }
    base_lrs_.push_back(g.options.get("initial_lr"));
  }
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> v;
  for (auto& g : optimizer_.param_groups()) v.push_back(g.lr());
  return v;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  KILN_ASSERT(lrs.size() == groups.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(lrs[i]);
  last_lr_ = lrs;
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  auto closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

LRSchedulerState LRScheduler::state_dict() const {
  LRSchedulerState st;
  st.last_epoch = last_epoch_;
  st.step_count = step_count_;
  st.base_lrs = base_lrs_;
  st.last_lr = last_lr_;
  return st;
}

void LRScheduler::load_state_dict(const LRSchedulerState& st) {
  KILN_CHECK(st.base_lrs.size() == base_lrs_.size(), "[LRScheduler.load_state_dict] the state has ",
             st.base_lrs.size(), " base lrs, the optimizer ", base_lrs_.size(), " groups");
  last_epoch_ = st.last_epoch;
  step_count_ = st.step_count;
  base_lrs_ = st.base_lrs;
  last_lr_ = st.last_lr;
}

// ---------------------------------------------------------------- StepLR

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size > 0, "[StepLR] step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (auto& v : lrs) v *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  std::vector<double> v;
  for (double b : base_lrs_)
    v.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
  return v;
}

// ---------------------------------------------------------------- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma,
                         int64_t last_epoch)
    : LRScheduler(opt, last_epoch), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  auto lrs = group_lrs();
  auto n = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (n == 0) return lrs;
  for (auto& v : lrs) v *= std::pow(gamma_, static_cast<double>(n));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  auto k =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> v;
  for (double b : base_lrs_) v.push_back(b * std::pow(gamma_, static_cast<double>(k)));
  return v;
}

// ---------------------------------------------------------------- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (auto& v : lrs) v *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  std::vector<double> v;
  for (double b : base_lrs_) v.push_back(b * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return v;
}

// ---------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min,
                                     int64_t last_epoch)
    : LRScheduler(opt, last_epoch), t_max_(T_max), eta_min_(eta_min) {
  KILN_CHECK(T_max > 0, "[CosineAnnealingLR] T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  auto lrs = group_lrs();
  const double T = static_cast<double>(t_max_), e = static_cast<double>(last_epoch_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) return *closed_form_lr();
  for (size_t i = 0; i < lrs.size(); ++i) {
    if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    } else {
      lrs[i] =
          (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T)) * (lrs[i] - eta_min_) +
          eta_min_;
    }
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> v;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(t_max_);
  for (double b : base_lrs_)
    v.push_back(eta_min_ + (b - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return v;
}

// ---------------------------------------------------------------- LinearLR

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters,
                   int64_t last_epoch)
    : LRScheduler(opt, last_epoch),
      start_(start_factor),
      end_(end_factor),
      total_iters_(total_iters) {
  KILN_CHECK(start_factor > 0 && start_factor <= 1,
             "[LinearLR] starting multiplicative factor expected to be greater than 0 and less "
             "or equal to 1, got ",
             start_factor);
  KILN_CHECK(end_factor >= 0 && end_factor <= 1,
             "[LinearLR] ending multiplicative factor expected to be between 0 and 1, got ",
             end_factor);
  KILN_CHECK(total_iters > 0, "[LinearLR] total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& v : lrs) v *= start_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double f = 1 + (end_ - start_) / (static_cast<double>(total_iters_) * start_ +
                                          static_cast<double>(last_epoch_ - 1) * (end_ - start_));
  for (auto& v : lrs) v *= f;
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  std::vector<double> v;
  const double k = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double b : base_lrs_)
    v.push_back(b * (start_ + (end_ - start_) * k / static_cast<double>(total_iters_)));
  return v;
}

// ---------------------------------------------------------------- LambdaLR

LambdaLR::LambdaLR(Optimizer& opt, Lambda lambda, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), lambdas_(opt.param_groups().size(), std::move(lambda)) {
  initial_step();
}

LambdaLR::LambdaLR(Optimizer& opt, std::vector<Lambda> lambdas, int64_t last_epoch)
    : LRScheduler(opt, last_epoch), lambdas_(std::move(lambdas)) {
  KILN_CHECK(lambdas_.size() == opt.param_groups().size(), "[LambdaLR] expected ",
             opt.param_groups().size(), " lr_lambdas, but got ", lambdas_.size());
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> v;
  for (size_t i = 0; i < base_lrs_.size(); ++i)
    v.push_back(base_lrs_[i] * lambdas_[i](last_epoch_));
  return v;
}

// ---------------------------------------------------------------- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleLROptions options,
                       int64_t last_epoch)
    : LRScheduler(opt, last_epoch), o_(options) {
  if (o_.total_steps > 0) {
    total_steps_ = o_.total_steps;
  } else {
    KILN_CHECK(o_.epochs > 0 && o_.steps_per_epoch > 0,
               "[OneCycleLR] you must define either total_steps OR (epochs AND steps_per_epoch)");
    total_steps_ = o_.epochs * o_.steps_per_epoch;
  }
  KILN_CHECK(o_.pct_start >= 0 && o_.pct_start <= 1,
             "[OneCycleLR] expected float between 0 and 1 pct_start, but got ", o_.pct_start);
  const double T = static_cast<double>(total_steps_);
  if (o_.three_phase) {
    phases_ = {{o_.pct_start * T - 1, 0, 1, true, false},
               {2 * o_.pct_start * T - 2, 1, 0, false, true},
               {T - 1, 0, 2, true, true}};
  } else {
    phases_ = {{o_.pct_start * T - 1, 0, 1, true, false}, {T - 1, 1, 2, false, true}};
  }
  auto& groups = opt.param_groups();
  if (max_lrs.size() == 1) max_lrs.assign(groups.size(), max_lrs[0]);
  KILN_CHECK(max_lrs.size() == groups.size(), "[OneCycleLR] expected ", groups.size(),
             " max_lr values, got ", max_lrs.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const double initial = max_lrs[i] / o_.div_factor;
    lrs_.push_back({initial, max_lrs[i], initial / o_.final_div_factor});
    if (last_epoch == -1) {
      groups[i].options.set("initial_lr", initial);
      base_lrs_[i] = initial;
    }
  }
  if (o_.cycle_momentum) {
    use_beta1_ = opt.defaults().has("beta1");
    KILN_CHECK(use_beta1_ || opt.defaults().has("momentum"),
               "[OneCycleLR] optimizer must support momentum or beta1 with `cycle_momentum` "
               "option enabled");
    if (last_epoch == -1)
      for (auto& g : groups) g.options.set(use_beta1_ ? "beta1" : "momentum", o_.max_momentum);
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_cos) return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  KILN_CHECK(last_epoch_ <= total_steps_, "[OneCycleLR] tried to step ", last_epoch_,
             " times. The specified number of total steps is ", total_steps_);
  const double step = static_cast<double>(last_epoch_);
  std::vector<double> out;
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    double start_step = 0, lr = 0, mom = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (step - start_step) / (ph.end_step - start_step);
        lr = anneal(lrs_[g][ph.start_lr], lrs_[g][ph.end_lr], pct);
        mom = anneal(ph.start_m_max ? o_.max_momentum : o_.base_momentum,
                     ph.end_m_max ? o_.max_momentum : o_.base_momentum, pct);
        break;
      }
      start_step = ph.end_step;
    }
    out.push_back(lr);
    if (o_.cycle_momentum) groups[g].options.set(use_beta1_ ? "beta1" : "momentum", mom);
  }
  return out;
}

// ---------------------------------------------------------------- SequentialLR

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones, int64_t last_epoch)
    : LRScheduler(opt, last_epoch),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  KILN_CHECK(!schedulers_.empty(), "[SequentialLR] expects at least one scheduler");
  KILN_CHECK(milestones_.size() + 1 == schedulers_.size(),
             "[SequentialLR] expects number of schedulers provided to be one more than the "
             "number of milestone points, but got ",
             schedulers_.size(), " schedulers and ", milestones_.size(), " milestones");
  for (auto& s : schedulers_)
    KILN_CHECK(s && &s->optimizer() == &opt,
               "[SequentialLR] expects all schedulers to belong to the same optimizer");
  last_epoch_ = last_epoch + 1;
  // Undo the schedulers' initial steps and restart from the first one.
  auto& groups = opt.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) groups[i].set_lr(base_lrs_[i]);
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  auto idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  auto& s = schedulers_[static_cast<size_t>(idx)];
  if (idx > 0 && milestones_[static_cast<size_t>(idx - 1)] == last_epoch_)
    s->step(0);
  else
    s->step();
  last_lr_ = s->get_last_lr();
}

LRSchedulerState SequentialLR::state_dict() const {
  LRSchedulerState st = LRScheduler::state_dict();
  for (auto& s : schedulers_) st.children.push_back(s->state_dict());
  return st;
}

void SequentialLR::load_state_dict(const LRSchedulerState& st) {
  KILN_CHECK(st.children.size() == schedulers_.size(),
             "[SequentialLR.load_state_dict] the state "
             "has ",
             st.children.size(), " schedulers, this SequentialLR ", schedulers_.size());
  LRScheduler::load_state_dict(st);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(st.children[i]);
}

// ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, ReduceLROnPlateauOptions options)
    : optimizer_(opt), o_(std::move(options)) {
  KILN_CHECK(o_.factor < 1.0, "[ReduceLROnPlateau] factor should be < 1.0, got ", o_.factor);
  const size_t n = opt.param_groups().size();
  if (o_.min_lrs.size() == 1) o_.min_lrs.assign(n, o_.min_lrs[0]);
  KILN_CHECK(o_.min_lrs.size() == n, "[ReduceLROnPlateau] expected ", n, " min_lrs, got ",
             o_.min_lrs.size());
  best_ = o_.mode_max ? -INFINITY : INFINITY;
  for (auto& g : opt.param_groups()) last_lr_.push_back(g.lr());
}

bool ReduceLROnPlateau::is_better(double a) const {
  if (!o_.mode_max) {
    return o_.threshold_rel ? a < best_ * (1 - o_.threshold) : a < best_ - o_.threshold;
  }
  return o_.threshold_rel ? a > best_ * (o_.threshold + 1) : a > best_ + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > o_.patience) {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr();
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lrs[i]);
      if (old_lr - new_lr > o_.eps) groups[i].set_lr(new_lr);
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (auto& g : optimizer_.param_groups()) last_lr_.push_back(g.lr());
}

}  // namespace kiln::optim
