// Random sampling (torch.rand, randn, randint, normal, bernoulli, multinomial, randperm, ...).
// Every function takes an optional Generator; without one it uses default_generator(device).
#pragma once

#include <optional>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// Note [Random values]: every value is a pure function of the generator's (seed, offset) at the
// call and the element's row-major index (Note [Philox streams], src/kernels/philox.h): the
// thread count, the output's strides and the device never change the numbers. A call advances
// its generator past the counters it used, so consecutive calls differ and manual_seed repeats a
// sequence. float32/float16/bfloat16 are sampled in float and rounded (uniform stays below its
// upper bound after rounding); float64 and integer dtypes in double. Arguments that a user can
// get wrong throw kiln::Error before the generator moves.
// Differs from PyTorch: the numbers differ from torch's (Philox everywhere, not mt19937 on the
// cpu); value checks of tensor arguments (probabilities, std >= 0) run for cpu tensors only.

// Uniform on [0, 1): dtype float (default float32) or complex (real and imaginary parts each).
Tensor rand(IntArrayRef size, const TensorOptions& options = {});
Tensor rand(IntArrayRef size, std::optional<Generator> generator,
            const TensorOptions& options = {});
// Standard normal; complex dtypes get real and imaginary parts of variance 1/2 each.
Tensor randn(IntArrayRef size, const TensorOptions& options = {});
Tensor randn(IntArrayRef size, std::optional<Generator> generator,
             const TensorOptions& options = {});
// Uniform integers in [low, high) (low = 0 when omitted). dtype defaults to int64, as in Python
// (libtorch's C++ default is float); any integer, bool or floating dtype that holds the range.
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options = {});
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options = {});
// Same shape as t; dtype and device of t unless options say otherwise.
Tensor rand_like(const Tensor& t, const TensorOptions& options = {});
Tensor randn_like(const Tensor& t, const TensorOptions& options = {});
Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& options = {});
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options = {});

// mean + std * N(0, 1) elementwise; mean and std broadcast. The dtype is mean's (std's when mean
// is a number). std must be >= 0.
Tensor normal(const Tensor& mean, const Tensor& std,
              std::optional<Generator> generator = std::nullopt);
Tensor normal(const Tensor& mean, double std = 1,
              std::optional<Generator> generator = std::nullopt);
Tensor normal(double mean, const Tensor& std, std::optional<Generator> generator = std::nullopt);
Tensor normal(double mean, double std, IntArrayRef size,
              std::optional<Generator> generator = std::nullopt, const TensorOptions& options = {});

// 0/1 draws with probabilities p (a floating tensor in [0, 1]); the result has p's dtype.
Tensor bernoulli(const Tensor& p, std::optional<Generator> generator = std::nullopt);
// 0/1 draws with probability p, shaped and typed like self.
Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator = std::nullopt);

// num_samples category indices (int64) per row of a 1-D or 2-D tensor of non-negative weights
// (not necessarily normalized). Without replacement, num_samples <= categories with nonzero
// weight, and the samples come in the order they would be drawn one by one.
Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement = false,
                   std::optional<Generator> generator = std::nullopt);

// A random permutation of 0 .. n-1 (default int64; Note [randperm by sorted keys]).
Tensor randperm(int64_t n, const TensorOptions& options = {});
Tensor randperm(int64_t n, std::optional<Generator> generator, const TensorOptions& options = {});

}  // namespace kiln
