// GPU shape kernels beyond the op table: cat with mixed dtypes and strided inputs, flip,
// tril/triu in place on a non-contiguous view, diag_embed, repeat_interleave, and a cat whose
// output passes 2^31 elements. Skip without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace gpu_test;

TEST(ShapeGpu, ShapeOpsMatchTheCpuOnStridedInputs) {
  KILN_NEED_GPU();
  Tensor a = from_vector(rand_vec(6 * 8 * 5, 31)).reshape({6, 8, 5}).to(DType::Float32);
  Tensor b = from_vector(rand_vec(6 * 3 * 5, 32)).reshape({6, 3, 5});  // float64: promotes
  Tensor ag = a.to(kGpu).transpose(0, 2).transpose(0, 2);              // same values
  Tensor at = a.transpose(1, 2), agt = a.to(kGpu).transpose(1, 2);     // non-contiguous
  EXPECT_TRUE(bit_equal(cat({ag, b.to(kGpu)}, 1), cat({a, b}, 1)));
  EXPECT_TRUE(bit_equal(cat({agt, agt}, 0), cat({at, at}, 0)));
  EXPECT_TRUE(bit_equal(flip(agt, {0, 2}), flip(at, {0, 2})));
  for (int64_t k : {-2, 0, 3}) {
    EXPECT_TRUE(bit_equal(tril(agt, k), tril(at, k)));
    EXPECT_TRUE(bit_equal(triu(agt, k), triu(at, k)));
  }
  Tensor m = from_vector(rand_vec(7 * 9, 33)).reshape({7, 9});
  Tensor mg = m.to(kGpu);
  mg.t().tril_(1);  // in place through a transposed view
  Tensor mc = m.clone();
  mc.t().tril_(1);
  EXPECT_TRUE(bit_equal(mg, mc));
  EXPECT_TRUE(bit_equal(diag_embed(agt, 1, 0, 2), diag_embed(at, 1, 0, 2)));
  Tensor reps = from_vector(std::vector<int64_t>{0, 3, 1, 2, 0, 5, 1, 1});
  EXPECT_TRUE(bit_equal(repeat_interleave(agt.transpose(0, 2), reps, 0),
                        repeat_interleave(at.transpose(0, 2), reps, 0)));
  EXPECT_TRUE(bit_equal(repeat_interleave(agt, 3, 1), repeat_interleave(at, 3, 1)));
}

TEST(ShapeGpu, CatPast2To31Elements) {
  KILN_NEED_GPU();
  const int64_t n = (int64_t{1} << 30) + 10;
  Tensor a = ones({n}, TensorOptions(DType::Int8).device(kGpu));
  Tensor b = full({n}, 2, TensorOptions(DType::Int8).device(kGpu));
  Tensor c = cat({a, b.view({1, n}).expand({2, n}).reshape({2 * n})}, 0);  // 3n > 2^31
  ASSERT_EQ(c.numel(), 3 * n);
  EXPECT_EQ(host(c.narrow(0, n - 2, 4)), (std::vector<double>{1, 1, 2, 2}));
  EXPECT_EQ(host(c.narrow(0, 3 * n - 2, 2)), (std::vector<double>{2, 2}));
}

}  // namespace
}  // namespace kiln
