// Tests of nn::Module: registration, traversal, modes, to(), zero_grad, state dicts, printing,
// containers and ModuleHolder.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/autograd.h"
#include "kiln/nn/module.h"
#include "kiln/nn/modules/container.h"
#include "kiln/ops.h"

using namespace kiln;
using namespace kiln::nn;

namespace {

// y = x * w + b, elementwise; a buffer that counts nothing and a non-persistent one.
class AffineImpl : public Module {
 public:
  explicit AffineImpl(int64_t n) : Module("Affine") {
    w = register_parameter("w", kiln::arange(n, TensorOptions(kFloat32)).add(1));
    b = register_parameter("b", kiln::zeros({n}));
    steps = register_buffer("steps", kiln::zeros({}, TensorOptions(kInt64)));
    scratch = register_buffer("scratch", kiln::ones({n}), /*persistent=*/false);
    n_ = n;
  }
  Tensor forward(const Tensor& x) { return x.mul(w).add(b); }
  std::string extra_repr() const override { return "n=" + std::to_string(n_); }
  Tensor w, b, steps, scratch;
  int64_t n_;
};
KILN_MODULE(Affine);

class NetImpl : public Module {
 public:
  NetImpl() : Module("Net") {
    first = register_module("first", Affine(3));
    second = register_module("second", std::make_shared<AffineImpl>(3));
    scale = register_parameter("scale", kiln::full({1}, 2.0));
    none = register_parameter("none", Tensor());
  }
  Tensor forward(const Tensor& x) { return second->forward(first->forward(x)).mul(scale); }
  std::shared_ptr<AffineImpl> first, second;
  Tensor scale, none;
};
KILN_MODULE(Net);

std::vector<std::string> keys_of(const OrderedDict<Tensor>& d) { return d.keys(); }

}  // namespace

TEST(Module, NamedParametersInRegistrationOrder) {
  Net net;
  EXPECT_EQ(keys_of(net->named_parameters()),
            (std::vector<std::string>{"scale", "first.w", "first.b", "second.w", "second.b"}));
  EXPECT_EQ(keys_of(net->named_parameters(false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(net->parameters().size(), 5u);
  for (auto& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(
      keys_of(net->named_buffers()),
      (std::vector<std::string>{"first.steps", "first.scratch", "second.steps", "second.scratch"}));
  EXPECT_TRUE(net->named_parameters()["first.w"].is_same(net->first->w));
}

TEST(Module, ModulesAndChildren) {
  Net net;
  auto mods = net->named_modules();
  EXPECT_EQ(mods.keys(), (std::vector<std::string>{"", "first", "second"}));
  EXPECT_EQ(mods[""].get(), net.get());
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(net->get_submodule("second").get(), net->second.get());
  EXPECT_TRUE(net->get_parameter("second.b").is_same(net->second->b));
  EXPECT_TRUE(net->get_buffer("first.steps").is_same(net->first->steps));
  EXPECT_THROW(net->get_submodule("third"), Error);
  EXPECT_THROW(net->get_parameter("first.nope"), Error);
}

TEST(Module, SharedSubmoduleCountedOnce) {
  auto shared = std::make_shared<AffineImpl>(2);
  auto root = std::make_shared<Module>("Root");
  root->register_module("a", shared);
  root->register_module("b", shared);
  EXPECT_EQ(root->parameters().size(), 2u);
  EXPECT_EQ(root->modules().size(), 2u);
  // state_dict names it under every path, as PyTorch does: a.{w,b,steps}, b.{w,b,steps}.
  EXPECT_EQ(root->state_dict().keys(),
            (std::vector<std::string>{"a.w", "a.b", "a.steps", "b.w", "b.b", "b.steps"}));
}

TEST(Module, RegistrationErrors) {
  Module m("M");
  m.register_parameter("x", kiln::zeros({1}));
  EXPECT_THROW(m.register_buffer("x", kiln::zeros({1})), Error);
  EXPECT_THROW(m.register_parameter("a.b", kiln::zeros({1})), Error);
  EXPECT_THROW(m.register_parameter("", kiln::zeros({1})), Error);
  EXPECT_THROW(m.register_module("x", std::make_shared<Module>()), Error);
  EXPECT_THROW(m.register_module("n", std::shared_ptr<Module>()), Error);
}

TEST(Module, TrainEvalPropagates) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  EXPECT_FALSE(net->is_training());
  EXPECT_FALSE(net->first->is_training());
  net->train();
  EXPECT_TRUE(net->second->is_training());
}

TEST(Module, ApplyVisitsChildrenFirst) {
  Net net;
  std::vector<std::string> seen;
  net->apply([&](const std::string& name, Module&) { seen.push_back(name); });
  EXPECT_EQ(seen, (std::vector<std::string>{"first", "second", ""}));
  int count = 0;
  net->apply([&](Module&) { ++count; });
  EXPECT_EQ(count, 3);
}

TEST(Module, ZeroGrad) {
  Net net;
  for (auto& p : net->parameters()) p.mutable_grad() = kiln::ones_like(p);
  net->zero_grad(/*set_to_none=*/false);
  for (auto& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
  }
  net->zero_grad();
  for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToDtypeKeepsHandles) {
  Net net;
  Tensor w = net->first->w;
  net->first->w.mutable_grad() = kiln::ones({3});
  net->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);  // the old handle follows (shared impl)
  EXPECT_EQ(net->first->w.dtype(), kFloat64);
  EXPECT_EQ(net->first->w.grad().dtype(), kFloat64);
  EXPECT_EQ(net->first->steps.dtype(), kInt64);  // integer buffers keep their dtype
  EXPECT_EQ(net->first->scratch.dtype(), kFloat64);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(w.select(0, i).item<double>(), static_cast<double>(i + 1));
  net->to(Device(kCPU), kFloat32);
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_THROW(net->to(kInt32), Error);
}

TEST(Module, StateDictSkipsNonPersistentAndNone) {
  Net net;
  auto sd = net->state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"scale", "first.w", "first.b", "first.steps",
                                                 "second.w", "second.b", "second.steps"}));
  EXPECT_FALSE(sd["first.w"].requires_grad());
  // Shares data with the parameter.
  EXPECT_EQ(sd["first.w"].data_ptr(), net->first->w.data_ptr());
}

