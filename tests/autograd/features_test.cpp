// Hooks, the in-place version check, in-place ops and CopySlices, views, custom Functions,
// anomaly mode and checkpointing, against PyTorch's behaviour (values derived by hand).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  std::vector<double> v;
  for (const Scalar& s : t.detach().tolist_flat()) v.push_back(s.to<double>());
  return v;
}

void expect_near_vec(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

Tensor leaf(std::vector<double> v) {
  return kiln::from_vector(v, TensorOptions(DType::Float64)).requires_grad_();
}
Tensor constant(std::vector<double> v) {
  return kiln::from_vector(v, TensorOptions(DType::Float64));
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// ---- hooks ----

TEST(AutogradHooks, TensorHookReplacesGradient) {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 3;
  int calls = 0;
  h.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 2;
  });
  h.sum().backward();
  EXPECT_EQ(calls, 1);
  expect_near_vec(x.grad(), {6.0, 6.0});
}

TEST(AutogradHooks, VoidHookObservesAndRemoveHookWorks) {
  Tensor x = leaf({1.0, 2.0});
  std::vector<double> seen;
  unsigned h = x.register_hook([&](const Tensor& g) { seen = vals(g); });
  (x * x).sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{2.0, 4.0}));
  x.remove_hook(h);
  seen.clear();
  (x * 5).sum().backward();
  EXPECT_TRUE(seen.empty());
  expect_near_vec(x.grad(), {7.0, 9.0});
}

TEST(AutogradHooks, LeafHookChangesAccumulatedGrad) {
  Tensor x = leaf({1.0});
  x.register_hook([](const Tensor& g) { return g * 10; });
  (x * 2).sum().backward();
  expect_near_vec(x.grad(), {20.0});
}

TEST(AutogradHooks, PostAccumulateGradHookSeesGrad) {
  Tensor x = leaf({3.0});
  std::vector<double> seen;
  x.register_post_accumulate_grad_hook([&](const Tensor& t) { seen = vals(t.grad()); });
  (x * x).sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{6.0}));
  Tensor y = x * 2;
  EXPECT_THROW(y.register_post_accumulate_grad_hook([](const Tensor&) {}), Error);
}

// ---- in-place ----

TEST(AutogradInplace, SavedTensorModifiedInPlaceNamesTheOp) {
  Tensor x = leaf({0.5, -0.5});
  Tensor s = x.sigmoid();  // sigmoid saves its output
  Tensor y = s * 1;
  s.mul_(2);
  expect_error([&] { y.sum().backward(); }, "sigmoid");
  Tensor x2 = leaf({0.5});
  Tensor s2 = x2.sigmoid();
  s2.add_(1);
  expect_error([&] { s2.sum().backward(); }, "modified by an inplace operation");
}

TEST(AutogradInplace, LeafRequiringGradCannotBeModified) {
  Tensor x = leaf({1.0});
  expect_error([&] { x.add_(1); }, "leaf Variable that requires grad");
  expect_error([&] { x.narrow(0, 0, 1).mul_(2); }, "view of a leaf Variable");
  NoGradGuard ng;
  x.add_(1);  // fine without grad mode (how optimizers update parameters)
}

TEST(AutogradInplace, InplaceOnNonLeafRebasesHistory) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * x;
  y.mul_(3);
  y.add_(x);
  EXPECT_EQ(y.grad_fn()->name(), "AddBackward0");
  y.sum().backward();
  // y = 3x^2 + x -> 6x + 1
  expect_near_vec(x.grad(), {7.0, 13.0});
}

TEST(AutogradInplace, InplaceWhoseVjpNeedsTheOldValue) {
  // y.mul_(y) saves the old y: d/dx (x^2)^2 = 4x^3
  Tensor x = leaf({1.5});
  Tensor y = x * x;
  y.mul_(y);
  y.sum().backward();
  expect_near_vec(x.grad(), {4 * 1.5 * 1.5 * 1.5}, 1e-12);
}

TEST(AutogradInplace, CopyIntoViewOfBufferMakesBufferDifferentiable) {
  Tensor w = leaf({2.0, -1.0});
  Tensor buf = kiln::zeros({3}, TensorOptions(DType::Float64));
  buf.narrow(0, 1, 2).copy_(w * w);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_EQ(buf.grad_fn()->name(), "CopySlices");
  Tensor c = constant({5.0, 7.0, 11.0});
  (buf * c).sum().backward();
  // buf[1:3] = w^2 -> d/dw = 2w * c[1:3]
  expect_near_vec(w.grad(), {2 * 2.0 * 7.0, 2 * -1.0 * 11.0});
}

TEST(AutogradInplace, InplaceOnViewOfNonLeafUsesCopySlices) {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor b = x * 1;
  Tensor v = b.narrow(0, 0, 2);
  v.mul_(v);  // b = [x0^2, x1^2, x2]
  Tensor c = constant({1.0, 10.0, 100.0});
  (b * c).sum().backward();
  expect_near_vec(x.grad(), {2 * 1.0 * 1.0, 2 * 2.0 * 10.0, 100.0});
}

