// kiln::nn::init (torch.nn.init): in-place initializers of parameters. Each runs under no-grad,
// fills the tensor and returns it; an optional Generator makes the values reproducible.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "kiln/tensor.h"

namespace kiln::nn::init {

enum class FanMode { FanIn, FanOut };

// The recommended gain for a nonlinearity: "linear", "conv1d/2d/3d", "conv_transpose1d/2d/3d",
// "sigmoid": 1; "tanh": 5/3; "relu": sqrt(2); "leaky_relu": sqrt(2 / (1 + slope^2)) (slope
// `param`, default 0.01); "selu": 3/4. Other names are an error.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);

// (fan_in, fan_out) of a weight of at least 2 dims: size(1) * receptive field and
// size(0) * receptive field, where the receptive field is the product of sizes from dim 2 on.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0, double b = 1,
                std::optional<Generator> generator = std::nullopt);
Tensor normal_(Tensor t, double mean = 0, double std = 1,
               std::optional<Generator> generator = std::nullopt);
// N(mean, std^2) restricted to [a, b] (inverse-CDF sampling, as PyTorch).
Tensor trunc_normal_(Tensor t, double mean = 0, double std = 1, double a = -2, double b = 2,
                     std::optional<Generator> generator = std::nullopt);
Tensor constant_(Tensor t, double value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
// The identity matrix (2-D tensors only).
Tensor eye_(Tensor t);
// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor t, double gain = 1,
                       std::optional<Generator> generator = std::nullopt);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor t, double gain = 1, std::optional<Generator> generator = std::nullopt);
// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
Tensor kaiming_uniform_(Tensor t, double a = 0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu",
                        std::optional<Generator> generator = std::nullopt);
// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor t, double a = 0, FanMode mode = FanMode::FanIn,
                       const std::string& nonlinearity = "leaky_relu",
                       std::optional<Generator> generator = std::nullopt);
// A (semi-)orthogonal matrix times gain: Q of the QR decomposition of a normal matrix (computed
// in float64 by Householder reflections), signs fixed so that R has a positive diagonal. Tensors
// of more than 2 dims are flattened to (size(0), rest).
Tensor orthogonal_(Tensor t, double gain = 1, std::optional<Generator> generator = std::nullopt);

}  // namespace kiln::nn::init
