// kiln::amp::GradScaler: scaling, unscaling, skipped steps under injected inf/NaN, backoff and
// growth of the scale, call-order errors, state_dict, and equivalence with unscaled training for
// every optimizer.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "kiln/optim/optim.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

Tensor param(std::vector<double> v) { return from_vector(v).to(kFloat32).requires_grad_(true); }

TEST(GradScaler, DefaultsAndScale) {
  amp::GradScaler s;
  EXPECT_EQ(s.get_scale(), 65536.0);
  EXPECT_EQ(s.get_growth_factor(), 2.0);
  EXPECT_EQ(s.get_backoff_factor(), 0.5);
  EXPECT_EQ(s.get_growth_interval(), 2000);
  Tensor loss = tensor({1.5f});
  EXPECT_EQ(vals(s.scale(loss))[0], 1.5 * 65536);
  // The scaled loss is differentiable: d(scale * loss)/dp = scale * dloss/dp.
  Tensor p = param({2.0});
  s.scale((p * p).sum()).backward();
  EXPECT_EQ(vals(p.grad())[0], 4.0 * 65536);
  EXPECT_THROW(amp::GradScaler(65536, 1.0), Error);
  EXPECT_THROW(amp::GradScaler(65536, 2.0, 1.5), Error);
  EXPECT_THROW(amp::GradScaler(65536, 2.0, 0.5, 0), Error);
}

TEST(GradScaler, StepUnscalesOnceAndUpdates) {
  Tensor p = param({1.0, -2.0});
  optim::SGD opt({p}, optim::SGDOptions(0.5));
  amp::GradScaler s(1024.0, 2.0, 0.5, /*growth_interval=*/3);
  // Gradient g = (0.25, -1) scaled by 1024 (exact in float32).
  p.mutable_grad() = tensor({0.25f * 1024, -1.0f * 1024});
  s.unscale_(opt);
  EXPECT_EQ(vals(p.grad()), (std::vector<double>{0.25, -1.0}));
  EXPECT_THROW(s.unscale_(opt), Error);  // twice before update
  EXPECT_TRUE(s.step(opt));              // does not unscale again
  EXPECT_EQ(vals(p), (std::vector<double>{1.0 - 0.5 * 0.25, -2.0 + 0.5 * 1.0}));
  EXPECT_THROW(s.step(opt), Error);  // twice before update
  s.update();
  EXPECT_EQ(s.get_scale(), 1024.0);
  EXPECT_EQ(s.growth_tracker(), 1);
  // Two more clean steps complete the growth interval: the scale doubles, the tracker resets.
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = tensor({0.0f, 0.0f}) + s.get_scale();
    EXPECT_TRUE(s.step(opt));
    s.update();
  }
  EXPECT_EQ(s.get_scale(), 2048.0);
  EXPECT_EQ(s.growth_tracker(), 0);
}

TEST(GradScaler, InjectedInfOrNanSkipsTheStepAndBacksOff) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {inf, -inf, std::nan("")}) {
    Tensor p = param({1.0, 2.0}), q = param({3.0});
    optim::Adam opt({p, q}, optim::AdamOptions(0.1));
    amp::GradScaler s(4096.0, 2.0, 0.5, 2);
    // One clean step first so the tracker is non-zero.
    p.mutable_grad() = tensor({4096.0f, 4096.0f});
    q.mutable_grad() = tensor({4096.0f});
    EXPECT_TRUE(s.step(opt));
    s.update();
    EXPECT_EQ(s.growth_tracker(), 1);
    auto p_before = vals(p), q_before = vals(q);
    p.mutable_grad() = tensor({1.0f, 1.0f});
    q.mutable_grad() = from_vector(std::vector<double>{bad}).to(kFloat32);  // only q overflows
    EXPECT_FALSE(s.step(opt)) << bad;
    EXPECT_EQ(vals(p), p_before);  // every parameter of the optimizer is left alone
    EXPECT_EQ(vals(q), q_before);
    EXPECT_EQ(opt.state(p).step, 1);  // the optimizer did not count a step
    s.update();
    EXPECT_EQ(s.get_scale(), 2048.0);
    EXPECT_EQ(s.growth_tracker(), 0);
    // Clean steps resume and, after growth_interval of them, the scale grows again.
    for (int i = 0; i < 2; ++i) {
      p.mutable_grad() = tensor({1.0f, 1.0f});
      q.mutable_grad() = tensor({1.0f});
      EXPECT_TRUE(s.step(opt));
      s.update();
    }
    EXPECT_EQ(s.get_scale(), 4096.0);
  }
}

