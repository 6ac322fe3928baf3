// Inference tensors (InferenceMode marks, the saved-for-backward and in-place errors),
// checkpoint's RNG-state replay, and the differentiable out-of-place index_put.
#include <gtest/gtest.h>

#include <optional>

#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "kiln/random.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Runs f and returns the kiln::Error message ("" when nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- InferenceMode ----

TEST(InferenceTensors, MadeInsideAreMarkedOthersAreNot) {
  Tensor a = ones({3});
  Tensor b, v;
  {
    InferenceMode im;
    b = a * 2;
    v = b.view({3, 1});
  }
  EXPECT_FALSE(a.is_inference());
  EXPECT_TRUE(b.is_inference());
  EXPECT_TRUE(v.is_inference());         // a view of an inference tensor
  EXPECT_FALSE((b + 1).is_inference());  // made outside
  {
    InferenceMode off(false);
    EXPECT_FALSE((a * 2).is_inference());
  }
}

TEST(InferenceTensors, SavingOneForBackwardRaisesNamingTheOp) {
  Tensor b;
  {
    InferenceMode im;
    b = ones({3}) * 2;
  }
  Tensor w = ones({3}).requires_grad_(true);
  const std::string msg = error_of([&] { (b * w).sum(); });  // mul saves both inputs
  EXPECT_NE(msg.find("[mul]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Inference tensors cannot be saved for backward"), std::string::npos) << msg;
  // add saves nothing: allowed, as in PyTorch, and the gradient reaches w.
  Tensor y = (b + w).sum();
  y.backward();
  EXPECT_EQ(vals(w.grad()), std::vector<double>(3, 1.0));
  // A clone is a normal tensor.
  Tensor c = b.clone();
  EXPECT_FALSE(c.is_inference());
  EXPECT_NO_THROW((c * w).sum());
}

TEST(InferenceTensors, InplaceOutsideInferenceModeRaises) {
  // (Factories such as zeros() allocate and fill in place outside the op path; only op outputs
  // are marked for now, so the inference tensor here is an op's output.)
  Tensor b;
  {
    InferenceMode im;
    b = zeros({4}) * 0;
    b.add_(1);  // allowed inside
  }
  EXPECT_TRUE(b.is_inference());
  const std::string msg = error_of([&] { b.add_(1); });
  EXPECT_NE(msg.find("[add]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Inplace update to inference tensor outside InferenceMode"), std::string::npos)
      << msg;
  EXPECT_EQ(vals(b), std::vector<double>(4, 1.0));           // unchanged by the refused call
  EXPECT_NE(error_of([&] { b.view({2, 2}).mul_(3); }), "");  // through a view too
  EXPECT_NE(error_of([&] { kiln::add_out(b, ones({4}), ones({4})); }), "");  // out=
  // Reading it is fine, and a normal tensor may be updated in place inside inference mode.
  Tensor n = ones({4});
  {
    InferenceMode im;
    n.add_(b);
  }
  EXPECT_FALSE(n.is_inference());
  EXPECT_EQ(vals(n), std::vector<double>(4, 2.0));
}

// ---- checkpoint replays the RNG state ----

TEST(CheckpointRng, DropoutMaskIsReplayedInBackward) {
  manual_seed(123);
  Tensor x = rand({64}, TensorOptions(kFloat64)).add_(0.5).requires_grad_(true);
  std::vector<Tensor> masks;
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor d = nn::functional::dropout(in[0], 0.5, true);
    masks.push_back((d != 0).to(kFloat64));
    return (d * in[0]).sum();  // d/dx = 2 * mask * x / (1 - p)
  };
  Tensor out = utils::checkpoint(std::function<Tensor(const std::vector<Tensor>&)>(fn), {x});
  // The caller's random stream after the forward is where it was before the recomputation.
  std::vector<uint8_t> after_forward = default_generator().get_state();
  out.backward();
  EXPECT_EQ(default_generator().get_state(), after_forward);
  ASSERT_EQ(masks.size(), 2u);
  EXPECT_EQ(vals(masks[0]), vals(masks[1]));
  double kept = 0;
  for (double m : vals(masks[0])) kept += m;
  EXPECT_GT(kept, 10);
  EXPECT_LT(kept, 54);
  auto g = vals(x.grad()), m = vals(masks[0]), xv = vals(x);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2 * m[i] * xv[i] / 0.5, 1e-12) << i;
}

