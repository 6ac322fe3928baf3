// Checkpoints of modules and optimizers through kiln::save/load, and interoperability with the
// `safetensors` Python package (skipped with a message when python3 + safetensors + numpy are
// not installed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "kiln/optim/optim.h"
#include "kiln/serialize.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kiln_ckpt_XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return mkdtemp(buf.data());
}

class TwoLayerImpl : public nn::Module {
 public:
  TwoLayerImpl() : nn::Module("TwoLayer") {
    w1 = register_parameter("w1", kiln::randn({4, 3}));
    b1 = register_parameter("b1", kiln::randn({4}));
    count = register_buffer("count", kiln::full({}, 7, TensorOptions(kInt64)));
  }
  Tensor w1, b1, count;
};

bool python_safetensors_available() {
  return std::system("python3 -c 'import safetensors, numpy' > /dev/null 2>&1") == 0;
}

}  // namespace

TEST(Checkpoint, ModuleRoundTrip) {
  std::string dir = temp_dir();
  auto a = std::make_shared<TwoLayerImpl>();
  auto b = std::make_shared<TwoLayerImpl>();
  {
    NoGradGuard ng;
    b->count.fill_(0);
  }
  save(*a, dir + "/m.safetensors");
  auto r = load(*b, dir + "/m.safetensors");
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(b->w1.equal(a->w1));
  EXPECT_TRUE(b->b1.equal(a->b1));
  EXPECT_EQ(b->count.item<int64_t>(), 7);
  fs::remove_all(dir);
}

TEST(Checkpoint, OptimizerResumesIdentically) {
  std::string dir = temp_dir();
  auto grad = [](int s) { return kiln::full({4, 3}, 0.1 * (s + 1)).sin(); };
  Tensor p1 = kiln::randn({4, 3}).requires_grad_();
  optim::AdamW o1({p1}, optim::AdamWOptions(0.01).amsgrad(true));
  for (int s = 0; s < 3; ++s) {
    p1.mutable_grad() = grad(s);
    o1.step();
  }
  save(o1, dir + "/opt.safetensors");
  Tensor p2 = p1.detach().clone().requires_grad_();
  optim::AdamW o2({p2}, optim::AdamWOptions(0.5));
  load(o2, dir + "/opt.safetensors");
  EXPECT_DOUBLE_EQ(o2.param_groups()[0].lr(), 0.01);
  EXPECT_EQ(o2.state(p2).step, 3);
  for (int s = 3; s < 6; ++s) {
    p1.mutable_grad() = grad(s);
    o1.step();
    p2.mutable_grad() = grad(s);
    o2.step();
  }
  EXPECT_TRUE(p1.detach().equal(p2.detach()));
  // The wrong optimizer type, or a plain tensor file, is an error.
  optim::SGD sgd({p2});
  EXPECT_THROW(load(sgd, dir + "/opt.safetensors"), Error);
  save(p1.detach(), dir + "/t.safetensors");
  EXPECT_THROW(load(o2, dir + "/t.safetensors"), Error);
  fs::remove_all(dir);
}

TEST(Checkpoint, PythonSafetensorsInterop) {
  if (!python_safetensors_available()) {
    GTEST_SKIP() << "python3 with the safetensors and numpy packages is not installed";
  }
  std::string dir = temp_dir();
  OrderedDict<Tensor> d;
  d.insert("w", kiln::arange(12, TensorOptions(kFloat32)).reshape({3, 4}).div(8.0));
  d.insert("i", kiln::arange(-3, 3));
  d.insert("m", kiln::arange(4).eq(2));
  d.insert("h", kiln::arange(5, TensorOptions(kFloat16)));
  save(d, dir + "/k.safetensors", {{"origin", "kiln"}});
  // Python checks kiln's file and writes its own.
  std::string script = dir + "/check.py";
  std::ofstream(script) << R"(import sys, numpy as np
from safetensors.numpy import load_file, save_file
from safetensors import safe_open
d = sys.argv[1]
t = load_file(d + "/k.safetensors")
assert np.array_equal(t["w"], (np.arange(12, dtype=np.float32).reshape(3, 4) / 8)), t["w"]
assert t["i"].dtype == np.int64 and list(t["i"]) == [-3, -2, -1, 0, 1, 2]
assert t["m"].dtype == np.bool_ and list(t["m"]) == [False, False, True, False]
assert t["h"].dtype == np.float16 and list(t["h"]) == [0, 1, 2, 3, 4]
with safe_open(d + "/k.safetensors", "np") as f:
    assert f.metadata() == {"origin": "kiln"}, f.metadata()
save_file({"a": np.linspace(0, 1, 7).astype(np.float64), "b": np.array([[1, 2], [3, 4]], dtype=np.int32),
           "c": np.array(True)}, d + "/p.safetensors", metadata={"origin": "python"})
)";
  std::string cmd = "python3 " + script + " " + dir;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the Python check of kiln's file failed";
  auto p = load(dir + "/p.safetensors");
  ASSERT_EQ(p.size(), 3u);
  Tensor a = p["a"];
  EXPECT_EQ(a.dtype(), kFloat64);
  for (int64_t k = 0; k < 7; ++k) EXPECT_DOUBLE_EQ(a.select(0, k).item<double>(), k / 6.0);
  EXPECT_EQ(p["b"].dtype(), kInt32);
  EXPECT_EQ(p["b"].select(0, 1).select(0, 0).item<int64_t>(), 3);
  EXPECT_EQ(p["c"].dim(), 0);
  EXPECT_TRUE(p["c"].item<bool>());
  EXPECT_EQ(load_metadata(dir + "/p.safetensors").at("origin"), "python");
  fs::remove_all(dir);
}
