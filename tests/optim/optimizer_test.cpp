// Optimizer steps against independent double-precision scalar implementations of each update
// rule (gradients are set directly, so no autograd is involved), plus groups, state dicts, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "kiln/ops.h"
#include "kiln/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

using Vec = std::vector<double>;
using MakeOpt = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;
// One reference update of all elements: p (in/out), g.
using RefStep = std::function<void(Vec& p, const Vec& g)>;

constexpr int64_t kN = 6;

Vec initial_params() {
  Vec p(kN);
  for (int64_t i = 0; i < kN; ++i) p[i] = 0.5 * std::sin(1.0 + i) + 0.1 * static_cast<double>(i);
  return p;
}

Vec grad_at(int step) {
  Vec g(kN);
  for (int64_t i = 0; i < kN; ++i)
    g[i] = std::cos(1.3 * static_cast<double>(i) + 0.7 * step) * (1 + 0.1 * step);
  return g;
}

Vec values(const Tensor& t) {
  Tensor d = t.to(kFloat64).contiguous();
  return Vec(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

Tensor make_tensor(const Vec& v, DType dt) { return kiln::from_vector(v, {2, 3}).to(dt); }

// Runs `steps` steps of the kiln optimizer and of the reference and compares after each.
void compare(const MakeOpt& make, RefStep ref, DType dt, double tol, int steps = 12) {
  Vec p_ref = initial_params();
  Tensor param = make_tensor(p_ref, dt);
  param.requires_grad_(true);
  p_ref = values(param);  // start from exactly the same (rounded) values
  auto opt = make({param});
  for (int s = 0; s < steps; ++s) {
    Vec g = grad_at(s);
    Tensor gt = make_tensor(g, dt);
    param.mutable_grad() = gt;
    g = values(gt);
    opt->step();
    ref(p_ref, g);
    Vec got = values(param);
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_NEAR(got[i], p_ref[i], tol * std::max(1.0, std::abs(p_ref[i])))
          << "step " << s << " element " << i;
  }
}

void compare_both(const MakeOpt& make, const std::function<RefStep()>& ref) {
  compare(make, ref(), kFloat64, 1e-12);
  compare(make, ref(), kFloat32, 2e-5);
}

// ---------------------------------------------------------------- references

RefStep sgd_ref(double lr, double momentum, double dampening, double wd, bool nesterov,
                bool maximize) {
  auto buf = std::make_shared<Vec>();
  return [=](Vec& p, const Vec& g0) {
    bool first = buf->empty();
    if (first) buf->assign(kN, 0);
    for (int64_t i = 0; i < kN; ++i) {
      double g = maximize ? -g0[i] : g0[i];
      g += wd * p[i];
      if (momentum != 0) {
        (*buf)[i] = first ? g : momentum * (*buf)[i] + (1 - dampening) * g;
        g = nesterov ? g + momentum * (*buf)[i] : (*buf)[i];
      }
      p[i] -= lr * g;
    }
  };
}

RefStep adam_ref(double lr, double b1, double b2, double eps, double wd, bool amsgrad,
                 bool maximize, bool decoupled) {
  auto st = std::make_shared<std::tuple<Vec, Vec, Vec, int>>(Vec(kN, 0), Vec(kN, 0), Vec(kN, 0), 0);
  return [=](Vec& p, const Vec& g0) {
    auto& [m, v, vmax, t] = *st;
    ++t;
    for (int64_t i = 0; i < kN; ++i) {
      double g = maximize ? -g0[i] : g0[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double vv = v[i];
      if (amsgrad) {
        vmax[i] = std::max(vmax[i], v[i]);
        vv = vmax[i];
      }
      double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
      p[i] -= lr / bc1 * m[i] / (std::sqrt(vv) / std::sqrt(bc2) + eps);
    }
  };
}

RefStep adamax_ref(double lr, double b1, double b2, double eps, double wd) {
  auto st = std::make_shared<std::tuple<Vec, Vec, int>>(Vec(kN, 0), Vec(kN, 0), 0);
  return [=](Vec& p, const Vec& g0) {
    auto& [m, u, t] = *st;
    ++t;
    for (int64_t i = 0; i < kN; ++i) {
      double g = g0[i] + wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      u[i] = std::max(b2 * u[i], std::abs(g) + eps);
      p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / u[i];
    }
  };
}

RefStep nadam_ref(double lr, double b1, double b2, double eps, double wd, double psi,
                  bool decoupled) {
  auto st = std::make_shared<std::tuple<Vec, Vec, int, float>>(Vec(kN, 0), Vec(kN, 0), 0, 1.0f);
  return [=](Vec& p, const Vec& g0) {
    auto& [m, v, t, mu_prod] = *st;
    ++t;
    double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    mu_prod = mu_prod * static_cast<float>(mu);  // PyTorch keeps this product in float32
    const double mp = mu_prod;
    for (int64_t i = 0; i < kN; ++i) {
      double g = g0[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double denom = std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps;
      p[i] -= lr * (1 - mu) / (1 - mp) * g / denom;
      p[i] -= lr * mu_next / (1 - mp * mu_next) * m[i] / denom;
    }
  };
}

RefStep radam_ref(double lr, double b1, double b2, double eps, double wd, bool decoupled) {
  auto st = std::make_shared<std::tuple<Vec, Vec, int>>(Vec(kN, 0), Vec(kN, 0), 0);
  return [=](Vec& p, const Vec& g0) {
    auto& [m, v, t] = *st;
    ++t;
    double rho_inf = 2 / (1 - b2) - 1;
    double bc2 = 1 - std::pow(b2, t);
    double rho = rho_inf - 2 * t * std::pow(b2, t) / bc2;
    for (int64_t i = 0; i < kN; ++i) {
      double g = g0[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double mhat = m[i] / (1 - std::pow(b1, t));
      if (rho > 5) {
        double r =
            std::sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
        p[i] -= lr * mhat * r * std::sqrt(bc2) / (std::sqrt(v[i]) + eps);
      } else {
        p[i] -= lr * mhat;
      }
    }
  };
}

RefStep adagrad_ref(double lr, double lr_decay, double wd, double init, double eps) {
  auto st = std::make_shared<std::pair<Vec, int>>(Vec(kN, init), 0);
  return [=](Vec& p, const Vec& g0) {
    auto& [s, t] = *st;
    ++t;
    double clr = lr / (1 + (t - 1) * lr_decay);
    for (int64_t i = 0; i < kN; ++i) {
      double g = g0[i] + wd * p[i];
      s[i] += g * g;
      p[i] -= clr * g / (std::sqrt(s[i]) + eps);
    }
  };
}

RefStep rmsprop_ref(double lr, double alpha, double eps, double wd, double momentum,
                    bool centered) {
  auto st = std::make_shared<std::tuple<Vec, Vec, Vec>>(Vec(kN, 0), Vec(kN, 0), Vec(kN, 0));
  return [=](Vec& p, const Vec& g0) {
    auto& [sq, ga, buf] = *st;
    for (int64_t i = 0; i < kN; ++i) {
      double g = g0[i] + wd * p[i];
      sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
      double avg;
      if (centered) {
        ga[i] = alpha * ga[i] + (1 - alpha) * g;
        avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
      } else {
        avg = std::sqrt(sq[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / avg;
      }
    }
  };
}

template <class O, class Opts>
MakeOpt maker(Opts o) {
  return [o](std::vector<Tensor> ps) { return std::make_unique<O>(std::move(ps), o); };
}

}  // namespace

TEST(OptimSGD, Plain) {
  compare_both(maker<SGD>(SGDOptions(0.1)), [] { return sgd_ref(0.1, 0, 0, 0, false, false); });
}

TEST(OptimSGD, MomentumDampeningWeightDecay) {
  compare_both(maker<SGD>(SGDOptions(0.05).momentum(0.9).dampening(0.2).weight_decay(0.01)),
               [] { return sgd_ref(0.05, 0.9, 0.2, 0.01, false, false); });
}

TEST(OptimSGD, NesterovMaximize) {
  compare_both(
      maker<SGD>(SGDOptions(0.05).momentum(0.8).nesterov(true).maximize(true).weight_decay(0.1)),
      [] { return sgd_ref(0.05, 0.8, 0, 0.1, true, true); });
}

TEST(OptimAdam, Default) {
  compare_both(maker<Adam>(AdamOptions(0.01)),
               [] { return adam_ref(0.01, 0.9, 0.999, 1e-8, 0, false, false, false); });
}

TEST(OptimAdam, WeightDecayAmsgradMaximize) {
  compare_both(maker<Adam>(AdamOptions(0.02)
                               .betas({0.8, 0.99})
                               .eps(1e-6)
                               .weight_decay(0.1)
                               .amsgrad(true)
                               .maximize(true)),
               [] { return adam_ref(0.02, 0.8, 0.99, 1e-6, 0.1, true, true, false); });
}

TEST(OptimAdamW, DecoupledWeightDecay) {
  compare_both(maker<AdamW>(AdamWOptions(0.01)),
               [] { return adam_ref(0.01, 0.9, 0.999, 1e-8, 0.01, false, false, true); });
  compare_both(maker<AdamW>(AdamWOptions(0.03).weight_decay(0.5).amsgrad(true)),
               [] { return adam_ref(0.03, 0.9, 0.999, 1e-8, 0.5, true, false, true); });
}

TEST(OptimAdamax, Update) {
  compare_both(maker<Adamax>(AdamaxOptions(0.01).weight_decay(0.05)),
               [] { return adamax_ref(0.01, 0.9, 0.999, 1e-8, 0.05); });
}

TEST(OptimNAdam, CoupledAndDecoupled) {
  compare_both(maker<NAdam>(NAdamOptions(0.01).weight_decay(0.02)),
               [] { return nadam_ref(0.01, 0.9, 0.999, 1e-8, 0.02, 4e-3, false); });
  compare_both(
      maker<NAdam>(
          NAdamOptions(0.01).weight_decay(0.02).decoupled_weight_decay(true).momentum_decay(0.01)),
      [] { return nadam_ref(0.01, 0.9, 0.999, 1e-8, 0.02, 0.01, true); });
}

TEST(OptimRAdam, BothRegimes) {
  // beta2 = 0.9 crosses rho_t > 5 at step 3; beta2 = 0.999 stays below for the first steps.
  compare_both(maker<RAdam>(RAdamOptions(0.01).betas({0.9, 0.9}).weight_decay(0.01)),
               [] { return radam_ref(0.01, 0.9, 0.9, 1e-8, 0.01, false); });
  compare_both(maker<RAdam>(RAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true)),
               [] { return radam_ref(0.01, 0.9, 0.999, 1e-8, 0.1, true); });
}

TEST(OptimAdagrad, DecayAndAccumulator) {
  compare_both(
      maker<Adagrad>(
          AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01).initial_accumulator_value(0.3)),
      [] { return adagrad_ref(0.1, 0.05, 0.01, 0.3, 1e-10); });
}

TEST(OptimRMSprop, Variants) {
  compare_both(maker<RMSprop>(RMSpropOptions(0.01)),
               [] { return rmsprop_ref(0.01, 0.99, 1e-8, 0, 0, false); });
  compare_both(maker<RMSprop>(
                   RMSpropOptions(0.01).centered(true).momentum(0.9).weight_decay(0.1).alpha(0.9)),
               [] { return rmsprop_ref(0.01, 0.9, 1e-8, 0.1, 0.9, true); });
}

TEST(Optim, ParamGroupsUseTheirOwnOptions) {
  Tensor a = kiln::ones({2}, TensorOptions(kFloat64)).requires_grad_();
  Tensor b = kiln::ones({2}, TensorOptions(kFloat64)).requires_grad_();
  Tensor c = kiln::ones({2}, TensorOptions(kFloat64)).requires_grad_();
  SGD opt({ParamGroup({a}, SGDOptions(0.5)), ParamGroup({b})}, SGDOptions(0.1));
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.5);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].options.get("momentum"), 0.0);
  a.mutable_grad() = kiln::full({2}, 2.0, TensorOptions(kFloat64));
  b.mutable_grad() = kiln::full({2}, 2.0, TensorOptions(kFloat64));
  opt.add_param_group(ParamGroup({c}, OptimizerOptions().lr(1.0)));
  c.mutable_grad() = kiln::full({2}, 2.0, TensorOptions(kFloat64));
  opt.step();
  EXPECT_DOUBLE_EQ(a.select(0, 0).item<double>(), 1 - 0.5 * 2);
  EXPECT_DOUBLE_EQ(b.select(0, 0).item<double>(), 1 - 0.1 * 2);
  EXPECT_DOUBLE_EQ(c.select(0, 0).item<double>(), 1 - 1.0 * 2);
  EXPECT_THROW(opt.add_param_group(ParamGroup({a})), Error);  // a is already optimized
  EXPECT_THROW(opt.add_param_group(ParamGroup({kiln::ones({1}).requires_grad_()},
                                              OptimizerOptions().set("betas", 1))),
               Error);
}

TEST(Optim, ParamsWithoutGradAreSkippedAndZeroGrad) {
  Tensor a = kiln::ones({3}).requires_grad_();
  Tensor b = kiln::ones({3}).requires_grad_();
  Adam opt({a, b}, AdamOptions(0.1));
  a.mutable_grad() = kiln::ones({3});
  opt.step();
  EXPECT_NE(a.select(0, 0).item<double>(), 1.0);
  EXPECT_EQ(b.select(0, 0).item<double>(), 1.0);
  EXPECT_TRUE(opt.has_state(a));
  EXPECT_FALSE(opt.has_state(b));
  opt.zero_grad(false);
  EXPECT_EQ(a.grad().abs().sum().item<double>(), 0.0);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optim, ConstructionErrors) {
  Tensor a = kiln::ones({3}).requires_grad_();
  EXPECT_THROW(SGD(std::vector<Tensor>{}), Error);
  EXPECT_THROW(SGD({a, a}), Error);
  EXPECT_THROW(SGD({a}, SGDOptions(0.1).nesterov(true)), Error);
  EXPECT_THROW(SGD({a}, SGDOptions(-1)), Error);
  EXPECT_THROW(Adam({a}, AdamOptions().betas({1.0, 0.9})), Error);
  EXPECT_THROW(SGD({kiln::ones({2}, TensorOptions(kInt64))}), Error);
}

TEST(Optim, StateDictRoundTripContinuesIdentically) {
  auto run = [](Adam& opt, Tensor& p, int from, int to) {
    for (int s = from; s < to; ++s) {
      p.mutable_grad() = make_tensor(grad_at(s), kFloat32);
      opt.step();
    }
  };
  Tensor p1 = make_tensor(initial_params(), kFloat32).requires_grad_();
  Adam o1({p1}, AdamOptions(0.05).amsgrad(true));
  run(o1, p1, 0, 3);
  Tensor p2 = p1.detach().clone().requires_grad_();
  Adam o2({p2}, AdamOptions(0.9));
  OptimizerStateDict sd = o1.state_dict();
  ASSERT_EQ(sd.state.size(), 1u);
  EXPECT_EQ(sd.state.at(0).step, 3);
  EXPECT_EQ(sd.state.at(0).buffers.size(), 3u);  // exp_avg, exp_avg_sq, max_exp_avg_sq
  o2.load_state_dict(sd);
  EXPECT_DOUBLE_EQ(o2.param_groups()[0].lr(), 0.05);
  run(o1, p1, 3, 6);
  run(o2, p2, 3, 6);
  EXPECT_TRUE(p1.detach().equal(p2.detach()));
  // The loaded state is a copy, not an alias of o1's.
  EXPECT_NE(o2.state(p2)["exp_avg"].data_ptr(), o1.state(p1)["exp_avg"].data_ptr());
  // A layout mismatch is an error.
  Tensor q = kiln::ones({1}).requires_grad_();
  Adam o3({q, kiln::ones({1}).requires_grad_()});
  EXPECT_THROW(o3.load_state_dict(sd), Error);
}

// ---------------------------------------------------------------- LBFGS on a quadratic

namespace {

// f(x) = 0.5 x^T A x - b^T x with A symmetric positive definite.
struct Quadratic {
  std::vector<Vec> A;
  Vec b;
  Quadratic() {
    const int n = 4;
    std::vector<Vec> M(n, Vec(n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) M[i][j] = std::sin(1.0 + i * n + j);
    A.assign(n, Vec(n, 0));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        for (int k = 0; k < n; ++k) A[i][j] += M[k][i] * M[k][j];
        if (i == j) A[i][j] += 1;
      }
    b = {1.0, -2.0, 0.5, 3.0};
  }
  double value(const Vec& x, Vec& grad) const {
    const size_t n = b.size();
    double f = 0;
    grad.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) grad[i] += A[i][j] * x[j];
      f += 0.5 * x[i] * grad[i] - b[i] * x[i];
      grad[i] -= b[i];
    }
    return f;
  }
  Vec solution() const {  // Gaussian elimination with partial pivoting
    const size_t n = b.size();
    std::vector<Vec> a = A;
    Vec r = b;
    for (size_t c = 0; c < n; ++c) {
      size_t piv = c;
      for (size_t i = c + 1; i < n; ++i)
        if (std::abs(a[i][c]) > std::abs(a[piv][c])) piv = i;
      std::swap(a[c], a[piv]);
      std::swap(r[c], r[piv]);
      for (size_t i = c + 1; i < n; ++i) {
        double f = a[i][c] / a[c][c];
        for (size_t j = c; j < n; ++j) a[i][j] -= f * a[c][j];
        r[i] -= f * r[c];
      }
    }
    Vec x(n);
    for (size_t i = n; i-- > 0;) {
      double s = r[i];
      for (size_t j = i + 1; j < n; ++j) s -= a[i][j] * x[j];
      x[i] = s / a[i][i];
    }
    return x;
  }
};