TEST(CheckpointRng, WithoutPreserveTheMaskIsRedrawn) {
  manual_seed(7);
  Tensor x = ones({256}, TensorOptions(kFloat64)).requires_grad_(true);
  std::vector<Tensor> masks;
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor d = nn::functional::dropout(in[0], 0.5, true);
    masks.push_back((d != 0).to(kFloat64));
    return d.sum();
  };
  Tensor out = utils::checkpoint(std::function<Tensor(const std::vector<Tensor>&)>(fn), {x},
                                 /*preserve_rng_state=*/false);
  out.backward();
  ASSERT_EQ(masks.size(), 2u);
  EXPECT_NE(vals(masks[0]), vals(masks[1]));  // 256 fair coins agreeing: p = 2^-256
}

// ---- index_put (out of place) is differentiable w.r.t. self and values ----

TEST(IndexPutAutograd, GradcheckSelfAndValues) {
  manual_seed(3);
  TensorOptions f64(kFloat64);
  Tensor x = randn({4, 3, 5}, f64).requires_grad_(true);
  Tensor idx = tensor({2, 0, 3}, TensorOptions(kInt64));
  Tensor idx2 = tensor({4, 1, 0}, TensorOptions(kInt64));
  // Adjacent indexed dims (no permutation), values broadcast over the last dim.
  Tensor v1 = randn({4, 1}, f64).requires_grad_(true);
  for (bool acc : {false, true}) {
    auto f = [&](const std::vector<Tensor>& in) {
      return index_put(in[0], {idx, std::nullopt, std::nullopt}, in[1], acc);
    };
    EXPECT_TRUE(
        autograd::gradcheck(autograd::Func(f), {x, randn({3, 3, 5}, f64).requires_grad_(true)}))
        << acc;
    auto g = [&](const std::vector<Tensor>& in) {
      return index_put(in[0], {std::nullopt, tensor({2, 0, 1}, TensorOptions(kInt64)), idx2}, in[1],
                       acc);
    };
    EXPECT_TRUE(autograd::gradcheck(autograd::Func(g), {x, v1})) << acc;
    // Non-adjacent indexed dims: the indexed dims move to the front (a permuted result).
    auto h = [&](const std::vector<Tensor>& in) {
      return index_put(in[0], {idx, std::nullopt, idx2}, in[1], acc);
    };
    EXPECT_TRUE(
        autograd::gradcheck(autograd::Func(h), {x, randn({3, 3}, f64).requires_grad_(true)}))
        << acc;
  }
}

TEST(IndexPutAutograd, OnlyValuesRequireGradAndDuplicateIndices) {
  TensorOptions f64(kFloat64);
  Tensor x = zeros({3, 2, 4}, f64);  // needs no gradient
  Tensor idx = tensor({1, 1, 2}, TensorOptions(kInt64));
  Tensor idx2 = tensor({0, 0, 3}, TensorOptions(kInt64));
  Tensor v = tensor({1.0, 2.0, 3.0}, f64).reshape({3, 1}).expand({3, 2}).contiguous();
  v.requires_grad_(true);
  // Non-adjacent dims with accumulate: out[i, :, j] += v; d(sum(out * w))/dv = w[i, :, j].
  Tensor w = arange(24, f64).reshape({3, 2, 4});
  Tensor out = index_put(x, {idx, std::nullopt, idx2}, v, true);
  EXPECT_EQ(out.sizes(), x.sizes());
  EXPECT_TRUE(out.requires_grad());
  (out * w).sum().backward();
  auto g = vals(v.grad()), wv = vals(w);
  const int64_t ii[3] = {1, 1, 2}, jj[3] = {0, 0, 3};
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(g[k * 2 + c], wv[ii[k] * 8 + c * 4 + jj[k]]) << k;
  // The forward values: row (1, :, 0) got 1 + 2, row (2, :, 3) got 3.
  auto o = vals(out);
  EXPECT_EQ(o[1 * 8 + 0 * 4 + 0], 3.0);
  EXPECT_EQ(o[2 * 8 + 1 * 4 + 3], 3.0);
  EXPECT_FALSE(x.requires_grad());
  EXPECT_EQ(vals(x), std::vector<double>(24, 0.0));  // x untouched
}

}  // namespace
}  // namespace kiln
