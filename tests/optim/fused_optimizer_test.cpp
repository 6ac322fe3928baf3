// Fused (multi-tensor) SGD/Adam/AdamW steps against the single-tensor steps on the CPU (many
// tensors of odd sizes, per-tensor step counts, every option), float32 master weights (fused and
// not, state_dict, accuracy against a float32 run), and the errors of fused=1.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "kiln/ops.h"
#include "kiln/optim/optim.h"

using namespace kiln;
using namespace kiln::optim;

namespace {

using Make = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>, bool fused)>;

// Sizes that exercise chunking and vector tails: 1, 3, 65537 (a chunk plus one), odd matrices.
const std::vector<std::vector<int64_t>> kShapes = {{1}, {3}, {65537}, {7, 13}, {2, 3, 5}, {1000}};

std::vector<Tensor> make_params(DType dt, uint64_t seed) {
  manual_seed(seed);
  std::vector<Tensor> ps;
  for (auto& s : kShapes)
    ps.push_back(randn(s, TensorOptions(kFloat64)).to(dt).requires_grad_(true));
  return ps;
}

std::vector<Tensor> clone_params(const std::vector<Tensor>& ps) {
  std::vector<Tensor> r;
  for (auto& p : ps) r.push_back(p.detach().clone().requires_grad_(true));
  return r;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().to(kFloat64), y = b.detach().to(kFloat64);
  return ((x - y).abs() / (y.abs() + 1.0)).max().item<double>();
}

// Runs `steps` steps of the fused and the unfused optimizer on copies of the same parameters
// with the same gradients; parameter k gets no gradient on steps where (step + k) % 4 == 3, so
// step counts differ between parameters. Returns the largest relative difference seen.
double fused_vs_unfused(const Make& make, DType dt, int steps = 6) {
  std::vector<Tensor> a = make_params(dt, 11), b = clone_params(a);
  auto fa = make(a, true);
  auto ub = make(b, false);
  double worst = 0;
  manual_seed(5);
  for (int s = 0; s < steps; ++s) {
    for (size_t k = 0; k < a.size(); ++k) {
      if ((s + k) % 4 == 3) {
        a[k].mutable_grad() = Tensor();
        b[k].mutable_grad() = Tensor();
        continue;
      }
      Tensor g = randn(a[k].sizes(), TensorOptions(kFloat64)).to(dt);
      a[k].mutable_grad() = g.clone();
      b[k].mutable_grad() = g.clone();
    }
    fa->step();
    ub->step();
    for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, max_rel_diff(a[k], b[k]));
  }
  return worst;
}

struct Variant {
  const char* name;
  Make make;
};

std::vector<Variant> sgd_variants() {
  return {
      {"plain",
       [](auto ps, bool f) { return std::make_unique<SGD>(ps, SGDOptions(0.1).fused(f)); }},
      {"momentum-dampening-wd",
       [](auto ps, bool f) {
         return std::make_unique<SGD>(
             ps, SGDOptions(0.05).momentum(0.9).dampening(0.3).weight_decay(0.01).fused(f));
       }},
      {"nesterov-maximize",
       [](auto ps, bool f) {
         return std::make_unique<SGD>(
             ps, SGDOptions(0.05).momentum(0.8).nesterov(1).maximize(1).weight_decay(0.1).fused(f));
       }},
  };
}

std::vector<Variant> adam_variants() {
  return {
      {"adam",
       [](auto ps, bool f) { return std::make_unique<Adam>(ps, AdamOptions(0.01).fused(f)); }},
      {"adam-wd-amsgrad-maximize",
       [](auto ps, bool f) {
         return std::make_unique<Adam>(
             ps, AdamOptions(0.01).weight_decay(0.1).amsgrad(1).maximize(1).fused(f));
       }},
      {"adamw",
       [](auto ps, bool f) {
         return std::make_unique<AdamW>(ps, AdamWOptions(0.01).weight_decay(0.1).fused(f));
       }},
      {"adamw-amsgrad-betas",
       [](auto ps, bool f) {
         return std::make_unique<AdamW>(
             ps, AdamWOptions(0.02).betas({0.8, 0.99}).eps(1e-6).amsgrad(1).fused(f));
       }},
  };
}

TEST(FusedOptim, SgdMatchesSingleTensorStep) {
  for (auto& v : sgd_variants()) {
    EXPECT_LT(fused_vs_unfused(v.make, kFloat64), 1e-13) << v.name;
    EXPECT_LT(fused_vs_unfused(v.make, kFloat32), 1e-5) << v.name;
  }
}

TEST(FusedOptim, AdamAndAdamWMatchSingleTensorStep) {
  for (auto& v : adam_variants()) {
    EXPECT_LT(fused_vs_unfused(v.make, kFloat64), 1e-12) << v.name;
    EXPECT_LT(fused_vs_unfused(v.make, kFloat32), 1e-5) << v.name;
  }
}