TEST(AutogradInplace, SiblingViewSeesBaseModification) {
  Tensor x = leaf({1.0, 2.0});
  Tensor b = x * 1;
  Tensor v1 = b.select(0, 0);
  Tensor v2 = b.select(0, 1);
  v1.mul_(5);  // rewrites b's history; v2 must follow
  (b.sum() + v2 * 3).backward();
  expect_near_vec(x.grad(), {5.0, 1.0 + 3.0});
}

TEST(AutogradInplace, ZeroOnViewKillsGradientThere) {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor b = x * 2;
  b.select(0, 1).zero_();
  b.sum().backward();
  expect_near_vec(x.grad(), {2.0, 0.0, 2.0});
}

TEST(AutogradInplace, OutArgumentWithGradIsRejected) {
  Tensor x = leaf({1.0});
  Tensor out = kiln::empty({1}, TensorOptions(DType::Float64));
  expect_error([&] { kiln::exp_out(out, x); }, "out=");
}

// ---- views ----

TEST(AutogradViews, ViewChainsGradients) {
  Tensor x = kiln::arange(6, TensorOptions(DType::Float64)).requires_grad_();
  Tensor m = x.view({2, 3});
  Tensor t = m.t();
  Tensor c = constant({1, 2, 3, 4, 5, 6}).view({3, 2});
  (t * c).sum().backward();
  // t[i][j] = x[j*3 + i] -> grad x[j*3+i] = c[i][j]
  expect_near_vec(x.grad(), {1, 3, 5, 2, 4, 6});
  EXPECT_TRUE(t.is_view());
  EXPECT_EQ(t.grad_fn()->name(), "TransposeBackward0");
}

TEST(AutogradViews, ExpandSumsAndSelectScatters) {
  Tensor x = leaf({1.0, 2.0});
  Tensor e = x.unsqueeze(0).expand({3, 2});
  (e * constant({1, 2, 3, 4, 5, 6}).view({3, 2})).sum().backward();
  expect_near_vec(x.grad(), {1 + 3 + 5, 2 + 4 + 6});
  Tensor y = leaf({1.0, 2.0, 3.0, 4.0});
  (y.view({2, 2}).select(1, 1) * constant({10, 20})).sum().backward();
  expect_near_vec(y.grad(), {0, 10, 0, 20});
}

TEST(AutogradViews, OverlappingUnfoldAccumulates) {
  Tensor x = leaf({1, 2, 3, 4, 5});
  Tensor u = x.unfold(0, 3, 1);  // windows [0..2], [1..3], [2..4]
  u.sum().backward();
  expect_near_vec(x.grad(), {1, 2, 3, 2, 1});
}

TEST(AutogradViews, RealAndImag) {
  Tensor z = kiln::zeros({2}, TensorOptions(DType::Complex128)).requires_grad_();
  (z.real() * constant({1, 2}) + z.imag() * constant({3, 4})).sum().backward();
  auto g = z.grad().tolist_flat();
  EXPECT_NEAR(g[0].to<complex<double>>().real(), 1, 1e-12);
  EXPECT_NEAR(g[0].to<complex<double>>().imag(), 3, 1e-12);
  EXPECT_NEAR(g[1].to<complex<double>>().real(), 2, 1e-12);
  EXPECT_NEAR(g[1].to<complex<double>>().imag(), 4, 1e-12);
}

// ---- custom functions ----

struct Cube : autograd::Function<Cube> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * 3 * x * x};
  }
};

struct ScaleBy : autograd::Function<ScaleBy> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double k,
                        const Tensor& y) {
    ctx->saved_data["k"] = k;
    ctx->saved_data["needs"] = std::make_pair(ctx->needs_input_grad(0), ctx->needs_input_grad(1));
    return x * k + y;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list g) {
    double k = std::any_cast<double>(ctx->saved_data["k"]);
    return {g[0] * k, g[0]};
  }
};

struct InplaceDouble : autograd::Function<InplaceDouble> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) {
    return {g[0] * 2};
  }
};

struct WrongGrad : autograd::Function<WrongGrad> {
  static Tensor forward(autograd::AutogradContext*, const Tensor& x) { return x * x; }
  static autograd::variable_list backward(autograd::AutogradContext*, autograd::variable_list g) {
    return {g[0] * 3};  // wrong on purpose: should be 2x
  }
};