TEST(Module, LoadStateDictCopiesValues) {
  Net a, b;
  {
    kiln::NoGradGuard ng;
    a->first->w.fill_(7.0);
    a->second->b.fill_(-1.5);
    a->first->steps.fill_(42);
  }
  auto r = b->load_state_dict(a->state_dict());
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(r.unexpected_keys.empty());
  EXPECT_EQ(b->first->w.select(0, 2).item<double>(), 7.0);
  EXPECT_EQ(b->second->b.select(0, 0).item<double>(), -1.5);
  EXPECT_EQ(b->first->steps.item<int64_t>(), 42);
  EXPECT_FALSE(b->first->w.is_same(a->first->w));
}

TEST(Module, LoadStateDictStrictAndNonStrict) {
  Net net;
  auto sd = net->state_dict();
  StateDict partial;
  for (auto& it : sd)
    if (it.key != "second.w") partial.insert(it.key, it.value.clone().fill_(3.0));
  partial.insert("extra.weight", kiln::zeros({1}));
  Tensor before = net->first->w.clone();
  try {
    net->load_state_dict(partial);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("second.w"), std::string::npos) << msg;
    EXPECT_NE(msg.find("extra.weight"), std::string::npos) << msg;
  }
  EXPECT_TRUE(net->first->w.equal(before));  // strict failure changes nothing
  auto r = net->load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"second.w"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(net->first->w.select(0, 0).item<double>(), 3.0);
}

TEST(Module, LoadStateDictShapeMismatchIsAnError) {
  Net net;
  auto sd = net->state_dict();
  sd["first.w"] = kiln::zeros({4});
  Tensor before = net->first->b.clone().fill_(5.0);
  {
    kiln::NoGradGuard ng;
    net->first->b.copy_(before);
  }
  EXPECT_THROW(net->load_state_dict(sd, /*strict=*/false), Error);
  EXPECT_TRUE(net->first->b.equal(before));
}

TEST(Module, PrintsLikePyTorch) {
  Net net;
  std::ostringstream os;
  os << *net;
  EXPECT_EQ(os.str(), "Net(\n  (first): Affine(n=3)\n  (second): Affine(n=3)\n)");
  Sequential seq(Affine(2), Sequential(Affine(1)));
  std::ostringstream os2;
  os2 << seq;
  EXPECT_EQ(os2.str(),
            "Sequential(\n  (0): Affine(n=2)\n  (1): Sequential(\n    (0): Affine(n=1)\n  )\n)");
}

TEST(Module, DefaultNameFromType) {
  auto m = std::make_shared<AffineImpl>(1);
  Module plain;
  EXPECT_EQ(m->name(), "Affine");
  EXPECT_EQ(plain.name(), "Module");
}

TEST(Containers, SequentialForwardAndIndexing) {
  Sequential seq(Affine(3), Functional([](const Tensor& x) { return x.add(1.0); }));
  seq->push_back("last", Affine(3));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq->named_children().keys(), (std::vector<std::string>{"0", "1", "last"}));
  Tensor x = kiln::tensor({1.0f, 2.0f, 3.0f});
  Tensor y = seq(x);
  // ((x * [1,2,3]) + 1) * [1,2,3]
  std::vector<double> expect = {2.0, 10.0, 30.0};
  for (int64_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(y.select(0, i).item<double>(), expect[i]);
  EXPECT_NE(seq->ptr<AffineImpl>(0), nullptr);
  EXPECT_EQ(seq->ptr<AffineImpl>(1), nullptr);
  EXPECT_THROW((*seq)[3], Error);
  EXPECT_EQ(seq->parameters().size(), 4u);
}

TEST(Containers, ModuleListAndDict) {
  ModuleList list(Affine(1), Affine(2));
  list->push_back(Affine(3));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->ptr<AffineImpl>(-1)->n_, 3);
  EXPECT_THROW((*list)[3], Error);
  EXPECT_EQ(keys_of(list->named_parameters()).front(), "0.w");
  ModuleDict dict;
  dict->insert("enc", Affine(4));
  dict->insert("dec", Affine(5));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "dec"}));
  EXPECT_TRUE(dict->contains("dec"));
  EXPECT_EQ(dict->ptr<AffineImpl>("dec")->n_, 5);
  EXPECT_THROW((*dict)["nope"], Error);
  EXPECT_THROW(dict->insert("enc", Affine(1)), Error);
}

TEST(Containers, HolderBasics) {
  Affine a(2);
  Affine same = a;
  EXPECT_EQ(a.get(), same.get());
  Affine empty(nullptr);
  EXPECT_TRUE(empty.is_empty());
  EXPECT_THROW(empty->forward(kiln::zeros({2})), Error);
}
