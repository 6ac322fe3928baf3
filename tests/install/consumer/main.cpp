// Uses the installed kiln: builds a tensor, adds, sums through a view.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  kiln::Tensor a = kiln::arange(4, kiln::kFloat32);  // 0 1 2 3
  kiln::Tensor b = a.view({2, 2}).t().contiguous();  // 0 2 / 1 3
  kiln::Tensor c = a + b.flatten();                  // 0 3 3 6
  std::cout << "consumer ok " << c[3].item<float>() << "\n";
  return 0;
}
