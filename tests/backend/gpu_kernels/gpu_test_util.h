// Helpers shared by the GPU kernel tests: the no-GPU skip, devices, seeded random inputs, host
// copies as doubles and bitwise comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"

#define KILN_NEED_GPU() \
  if (!::kiln::cuda::is_available()) GTEST_SKIP() << "no GPU: GPU kernel tests need a cuda device"

namespace kiln::gpu_test {

inline const Device kGpu(kCUDA, 0);
inline const Device kCpu(kCPU);

inline std::vector<double> rand_vec(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

inline std::vector<int64_t> rand_idx(int64_t n, int64_t bound, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int64_t> u(0, bound - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

// The elements of t (any device, any real dtype) as doubles, in row-major order.
inline std::vector<double> host(const Tensor& t) {
  Tensor c = t.to(kCpu).to(DType::Float64).contiguous();
  const double* p = static_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}

// Bitwise equality of two tensors' elements (same dtype/shape), both brought to the CPU.
inline bool bit_equal(const Tensor& a, const Tensor& b) {
  Tensor x = a.to(kCpu).contiguous(), y = b.to(kCpu).contiguous();
  if (x.sizes() != y.sizes() || x.dtype() != y.dtype()) return false;
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

}  // namespace kiln::gpu_test