Optimizer::Closure quad_closure(const Quadratic& q, Tensor& x, int* evals) {
  return [&q, &x, evals]() {
    ++*evals;
    Vec g;
    double f = q.value(values(x), g);
    x.mutable_grad() = kiln::from_vector(g).to(x.dtype());
    return kiln::full({}, f, TensorOptions(kFloat64));
  };
}

}  // namespace

TEST(OptimLBFGS, FirstIterationIsScaledGradientStep) {
  Quadratic q;
  Tensor x = kiln::zeros({4}, TensorOptions(kFloat64)).requires_grad_();
  int evals = 0;
  LBFGS opt({x}, LBFGSOptions(0.7).max_iter(1));
  opt.step(quad_closure(q, x, &evals));
  Vec g0;
  q.value(Vec(4, 0.0), g0);
  double l1 = 0;
  for (double v : g0) l1 += std::abs(v);
  double t = std::min(1.0, 1.0 / l1) * 0.7;
  Vec got = values(x);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], -t * g0[i], 1e-14);
  EXPECT_EQ(evals, 1);
  EXPECT_THROW(opt.step(), Error);
}

TEST(OptimLBFGS, ConvergesOnQuadratic) {
  Quadratic q;
  Vec xs = q.solution();
  for (bool wolfe : {false, true}) {
    Tensor x = kiln::zeros({4}, TensorOptions(kFloat64)).requires_grad_();
    int evals = 0;
    LBFGS opt(
        {x},
        LBFGSOptions(1).max_iter(100).strong_wolfe(wolfe).tolerance_grad(1e-12).tolerance_change(
            1e-15));
    for (int k = 0; k < 5; ++k) opt.step(quad_closure(q, x, &evals));
    Vec got = values(x);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], xs[i], 1e-8) << "strong_wolfe=" << wolfe;
  }
}