TEST(GradScaler, UpdateWithNewScaleStateDictAndDisabled) {
  amp::GradScaler s(8.0, 3.0, 0.25, 7);
  s.update(32.0);
  EXPECT_EQ(s.get_scale(), 32.0);
  auto sd = s.state_dict();
  EXPECT_EQ(sd.at("scale"), 32.0);
  EXPECT_EQ(sd.at("growth_factor"), 3.0);
  EXPECT_EQ(sd.at("backoff_factor"), 0.25);
  EXPECT_EQ(sd.at("growth_interval"), 7.0);
  EXPECT_EQ(sd.at("_growth_tracker"), 0.0);
  amp::GradScaler t;
  t.load_state_dict(sd);
  EXPECT_EQ(t.get_scale(), 32.0);
  EXPECT_EQ(t.get_growth_interval(), 7);
  EXPECT_THROW(t.load_state_dict({}), Error);
  EXPECT_THROW(t.update(), Error);  // nothing recorded since the last update
  // Disabled: identity scale, plain step, empty state.
  amp::GradScaler off(65536.0, 2.0, 0.5, 2000, false);
  EXPECT_EQ(off.get_scale(), 1.0);
  Tensor loss = tensor({3.0f});
  EXPECT_TRUE(off.scale(loss).is_same(loss));
  Tensor p = param({1.0});
  optim::SGD opt({p}, optim::SGDOptions(1.0));
  p.mutable_grad() = tensor({0.5f});
  EXPECT_TRUE(off.step(opt));
  off.update();
  EXPECT_EQ(vals(p)[0], 0.5);
  EXPECT_TRUE(off.state_dict().empty());
}

// Every optimizer: stepping on scale * g through the scaler equals stepping on g directly.
TEST(GradScaler, MatchesUnscaledStepsForEveryOptimizer) {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  std::vector<std::pair<const char*, Make>> makers = {
      {"SGD",
       [](auto ps) {
         return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9).nesterov(1));
       }},
      {"Adam",
       [](auto ps) {
         return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.05).amsgrad(1));
       }},
      {"AdamW",
       [](auto ps) { return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(0.05)); }},
      {"Adagrad",
       [](auto ps) { return std::make_unique<optim::Adagrad>(ps, optim::AdagradOptions(0.1)); }},
      {"RMSprop",
       [](auto ps) { return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(0.01)); }},
      {"Adamax",
       [](auto ps) { return std::make_unique<optim::Adamax>(ps, optim::AdamaxOptions(0.05)); }},
      {"NAdam",
       [](auto ps) { return std::make_unique<optim::NAdam>(ps, optim::NAdamOptions(0.05)); }},
      {"RAdam",
       [](auto ps) { return std::make_unique<optim::RAdam>(ps, optim::RAdamOptions(0.05)); }},
  };
  for (auto& [name, make] : makers) {
    Tensor a = param({0.5, -1.0, 2.0}), b = param({0.5, -1.0, 2.0});
    auto oa = make({a});
    auto ob = make({b});
    amp::GradScaler s(256.0, 2.0, 0.5, 2);
    for (int step = 0; step < 5; ++step) {
      // g = a^3 - a (a smooth objective's gradient), the same for both copies.
      Tensor g = (a.detach() * a.detach() * a.detach() - a.detach());
      a.mutable_grad() = g.clone();
      oa->step();
      b.mutable_grad() = g * s.get_scale();
      ASSERT_TRUE(s.step(*ob)) << name;
      s.update();
    }
    EXPECT_EQ(s.get_scale(), 256.0 * 4) << name;  // grew after steps 2 and 4
    auto va = vals(a), vb = vals(b);
    for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-6) << name << " " << i;
  }
}

// 50 gradients of two dtypes, an inf in the 37th: one multi-tensor check skips the step for
// plain and fused optimizers alike; clean steps afterwards (unscale_ + step, and step alone,
// where a fused optimizer divides by the scale itself) match a twin given unscaled gradients.
TEST(GradScaler, InjectedInfIn37thOf50GradientsPlainAndFused) {
  for (bool fused : {false, true}) {
    std::vector<Tensor> ps, twin;
    manual_seed(8);
    for (int i = 0; i < 50; ++i) {
      Tensor p = randn({1 + 97 * (i % 5)}, TensorOptions(i % 4 == 0 ? kBFloat16 : kFloat32));
      ps.push_back(p.clone().requires_grad_(true));
      twin.push_back(p.clone().requires_grad_(true));
    }
    optim::Adam opt(ps, optim::AdamOptions(1e-2).fused(fused));
    optim::Adam ot(twin, optim::AdamOptions(1e-2).fused(fused));
    EXPECT_EQ(opt.supports_grad_scale(), fused);
    amp::GradScaler s(4096.0, 2.0, 0.5, 100);
    std::vector<Tensor> grads, before;
    for (auto& p : ps) {
      grads.push_back(randn(p.sizes(), TensorOptions(p.dtype())));
      before.push_back(p.detach().clone());
      p.mutable_grad() = grads.back() * 4096.0;
    }
    ps[36].mutable_grad().narrow(0, 0, 1).fill_(std::numeric_limits<double>::infinity());
    EXPECT_FALSE(s.step(opt));
    s.update();
    EXPECT_EQ(s.get_scale(), 2048.0);
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(vals(ps[i]), vals(before[i])) << i;
    for (int round = 0; round < 2; ++round) {
      for (size_t i = 0; i < ps.size(); ++i) {
        ps[i].mutable_grad() = grads[i] * s.get_scale();
        twin[i].mutable_grad() = grads[i].clone();
      }
      if (round == 0) {
        s.unscale_(opt);
        for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(vals(ps[i].grad()), vals(grads[i]));
      }
      EXPECT_TRUE(s.step(opt));
      s.update();
      ot.step();
      for (size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(vals(ps[i].grad()), vals(grads[i])) << "unscaled in place, " << i;
        EXPECT_EQ(vals(ps[i]), vals(twin[i])) << "fused " << fused << " round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace kiln
