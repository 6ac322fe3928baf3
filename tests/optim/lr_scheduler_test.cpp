// LR schedulers: stepping (PyTorch's recurrences) against the closed forms / the policy
// definitions computed independently here.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kiln/ops.h"
#include "kiln/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

constexpr double kPi = std::numbers::pi;

struct Fixture {
  Tensor a = kiln::ones({2}).requires_grad_();
  Tensor b = kiln::ones({2}).requires_grad_();
  // Two groups with different base lrs.
  SGD opt{{ParamGroup({a}, SGDOptions(0.1)), ParamGroup({b}, SGDOptions(0.02))},
          SGDOptions(0.1).momentum(0.9)};
  std::vector<double> base() const { return {0.1, 0.02}; }
};

// Runs `epochs` steps; before each step() checks every group's lr against expected(epoch, base).
template <class F>
void check_schedule(Fixture& f, LRScheduler& s, int epochs, F expected, double tol = 1e-12) {
  for (int e = 0; e < epochs; ++e) {
    for (size_t g = 0; g < 2; ++g) {
      double want = expected(e, f.base()[g]);
      ASSERT_NEAR(f.opt.param_groups()[g].lr(), want, tol * std::max(1.0, std::abs(want)))
          << "epoch " << e << " group " << g;
      ASSERT_NEAR(s.get_last_lr()[g], want, tol * std::max(1.0, std::abs(want)));
    }
    EXPECT_EQ(s.last_epoch(), e);
    s.step();
  }
}

}  // namespace

TEST(LRScheduler, StepLR) {
  Fixture f;
  StepLR s(f.opt, 3, 0.5);
  check_schedule(f, s, 12, [](int e, double b) { return b * std::pow(0.5, e / 3); });
}

TEST(LRScheduler, MultiStepLRWithRepeatedMilestone) {
  Fixture f;
  MultiStepLR s(f.opt, {6, 2, 6}, 0.1);
  check_schedule(f, s, 10, [](int e, double b) {
    int k = (e >= 2) + 2 * (e >= 6);
    return b * std::pow(0.1, k);
  });
}

TEST(LRScheduler, ExponentialLR) {
  Fixture f;
  ExponentialLR s(f.opt, 0.9);
  check_schedule(f, s, 20, [](int e, double b) { return b * std::pow(0.9, e); });
}

TEST(LRScheduler, CosineAnnealingLRPastTMax) {
  Fixture f;
  CosineAnnealingLR s(f.opt, 7, 0.001);
  check_schedule(
      f, s, 30,
      [](int e, double b) { return 0.001 + (b - 0.001) * (1 + std::cos(kPi * e / 7)) / 2; }, 1e-10);
}

TEST(LRScheduler, LinearLR) {
  Fixture f;
  LinearLR s(f.opt, 0.25, 0.75, 4);
  check_schedule(f, s, 10, [](int e, double b) { return b * (0.25 + 0.5 * std::min(e, 4) / 4.0); });
  EXPECT_THROW(LinearLR(f.opt, 0.0), Error);
}

TEST(LRScheduler, LambdaLRPerGroup) {
  Fixture f;
  LambdaLR s(f.opt, std::vector<LambdaLR::Lambda>{[](int64_t e) { return 1.0 / (1 + e); },
                                                  [](int64_t e) { return 1.0 / (1 + e); }});
  check_schedule(f, s, 8, [](int e, double b) { return b / (1 + e); });
}

TEST(LRScheduler, StepWithEpochUsesClosedForm) {
  Fixture f;
  StepLR s(f.opt, 2, 0.1);
  s.step(5);
  EXPECT_NEAR(f.opt.param_groups()[0].lr(), 0.1 * 0.01, 1e-15);
  EXPECT_EQ(s.last_epoch(), 5);
}

TEST(LRScheduler, SequentialLRWarmupThenExponential) {
  Fixture f;
  auto warm = std::make_shared<LinearLR>(f.opt, 0.1, 1.0, 4);
  auto decay = std::make_shared<ExponentialLR>(f.opt, 0.9);
  SequentialLR s(f.opt, {warm, decay}, {4});
  check_schedule(f, s, 12, [](int e, double b) {
    if (e < 4) return b * (0.1 + 0.9 * e / 4.0);
    return b * std::pow(0.9, e - 4);
  });
  EXPECT_THROW(SequentialLR(f.opt, {warm, decay}, {}), Error);
}

namespace {

// The 1cycle policy from its definition (Smith & Topin), two or three phases.
std::pair<double, double> one_cycle(int step, int total, double max_lr, double pct, bool cos,
                                    bool three) {
  const double init = max_lr / 25, minlr = init / 1e4, mmax = 0.95, mbase = 0.85;
  auto anneal = [&](double a, double b, double t) {
    return cos ? b + (a - b) / 2 * (std::cos(kPi * t) + 1) : a + (b - a) * t;
  };
  const double up = pct * total - 1;
  if (!three) {
    if (step <= up) return {anneal(init, max_lr, step / up), anneal(mmax, mbase, step / up)};
    double t = (step - up) / (total - 1 - up);
    return {anneal(max_lr, minlr, t), anneal(mbase, mmax, t)};
  }
  const double down = 2 * pct * total - 2;
  if (step <= up) return {anneal(init, max_lr, step / up), anneal(mmax, mbase, step / up)};
  if (step <= down) {
    double t = (step - up) / (down - up);
    return {anneal(max_lr, init, t), anneal(mbase, mmax, t)};
  }
  double t = (step - down) / (total - 1 - down);
  return {anneal(init, minlr, t), mmax};
}

}  // namespace