// Two outputs, the second marked non-differentiable; backward sees zeros for it.
struct SplitSign : autograd::Function<SplitSign> {
  static autograd::variable_list forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor s = kiln::sign(x);
    ctx->save_for_backward({s});
    ctx->mark_non_differentiable({s});
    return {x * s, s};
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list g) {
    EXPECT_TRUE(g[1].defined());  // materialized zeros
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

TEST(AutogradFunction, MultipleOutputsAndNonDifferentiable) {
  Tensor x = leaf({-2.0, 3.0});
  auto outs = SplitSign::apply(x);
  EXPECT_TRUE(outs[0].requires_grad());
  EXPECT_FALSE(outs[1].requires_grad());
  outs[0].sum().backward();
  expect_near_vec(x.grad(), {-1.0, 1.0});  // d|x|/dx = sign(x)
}

TEST(AutogradFunction, CustomForwardBackwardAndDoubleBackward) {
  Tensor x = leaf({0.5, -2.0});
  Tensor y = Cube::apply(x);
  EXPECT_EQ(y.grad_fn()->name(), "CubeBackward");
  auto g = autograd::grad({y.sum()}, {x}, {}, std::nullopt, true);
  expect_near_vec(g[0], {3 * 0.25, 3 * 4.0});
  g[0].sum().backward();  // backward of the backward: 6x
  expect_near_vec(x.grad(), {3.0, -12.0});
}

TEST(AutogradFunction, NonTensorArgumentsAndNeedsInputGrad) {
  Tensor x = leaf({1.0});
  Tensor y = constant({2.0});
  Tensor out = ScaleBy::apply(x, 4.0, y);
  out.sum().backward();
  expect_near_vec(x.grad(), {4.0});
  EXPECT_FALSE(y.grad().defined());
}

TEST(AutogradFunction, MarkDirtyRebasesInput) {
  Tensor x = leaf({1.5});
  Tensor b = x * 1;
  Tensor out = InplaceDouble::apply(b);
  EXPECT_TRUE(out.is_same(b));
  (out * 3).sum().backward();
  expect_near_vec(x.grad(), {6.0});
}

TEST(AutogradFunction, GradcheckCatchesAWrongBackward) {
  Tensor x = leaf({0.7, -1.1});
  autograd::GradcheckOptions o;
  o.raise_exception = false;
  EXPECT_FALSE(autograd::gradcheck(
      autograd::Func([](const autograd::variable_list& xs) { return WrongGrad::apply(xs[0]); }),
      {x}, o));
  EXPECT_TRUE(autograd::gradcheck(
      autograd::Func([](const autograd::variable_list& xs) { return Cube::apply(xs[0]); }), {x},
      o));
  EXPECT_TRUE(autograd::gradgradcheck(
      autograd::Func([](const autograd::variable_list& xs) { return Cube::apply(xs[0]); }), {x}, {},
      o));
  o.raise_exception = true;
  EXPECT_THROW(autograd::gradcheck(autograd::Func([](const autograd::variable_list& xs) {
                                     return WrongGrad::apply(xs[0]);
                                   }),
                                   {x}, o),
               Error);
}

// ---- anomaly mode ----

TEST(AutogradAnomaly, NamesTheForwardOpThatProducedNan) {
  autograd::DetectAnomalyGuard guard;
  Tensor x = leaf({-1.0, 4.0});
  Tensor y = x.sqrt().sum();  // sqrt(-1) = nan: its backward produces nan
  EXPECT_TRUE(autograd::AnomalyMode::is_enabled());
  expect_error([&] { y.backward(); }, "sqrt");
}

TEST(AutogradAnomaly, OffByDefault) {
  EXPECT_FALSE(autograd::AnomalyMode::is_enabled());
  Tensor x = leaf({-1.0});
  x.sqrt().sum().backward();  // nan gradient, no error
  EXPECT_TRUE(std::isnan(vals(x.grad())[0]));
}

// ---- lifetime: saved outputs must not keep their own node alive (no reference cycles) ----

TEST(AutogradLifetime, GraphIsFreedWithItsTensors) {
  std::weak_ptr<AutogradNode> exp_node, fn_node, cs_node;
  {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = x.exp();  // saves its output
    exp_node = y.grad_fn();
    Tensor z = Cube::apply(y);
    fn_node = z.grad_fn();
    Tensor b = z * 1;
    b.narrow(0, 0, 1).mul_(2);
    cs_node = b.grad_fn();
    EXPECT_FALSE(exp_node.expired());
  }
  EXPECT_TRUE(exp_node.expired());
  EXPECT_TRUE(fn_node.expired());
  EXPECT_TRUE(cs_node.expired());
}

// ---- checkpoint ----

TEST(AutogradCheckpoint, SameGradientsAsWithout) {
  auto f = [](const std::vector<Tensor>& in) { return (in[0].sin() * in[1]).exp(); };
  Tensor a = leaf({0.3, -0.4}), b = leaf({1.2, 0.9});
  f({a, b}).sum().backward();
  std::vector<double> ga = vals(a.grad()), gb = vals(b.grad());
  Tensor a2 = leaf({0.3, -0.4}), b2 = leaf({1.2, 0.9});
  int calls = 0;
  Tensor out = utils::checkpoint(
      std::function<Tensor(const std::vector<Tensor>&)>([&](const std::vector<Tensor>& in) {
        ++calls;
        return f(in);
      }),
      {a2, b2});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out.grad_fn()->name(), "CheckpointFunctionBackward");
  out.sum().backward();
  EXPECT_EQ(calls, 2);  // recomputed in backward
  expect_near_vec(a2.grad(), ga);
  expect_near_vec(b2.grad(), gb);
}

}  // namespace
}  // namespace kiln
