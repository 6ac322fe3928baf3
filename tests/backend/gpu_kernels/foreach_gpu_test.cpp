// GPU multi-tensor kernels: fused SGD/Adam/AdamW against the CPU single-tensor steps (float32,
// bfloat16 with master weights; many tensors of odd sizes, a tensor of more chunks than one
// launch holds, more tensors than one launch lists), GradScaler with an injected inf, and
// clip_grad_norm_ against a float64 reference. Skip without a GPU.
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "gpu_test_util.h"
#include "kiln/amp.h"
#include "kiln/nn/utils.h"
#include "kiln/optim/optim.h"

namespace kiln {
namespace {

using gpu_test::kCpu;
using gpu_test::kGpu;
using namespace kiln::optim;

// 45 tensors (more than one launch lists): 1, 3, 65537 (a chunk and one), non-multiples of the
// vector width, a 2-D odd shape; `big` adds 320 chunks + 3 elements (more than one launch's
// blocks, so the tensor continues in the next launch).
std::vector<std::vector<int64_t>> shapes(bool big) {
  std::vector<std::vector<int64_t>> s = {{1}, {3}, {65537}, {7, 13}, {131075}, {5}};
  for (int i = 0; i < 39; ++i) s.push_back({1 + 37 * i});
  if (big) s.push_back({320 * 65536 + 3});
  return s;
}

// The same parameters on the CPU (float32 or float64 reference dtype) and on the GPU.
struct Pair {
  std::vector<Tensor> cpu, gpu;
};

Pair make_pair(DType dt, bool big, uint64_t seed) {
  manual_seed(seed);
  Pair p;
  for (auto& s : shapes(big)) {
    Tensor c = randn(s, TensorOptions(kFloat32)).to(dt);
    p.cpu.push_back(c.clone().requires_grad_(true));
    p.gpu.push_back(c.to(kGpu).requires_grad_(true));
  }
  return p;
}

void set_grads(Pair& p, DType dt, uint64_t seed) {
  manual_seed(seed);
  for (size_t k = 0; k < p.cpu.size(); ++k) {
    Tensor g = randn(p.cpu[k].sizes(), TensorOptions(kFloat32)).to(dt);
    p.cpu[k].mutable_grad() = g;
    p.gpu[k].mutable_grad() = g.to(kGpu);
  }
}

double max_rel(const Tensor& got, const Tensor& want) {
  Tensor a = got.detach().to(kCpu).to(kFloat64), b = want.detach().to(kCpu).to(kFloat64);
  return ((a - b).abs() / (b.abs() + 1.0)).max().item<double>();
}

using Make = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>, bool fused)>;

// GPU fused vs CPU single-tensor over 3 steps: the largest and the mean elementwise difference
// (relative to 1 + |value|) of the parameters and every state buffer.
// Note [Adam near zero gradients]: where g (after coupled weight decay) is within a few eps of 0,
// Adam's step lr * m / (sqrt(v) + eps) changes by lr * eps / (|g| + eps)^2 per unit of g, so the
// GPU's fused multiply-adds (g + wd * p in one rounding) move such elements by up to ~1e-4 in
// float32; a handful of the 24M elements land there. A wrong chunk or tensor would move 65536
// elements by ~lr, which the mean bound (1e-7 against ~3e-5) catches.
void check_fused(const char* name, const Make& make, DType dt, bool big, double tol_max,
                 double tol_mean) {
  Pair p = make_pair(dt, big, 1);
  auto cpu = make(p.cpu, false);
  auto gpu = make(p.gpu, true);
  for (int s = 0; s < 3; ++s) {
    set_grads(p, dt, 100 + s);
    cpu->step();
    gpu->step();
  }
  double worst = 0, sum = 0, count = 0;
  auto add = [&](const Tensor& got, const Tensor& want) {
    Tensor a = got.detach().to(kCpu).to(kFloat64), b = want.detach().to(kCpu).to(kFloat64);
    Tensor d = (a - b).abs() / (b.abs() + 1.0);
    worst = std::max(worst, d.max().item<double>());
    sum += d.sum().item<double>();
    count += static_cast<double>(d.numel());
  };
  for (size_t k = 0; k < p.cpu.size(); ++k) {
    add(p.gpu[k], p.cpu[k]);
    for (auto& [key, buf] : cpu->state(p.cpu[k]).buffers) add(gpu->state(p.gpu[k])[key], buf);
  }
  EXPECT_LT(worst, tol_max) << name << " " << dtype_name(dt);
  EXPECT_LT(sum / count, tol_mean) << name << " " << dtype_name(dt);
}

TEST(ForeachGpu, FusedAdamAndAdamWMatchCpu) {
  KILN_NEED_GPU();
  check_fused(
      "adam",
      [](auto ps, bool f) {
        return std::make_unique<Adam>(ps, AdamOptions(1e-2).weight_decay(0.1).fused(f));
      },
      kFloat32, /*big=*/true, 1e-3, 1e-7);
  check_fused(
      "adam-amsgrad-maximize",
      [](auto ps, bool f) {
        return std::make_unique<Adam>(ps, AdamOptions(1e-2).amsgrad(1).maximize(1).fused(f));
      },
      kFloat32, false, 1e-5, 1e-7);
  check_fused(
      "adamw",
      [](auto ps, bool f) {
        return std::make_unique<AdamW>(ps, AdamWOptions(1e-2).amsgrad(1).fused(f));
      },
      kFloat32, false, 1e-5, 1e-7);
  check_fused(
      "adamw-f64",
      [](auto ps, bool f) { return std::make_unique<AdamW>(ps, AdamWOptions(1e-2).fused(f)); },
      kFloat64, false, 1e-12, 1e-14);
}

TEST(ForeachGpu, FusedSgdMatchesCpu) {
  KILN_NEED_GPU();
  check_fused(
      "sgd", [](auto ps, bool f) { return std::make_unique<SGD>(ps, SGDOptions(0.1).fused(f)); },
      kFloat32, true, 1e-5, 1e-7);
  check_fused(
      "sgd-momentum",
      [](auto ps, bool f) {
        return std::make_unique<SGD>(
            ps, SGDOptions(0.05).momentum(0.9).dampening(0.2).weight_decay(0.01).fused(f));
      },
      kFloat32, false, 1e-5, 1e-7);
  check_fused(
      "sgd-nesterov-maximize",
      [](auto ps, bool f) {
        return std::make_unique<SGD>(
            ps, SGDOptions(0.05).momentum(0.9).nesterov(1).maximize(1).fused(f));
      },
      kFloat64, false, 1e-12, 1e-14);
}

// bfloat16 parameters with float32 master weights: the GPU fused step against the CPU unfused
// step (both update float32 copies): masters and moments to float32 rounding, parameters to one
// bfloat16 rounding step.
TEST(ForeachGpu, Bf16MasterWeightsMatchCpu) {
  KILN_NEED_GPU();
  std::vector<Make> makers = {
      [](auto ps, bool f) {
        return std::make_unique<AdamW>(ps, AdamWOptions(1e-3).master_weights(1).fused(f));
      },
      [](auto ps, bool f) {
        return std::make_unique<SGD>(ps, SGDOptions(1e-3).momentum(0.9).master_weights(1).fused(f));
      }};
  for (auto& make : makers) {
    Pair p = make_pair(kBFloat16, false, 3);
    auto cpu = make(p.cpu, false);
    auto gpu = make(p.gpu, true);
    for (int s = 0; s < 3; ++s) {
      set_grads(p, kBFloat16, 200 + s);
      cpu->step();
      gpu->step();
    }
    for (size_t k = 0; k < p.cpu.size(); ++k) {
      EXPECT_EQ(gpu->state(p.gpu[k])["master_param"].dtype(), kFloat32);
      for (auto& [key, buf] : cpu->state(p.cpu[k]).buffers)
        EXPECT_LT(max_rel(gpu->state(p.gpu[k])[key], buf), 1e-5) << key << " tensor " << k;
      EXPECT_LT(max_rel(p.gpu[k], p.cpu[k]), 1.0 / 128) << k;  // at most one bf16 step apart
    }
  }
}

TEST(ForeachGpu, NonContiguousParameter) {
  KILN_NEED_GPU();
  Tensor base = randn({33, 17});
  Tensor bc = base.clone(), bg = base.to(kGpu);
  Tensor pc = bc.t().requires_grad_(true), pg = bg.t().requires_grad_(true);
  Adam oc({pc}, AdamOptions(0.1));
  Adam og({pg}, AdamOptions(0.1).fused(1));
  for (int s = 0; s < 3; ++s) {
    Tensor g = randn({17, 33});
    pc.mutable_grad() = g;
    pg.mutable_grad() = g.to(kGpu);
    oc.step();
    og.step();
  }
  EXPECT_LT(max_rel(bg, bc), 1e-5);
}

// 50 gradients (float32 and bfloat16) on the GPU, an inf in the 37th: the step is skipped, no
// parameter changes, the scale backs off. Then clean steps (unscale_ + step, and step alone,
// which a fused optimizer unscales itself) match a twin optimizer given the unscaled gradients.
TEST(ForeachGpu, GradScalerInjectedInfIn37thOf50) {
  KILN_NEED_GPU();
  for (bool fused : {false, true}) {
    std::vector<Tensor> ps, twin;
    for (int i = 0; i < 50; ++i) {
      Tensor p = randn({1 + 1000 * (i % 7)}, TensorOptions(i % 3 == 0 ? kBFloat16 : kFloat32));
      ps.push_back(p.to(kGpu).requires_grad_(true));
      twin.push_back(p.to(kGpu).requires_grad_(true));
    }
    AdamW opt(ps, AdamWOptions(1e-2).fused(fused));
    AdamW ot(twin, AdamWOptions(1e-2).fused(fused));
    amp::GradScaler scaler(1024.0, 2.0, 0.5, 100);
    std::vector<Tensor> before, grads;
    for (auto& p : ps) {
      before.push_back(p.detach().clone());
      Tensor g = randn(p.sizes(), TensorOptions(p.dtype())).to(kGpu);
      grads.push_back(g);
      p.mutable_grad() = g * 1024.0;
    }
    ps[36]
        .mutable_grad()
        .narrow(0, ps[36].numel() - 1, 1)
        .fill_(std::numeric_limits<double>::infinity());
    EXPECT_FALSE(scaler.step(opt)) << fused;
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 512.0);
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(max_rel(ps[i], before[i]), 0.0) << i;
    EXPECT_FALSE(opt.has_state(ps[0]));
    // unscale_ gives back the exact gradients (power-of-two scale), then step() runs.
    for (size_t i = 0; i < ps.size(); ++i) {
      ps[i].mutable_grad() = grads[i] * 512.0;
      twin[i].mutable_grad() = grads[i].clone();
    }
    scaler.unscale_(opt);
    for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(max_rel(ps[i].grad(), grads[i]), 0.0) << i;
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
    ot.step();
    // step() alone (the fused optimizer divides by the scale inside its update).
    for (size_t i = 0; i < ps.size(); ++i) {
      ps[i].mutable_grad() = grads[i] * scaler.get_scale();
      twin[i].mutable_grad() = grads[i].clone();
    }
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
    ot.step();
    for (size_t i = 0; i < ps.size(); ++i) {
      EXPECT_EQ(max_rel(ps[i].grad(), grads[i]), 0.0) << i;  // unscaled in place
      EXPECT_EQ(opt.state(ps[i]).step, 2);
      EXPECT_LT(max_rel(ps[i], twin[i]), 1e-6) << i;
    }
  }
}