TEST(LRScheduler, OneCycleLR) {
  for (bool three : {false, true}) {
    for (bool cos : {true, false}) {
      Fixture f;
      OneCycleLROptions o;
      o.total_steps = 50;
      o.anneal_cos = cos;
      o.three_phase = three;
      OneCycleLR s(f.opt, std::vector<double>{1.0, 0.5}, o);
      for (int e = 0; e < 50; ++e) {
        for (size_t g = 0; g < 2; ++g) {
          auto [lr, m] = one_cycle(e, 50, g == 0 ? 1.0 : 0.5, 0.3, cos, three);
          ASSERT_NEAR(f.opt.param_groups()[g].lr(), lr, 1e-12) << e;
          ASSERT_NEAR(f.opt.param_groups()[g].options.get("momentum"), m, 1e-12) << e;
        }
        s.step();
      }
      EXPECT_THROW(s.step(), Error);  // past total_steps
    }
  }
}

TEST(LRScheduler, OneCycleLRCyclesAdamBeta1) {
  Tensor p = kiln::ones({1}).requires_grad_();
  Adam opt({p}, AdamOptions(0.1));
  OneCycleLROptions o;
  o.epochs = 2;
  o.steps_per_epoch = 10;
  OneCycleLR s(opt, 0.01, o);
  EXPECT_EQ(s.total_steps(), 20);
  EXPECT_NEAR(opt.param_groups()[0].options.get("beta1"), 0.95, 1e-12);
  EXPECT_NEAR(opt.param_groups()[0].lr(), 0.01 / 25, 1e-15);
}

namespace {

// ReduceLROnPlateau's rule, written out: mode min, rel threshold.
struct PlateauRef {
  double lr, best = INFINITY, factor, threshold, min_lr;
  int patience, cooldown, bad = 0, cool = 0;
  void step(double m) {
    if (m < best * (1 - threshold)) {
      best = m;
      bad = 0;
    } else {
      ++bad;
    }
    if (cool > 0) {
      --cool;
      bad = 0;
    }
    if (bad > patience) {
      double n = std::max(lr * factor, min_lr);
      if (lr - n > 1e-8) lr = n;
      cool = cooldown;
      bad = 0;
    }
  }
};

}  // namespace

TEST(LRScheduler, ReduceLROnPlateau) {
  Tensor p = kiln::ones({1}).requires_grad_();
  SGD opt({p}, SGDOptions(1.0));
  ReduceLROnPlateauOptions o;
  o.factor = 0.5;
  o.patience = 2;
  o.cooldown = 1;
  o.min_lrs = {0.05};
  ReduceLROnPlateau s(opt, o);
  PlateauRef ref{1.0, INFINITY, 0.5, 1e-4, 0.05, 2, 1};
  const double metrics[] = {5, 4, 4, 4, 4, 3.9999, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
  int reductions = 0;
  double prev = 1.0;
  for (double m : metrics) {
    s.step(m);
    ref.step(m);
    ASSERT_DOUBLE_EQ(opt.param_groups()[0].lr(), ref.lr);
    if (ref.lr < prev) ++reductions;
    prev = ref.lr;
  }
  EXPECT_GE(reductions, 3);  // the sequence really exercises reductions, cooldown and min_lr
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.05);  // clamped at min_lr
}

TEST(LRScheduler, StateDictResumes) {
  // Reference run: 10 steps of warmup + cosine.
  auto make = [](Fixture& f) {
    auto warm = std::make_shared<LinearLR>(f.opt, 0.2, 1.0, 3);
    auto cos = std::make_shared<CosineAnnealingLR>(f.opt, 10, 0.0);
    return std::make_unique<SequentialLR>(
        f.opt, std::vector<std::shared_ptr<LRScheduler>>{warm, cos}, std::vector<int64_t>{3});
  };
  Fixture ref;
  auto sref = make(ref);
  std::vector<double> want;
  for (int e = 0; e < 10; ++e) {
    want.push_back(ref.opt.param_groups()[0].lr());
    sref->step();
  }
  // Interrupted run: 6 steps, save optimizer + scheduler state, resume in fresh objects.
  Fixture a;
  auto sa = make(a);
  for (int e = 0; e < 6; ++e) sa->step();
  OptimizerStateDict osd = a.opt.state_dict();
  LRSchedulerState ssd = sa->state_dict();
  Fixture b;
  auto sb = make(b);
  b.opt.load_state_dict(osd);
  sb->load_state_dict(ssd);
  for (int e = 6; e < 10; ++e) {
    EXPECT_NEAR(b.opt.param_groups()[0].lr(), want[e], 1e-12) << e;
    sb->step();
  }
}