TEST(FusedOptim, PerTensorStepCountsAndStateMatch) {
  std::vector<Tensor> a = make_params(kFloat64, 3), b = clone_params(a);
  AdamW fa(a, AdamWOptions(0.01).amsgrad(1).fused(1));
  AdamW ub(b, AdamWOptions(0.01).amsgrad(1));
  for (int s = 0; s < 3; ++s) {
    for (size_t k = 0; k < a.size(); ++k) {
      if (k % 2 == 1 && s > 0) {  // odd parameters step once
        a[k].mutable_grad() = b[k].mutable_grad() = Tensor();
        continue;
      }
      Tensor g = randn(a[k].sizes(), TensorOptions(kFloat64));
      a[k].mutable_grad() = g.clone();
      b[k].mutable_grad() = g.clone();
    }
    fa.step();
    ub.step();
  }
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(fa.state(a[k]).step, k % 2 == 1 ? 1 : 3);
    EXPECT_EQ(fa.state(a[k]).step, ub.state(b[k]).step);
    for (const char* key : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
      EXPECT_LT(max_rel_diff(fa.state(a[k])[key], ub.state(b[k])[key]), 1e-13) << key;
  }
}

TEST(FusedOptim, NonContiguousParameterAndGradient) {
  Tensor base_a = randn({6, 5}, TensorOptions(kFloat64));
  Tensor base_b = base_a.clone();
  Tensor pa = base_a.t().requires_grad_(true), pb = base_b.t().requires_grad_(true);
  ASSERT_FALSE(pa.is_contiguous());
  Adam fa({pa}, AdamOptions(0.1).fused(1));
  Adam ub({pb}, AdamOptions(0.1));
  for (int s = 0; s < 3; ++s) {
    Tensor g = randn({6, 5}, TensorOptions(kFloat64)).t();
    pa.mutable_grad() = g;
    pb.mutable_grad() = g.clone();
    fa.step();
    ub.step();
  }
  EXPECT_LT(max_rel_diff(pa, pb), 1e-13);
  EXPECT_LT(max_rel_diff(base_a, base_b), 1e-13);  // the update reached the storage
}

// 16-bit parameters with master weights: fused and unfused both update a float32 copy.
TEST(FusedOptim, MasterWeightsFusedMatchesUnfused) {
  std::vector<Make> makers = {
      [](auto ps, bool f) {
        return std::make_unique<AdamW>(ps, AdamWOptions(1e-3).master_weights(1).fused(f));
      },
      [](auto ps, bool f) {
        return std::make_unique<SGD>(
            ps, SGDOptions(1e-3).momentum(0.9).master_weights(1).weight_decay(0.01).fused(f));
      }};
  for (DType dt : {kBFloat16, kFloat16}) {
    for (auto& make : makers) {
      std::vector<Tensor> a = make_params(dt, 7), b = clone_params(a);
      auto fa = make(a, true);
      auto ub = make(b, false);
      for (int s = 0; s < 4; ++s) {
        for (size_t k = 0; k < a.size(); ++k) {
          Tensor g = randn(a[k].sizes(), TensorOptions(kFloat32)).to(dt);
          a[k].mutable_grad() = g.clone();
          b[k].mutable_grad() = g.clone();
        }
        fa->step();
        ub->step();
      }
      for (size_t k = 0; k < a.size(); ++k) {
        const Tensor& ma = fa->state(a[k])["master_param"];
        const Tensor& mb = ub->state(b[k])["master_param"];
        ASSERT_EQ(ma.dtype(), kFloat32);
        ASSERT_EQ(mb.dtype(), kFloat32);
        EXPECT_LT(max_rel_diff(ma, mb), 1e-6);
        // The parameter is the master's rounding.
        EXPECT_EQ(max_rel_diff(a[k], ma.to(dt)), 0.0);
        for (auto& [key, buf] : fa->state(a[k]).buffers) EXPECT_EQ(buf.dtype(), kFloat32) << key;
      }
    }
  }
}

// A bfloat16 linear least-squares model: with master weights the trajectory stays much closer to
// the float32 run than without. The gradient is computed in float64 from the current weights,
// so only the optimizer's precision differs between the runs.
double bf16_drift(bool master, bool fused, bool adam) {
  manual_seed(21);
  Tensor x = randn({64, 16}, TensorOptions(kFloat64));
  Tensor y = x.matmul(randn({16}, TensorOptions(kFloat64)));
  Tensor w0 = randn({16}, TensorOptions(kFloat64)).to(kBFloat16).to(kFloat64);  // same start
  Tensor w16 = w0.to(kBFloat16).requires_grad_(true), w32 = w0.to(kFloat32).requires_grad_(true);
  auto make = [&](Tensor w, bool mw) -> std::unique_ptr<Optimizer> {
    if (adam)
      return std::make_unique<Adam>(std::vector<Tensor>{w},
                                    AdamOptions(1e-3).master_weights(mw).fused(fused));
    return std::make_unique<SGD>(std::vector<Tensor>{w},
                                 SGDOptions(2e-4).momentum(0.5).master_weights(mw).fused(fused));
  };
  auto o16 = make(w16, master);
  auto o32 = make(w32, false);
  auto grad = [&](const Tensor& w) {
    Tensor r = x.matmul(w.detach().to(kFloat64)) - y;
    return x.t().matmul(r).mul(2.0 / 64);
  };
  for (int s = 0; s < 300; ++s) {
    w16.mutable_grad() = grad(w16).to(kBFloat16);
    w32.mutable_grad() = grad(w32).to(kFloat32);
    o16->step();
    o32->step();
  }
  Tensor d = w16.detach().to(kFloat64) - w32.detach().to(kFloat64);
  return d.norm().item<double>() / w32.detach().to(kFloat64).norm().item<double>();
}