// clip_grad_norm_ on the GPU against float64 sums over the host copies.
TEST(ForeachGpu, ClipGradNormMatchesFloat64Reference) {
  KILN_NEED_GPU();
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    std::vector<Tensor> ps;
    std::vector<std::vector<double>> g64;
    for (auto& s : shapes(false)) {
      Tensor g = randn(s, TensorOptions(kFloat32));
      g64.push_back(gpu_test::host(g));
      Tensor q = zeros(s, TensorOptions(kFloat32).device(kGpu)).requires_grad_(true);
      q.mutable_grad() = g.to(kGpu);
      ps.push_back(q);
    }
    double acc = 0;
    for (auto& v : g64)
      for (double x : v)
        acc = std::isinf(p) ? std::max(acc, std::fabs(x)) : acc + std::pow(std::fabs(x), p);
    const double total = std::isinf(p) ? acc : std::pow(acc, 1 / p);
    const double max_norm = total / 3;
    Tensor got = nn::utils::clip_grad_norm_(ps, max_norm, p);
    EXPECT_NEAR(got.item<double>(), total, 1e-5 * total) << p;
    const double coef = std::min(1.0, max_norm / (total + 1e-6));
    for (size_t i = 0; i < ps.size(); ++i) {
      std::vector<double> h = gpu_test::host(ps[i].grad());
      for (size_t j = 0; j < h.size(); ++j)
        ASSERT_NEAR(h[j], g64[i][j] * coef, 1e-5 * (std::fabs(g64[i][j]) + 1e-3)) << p << " " << i;
    }
  }
  // A non-finite total is an error with error_if_nonfinite, and nothing changes.
  Tensor q = zeros({5}, TensorOptions(kFloat32).device(kGpu)).requires_grad_(true);
  q.mutable_grad() =
      tensor({1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, 4.0f}).to(kGpu);
  EXPECT_THROW(nn::utils::clip_grad_norm_({q}, 1.0, 2.0, true), Error);
  EXPECT_EQ(gpu_test::host(q.grad())[0], 1.0);
}

}  // namespace
}  // namespace kiln
