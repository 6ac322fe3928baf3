// tensor_tour: the demo (scripts/demo). A short tour of kiln tensors -- factories, dtypes,
// broadcasting, math, views, reductions, matmul, printing -- each result printed as PyTorch would.
#include <kiln/kiln.h>
#include <kiln/ops/linalg.h>
#include <kiln/ops/reduce.h>
#include <kiln/print.h>

#include <iostream>
#include <string>

namespace {

void show(const std::string& code, const kiln::Tensor& result) {
  std::cout << ">>> " << code << "\n" << result << "\n\n";
}

}  // namespace

int main() {
  using kiln::Tensor;

  std::cout << "kiln tensor tour (compare with the same lines in PyTorch)\n\n";

  // Factories: the dtype follows the values, as torch.tensor.
  Tensor a = kiln::tensor({{1., 2., 3.}, {4., 5., 6.}});
  show("a = kiln::tensor({{1., 2., 3.}, {4., 5., 6.}})", a);
  show("kiln::arange(6).reshape({2, 3})", kiln::arange(6).reshape({2, 3}));
  show("kiln::zeros({2, 2}, kiln::kInt32)", kiln::zeros({2, 2}, kiln::kInt32));
  show("kiln::linspace(0, 1, 5)", kiln::linspace(0, 1, 5));
  show("kiln::eye(3)", kiln::eye(3));
  show("kiln::tensor({true, false})", kiln::tensor({true, false}));

  // Arithmetic, broadcasting and type promotion.
  show("a + 1", a + 1);
  show("a * a", a * a);
  show("a + kiln::tensor({10., 20., 30.})  // broadcasts over rows",
       a + kiln::tensor({10., 20., 30.}));
  show("kiln::arange(3) + 0.5  // int64 + float -> float32", kiln::arange(3) + 0.5);
  show("kiln::arange(3, kiln::kInt32) * 2  // stays int32", kiln::arange(3, kiln::kInt32) * 2);
  show("a / 3", a / 3);

  // Elementwise math, with nan/inf where the math says so.
  show("kiln::exp(a)", kiln::exp(a));
  show("kiln::sqrt(kiln::tensor({4., -1., 0.}))", kiln::sqrt(kiln::tensor({4., -1., 0.})));
  show("1.0 / kiln::tensor({0., 2.})", 1.0 / kiln::tensor({0., 2.}));
  show("kiln::sigmoid(kiln::linspace(-2, 2, 5))", kiln::sigmoid(kiln::linspace(-2, 2, 5)));

  // Views share storage with their base.
  show("a.t()", a.t());
  show("a.select(1, 2)  // column 2", a.select(1, 2));
  Tensor b = a.clone();
  b.select(0, 0).fill_(-1);
  show("b = a.clone(); b.select(0, 0).fill_(-1); b", b);

  // Reductions and matrix products.
  show("a.sum()", a.sum());
  show("a.sum({1})", a.sum({1}));
  show("kiln::mean(a, {0})", kiln::mean(a, {0}));
  show("kiln::matmul(a, a.t())", kiln::matmul(a, a.t()));

  // Other dtypes.
  show("a.to(kiln::kFloat16)", a.to(kiln::kFloat16));
  show("kiln::tensor({kiln::complex<double>(1, 2), kiln::complex<double>(0, -1)})",
       kiln::tensor({kiln::complex<double>(1, 2), kiln::complex<double>(0, -1)}));

  // Large tensors are summarized, small values switch to scientific notation.
  show("kiln::arange(10000.).reshape({100, 100})", kiln::arange(10000.).reshape({100, 100}));
  show("kiln::tensor({1e-6, 1.0})", kiln::tensor({1e-6, 1.0}));
  kiln::set_printoptions(/*precision=*/2);
  show("kiln::set_printoptions(2); kiln::tensor({3.14159, 2.71828})",
       kiln::tensor({3.14159, 2.71828}));
  kiln::set_printoptions_profile("default");

  // Errors a user can cause are exceptions that name the op and the values.
  try {
    Tensor bad = a + kiln::ones({4});
    std::cout << bad << "\n";
  } catch (const kiln::Error& e) {
    std::cout << ">>> a + kiln::ones({4})\nkiln::Error: " << e.what() << "\n";
  }
  return 0;
}
