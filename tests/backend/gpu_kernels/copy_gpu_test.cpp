// GPU copy paths of Note [Vectorized strided copies] (src/kernels/gpu/copy_kernels.cu): packed
// copies of layouts with a unit-stride innermost dimension, tiled transposes, and the autocast
// casts, each compared bit for bit with the same copy done on the CPU. Skip without a GPU.
#include <gtest/gtest.h>

#include "gpu_test_util.h"

namespace kiln {
namespace {

using gpu_test::bit_equal;
using gpu_test::kCpu;
using gpu_test::kGpu;

// A CPU tensor of `dt` with distinct values (exact in every dtype used here: small integers).
Tensor values(IntArrayRef shape, DType dt) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return arange(n, TensorOptions(kFloat32)).remainder(251.0).sub(125.0).reshape(shape).to(dt);
}

// src (a view of a CPU tensor, made by `view`) copied on the GPU, and cast to `to`, equals the
// same on the CPU.
template <class View>
void expect_copy_matches(IntArrayRef shape, DType from, DType to, View view) {
  Tensor cpu = values(shape, from);
  Tensor gpu = cpu.to(kGpu);
  Tensor want = view(cpu).to(to).contiguous();
  Tensor got = view(gpu).to(to).contiguous();
  EXPECT_TRUE(bit_equal(got, want))
      << "shape " << shape << " " << dtype_name(from) << " -> " << dtype_name(to);
  // copy_ into a strided destination too (column-major for a 2-D result).
  if (want.dim() == 2) {
    Tensor dst_cpu = empty({want.size(1), want.size(0)}, TensorOptions(to)).t();
    Tensor dst_gpu = empty({want.size(1), want.size(0)}, TensorOptions(to).device(kGpu)).t();
    dst_cpu.copy_(view(cpu));
    dst_gpu.copy_(view(gpu));
    EXPECT_TRUE(bit_equal(dst_gpu, dst_cpu)) << "strided destination, shape " << shape;
  }
}

TEST(CopyGpu, HeadSplitPermutesMovePacks) {
  KILN_NEED_GPU();
  for (DType dt : {kBFloat16, kFloat16, kFloat32, kInt64, kUInt8}) {
    // [B, T, H, D] -> [B, H, T, D]: the innermost dim stays unit-stride on both sides.
    expect_copy_matches({2, 33, 3, 64}, dt, dt, [](const Tensor& t) {
      return t.permute({0, 2, 1, 3});
    });
    // D not a multiple of the pack width, and a misaligned start (narrow by one element).
    expect_copy_matches({2, 5, 3, 12}, dt, dt, [](const Tensor& t) {
      return t.permute({0, 2, 1, 3});
    });
    expect_copy_matches({4, 65}, dt, dt, [](const Tensor& t) { return t.narrow(1, 1, 64); });
  }
}

TEST(CopyGpu, TransposesGoThroughTiles) {
  KILN_NEED_GPU();
  for (DType dt : {kBFloat16, kFloat32, kFloat64, kInt32}) {
    expect_copy_matches({257, 300}, dt, dt, [](const Tensor& t) { return t.t(); });
    expect_copy_matches({3, 65, 70}, dt, dt, [](const Tensor& t) { return t.transpose(1, 2); });
    expect_copy_matches({40, 3, 33}, dt, dt, [](const Tensor& t) { return t.permute({2, 1, 0}); });
  }
}

TEST(CopyGpu, AutocastCastsInEveryLayout) {
  KILN_NEED_GPU();
  for (auto [from, to] : {std::pair{kFloat32, kBFloat16}, std::pair{kBFloat16, kFloat32},
                          std::pair{kFloat16, kFloat32}, std::pair{kFloat32, kFloat16},
                          std::pair{kBFloat16, kFloat16}}) {
    expect_copy_matches({1027}, from, to, [](const Tensor& t) { return t; });
    expect_copy_matches({768, 96}, from, to, [](const Tensor& t) { return t.t(); });
    expect_copy_matches({2, 9, 4, 16}, from, to, [](const Tensor& t) {
      return t.permute({0, 2, 1, 3});
    });
    expect_copy_matches({7, 1}, from, to, [](const Tensor& t) { return t.expand({7, 40}); });
  }
}

// Destinations that are permutations of a contiguous layout (size-1 dims included) are written
// in their memory order (Note [Vectorized strided copies]).
TEST(CopyGpu, PermutedDestinationsWithUnitDims) {
  KILN_NEED_GPU();
  for (DType dt : {kBFloat16, kFloat32}) {
    Tensor src = values({1, 65, 70}, kFloat32);
    Tensor dst_cpu = empty({70, 1, 65}, TensorOptions(dt)).permute({1, 2, 0});
    Tensor dst_gpu = empty({70, 1, 65}, TensorOptions(dt).device(kGpu)).permute({1, 2, 0});
    dst_cpu.copy_(src);
    dst_gpu.copy_(src.to(kGpu));
    EXPECT_TRUE(bit_equal(dst_gpu, dst_cpu)) << dtype_name(dt);
    // The same layout on both sides, with a unit dim in the middle.
    Tensor a = values({40, 1, 33}, kFloat32).permute({2, 1, 0});
    Tensor b_cpu = empty({40, 1, 33}, TensorOptions(dt)).permute({2, 1, 0});
    Tensor b_gpu = empty({40, 1, 33}, TensorOptions(dt).device(kGpu)).permute({2, 1, 0});
    b_cpu.copy_(a);
    b_gpu.copy_(a.to(kGpu).permute({2, 1, 0}).contiguous().permute({2, 1, 0}));
    EXPECT_TRUE(bit_equal(b_gpu, b_cpu)) << dtype_name(dt);
  }
}

TEST(CopyGpu, CastRoundsLikeTheCpu) {
  KILN_NEED_GPU();
  // Values that are not exact in bfloat16/float16: both devices must round the same way.
  Tensor x = arange(4096, TensorOptions(kFloat32)).mul(1.0001).sin().mul(1000.0).reshape({64, 64});
  for (DType to : {kBFloat16, kFloat16}) {
    EXPECT_TRUE(bit_equal(x.to(kGpu).to(to), x.to(to)));
    EXPECT_TRUE(bit_equal(x.to(kGpu).t().to(to), x.t().to(to)));
  }
}

}  // namespace
}  // namespace kiln