TEST(FusedOptim, MasterWeightsTrackFloat32MuchCloser) {
  for (bool adam : {false, true})
    for (bool fused : {false, true}) {
      const double with = bf16_drift(true, fused, adam), without = bf16_drift(false, fused, adam);
      RecordProperty(std::string(adam ? "adam" : "sgd") + (fused ? "_fused" : "") + "_drift",
                     std::to_string(with) + " vs " + std::to_string(without));
      EXPECT_LT(with * 10, without) << "adam " << adam << " fused " << fused << ": with master "
                                    << with << ", without " << without;
    }
}

TEST(FusedOptim, MasterWeightsStateDictRoundTrip) {
  for (bool fused : {false, true}) {
    std::vector<Tensor> a = make_params(kBFloat16, 9);
    AdamW oa(a, AdamWOptions(1e-2).master_weights(1).fused(fused));
    auto feed = [](std::vector<Tensor>& ps, int s) {
      manual_seed(100 + s);
      for (auto& p : ps) p.mutable_grad() = randn(p.sizes(), TensorOptions(kFloat32)).to(kBFloat16);
    };
    for (int s = 0; s < 2; ++s) {
      feed(a, s);
      oa.step();
    }
    OptimizerStateDict sd = oa.state_dict();
    std::vector<Tensor> b = clone_params(a);
    AdamW ob(b, AdamWOptions(1e-2).master_weights(1).fused(fused));
    ob.load_state_dict(sd);
    EXPECT_EQ(ob.state(b[0])["master_param"].dtype(), kFloat32);
    EXPECT_EQ(ob.state(b[0])["exp_avg"].dtype(), kFloat32);
    for (int s = 2; s < 4; ++s) {
      feed(a, s);
      feed(b, s);
      oa.step();
      ob.step();
    }
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(max_rel_diff(a[k], b[k]), 0.0);
      EXPECT_EQ(max_rel_diff(oa.state(a[k])["master_param"], ob.state(b[k])["master_param"]), 0.0);
    }
  }
}

TEST(FusedOptim, ErrorsLeaveStateUnchanged) {
  // A gradient whose dtype differs from its parameter's.
  Tensor p = randn({3}).requires_grad_(true), q = randn({4}).requires_grad_(true);
  Adam opt({p, q}, AdamOptions(0.1).fused(1));
  p.mutable_grad() = randn({3});
  q.mutable_grad() = randn({4}, TensorOptions(kFloat64));
  Tensor before = p.detach().clone();
  EXPECT_THROW(opt.step(), Error);
  EXPECT_FALSE(opt.has_state(p));
  EXPECT_EQ(max_rel_diff(p, before), 0.0);
  // Complex parameters have no fused step.
  Tensor c = randn({2}, TensorOptions(kComplex64)).requires_grad_(true);
  SGD sc({c}, SGDOptions(0.1).fused(1));
  c.mutable_grad() = randn({2}, TensorOptions(kComplex64));
  EXPECT_THROW(sc.step(), Error);
  // Unfused optimizers cannot take a grad scale.
  SGD plain({p}, SGDOptions(0.1));
  EXPECT_FALSE(plain.supports_grad_scale());
  EXPECT_THROW(plain.step_with_grad_scale(0.5), Error);
  EXPECT_TRUE(opt.supports_grad_scale());
}

// step_with_grad_scale: the fused step divides by the scale and stores the unscaled gradient.
TEST(FusedOptim, StepWithGradScaleEqualsUnscaledStep) {
  std::vector<Tensor> a = make_params(kFloat32, 4), b = clone_params(a);
  Adam fa(a, AdamOptions(0.01).fused(1));
  Adam ub(b, AdamOptions(0.01));
  const double scale = 1024.0;
  for (int s = 0; s < 3; ++s) {
    for (size_t k = 0; k < a.size(); ++k) {
      Tensor g = randn(a[k].sizes());
      a[k].mutable_grad() = g * scale;
      b[k].mutable_grad() = g.clone();
    }
    fa.step_with_grad_scale(1.0 / scale);
    ub.step();
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_LT(max_rel_diff(a[k].grad(), b[k].grad()), 1e-7);
      EXPECT_LT(max_rel_diff(a[k], b[k]), 1e-5);
    }
  }
}

}  // namespace
