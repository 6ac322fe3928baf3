// nn::init: gains, fans and the in-place initializers (orthogonal_ with a float64 Householder QR).
#include "kiln/nn/init.h"

#include <cmath>
#include <vector>

#include "kiln/ops/factories.h"
#include "kiln/ops/random.h"
#include "nn/grad_scope.h"

namespace kiln::nn::init {

double calculate_gain(const std::string& nl, std::optional<double> param) {
  static const char* const kOne[] = {"linear",           "conv1d",           "conv2d",
                                     "conv3d",           "conv_transpose1d", "conv_transpose2d",
                                     "conv_transpose3d", "sigmoid"};
  for (const char* n : kOne)
    if (nl == n) return 1.0;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    const double slope = param ? *param : 0.01;
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nl == "selu") return 3.0 / 4;
  KILN_ERROR("[nn.init.calculate_gain] unsupported nonlinearity '", nl, "'");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  KILN_CHECK(t.defined() && t.dim() >= 2,
             "[nn.init] fan in and fan out can not be computed for a tensor with fewer than 2 "
             "dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

namespace {

int64_t fan(const Tensor& t, FanMode mode) {
  auto f = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? f.first : f.second;
}

void check_defined(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined(), "[nn.init.", op, "] undefined tensor");
}

}  // namespace

Tensor uniform_(Tensor t, double a, double b, std::optional<Generator> generator) {
  check_defined(t, "uniform_");
  kiln::detail::NoGradScope ng;
  t.uniform_(a, b, generator);
  return t;
}

Tensor normal_(Tensor t, double mean, double std, std::optional<Generator> generator) {
  check_defined(t, "normal_");
  kiln::detail::NoGradScope ng;
  t.normal_(mean, std, generator);
  return t;
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b,
                     std::optional<Generator> generator) {
  check_defined(t, "trunc_normal_");
  KILN_CHECK(a < b, "[nn.init.trunc_normal_] expects a < b, got a=", a, " b=", b);
  kiln::detail::NoGradScope ng;
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  const double l = cdf((a - mean) / std), u = cdf((b - mean) / std);
  t.uniform_(2 * l - 1, 2 * u - 1, generator);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.0));
  t.add_(mean);
  t.clamp_(Scalar(a), Scalar(b));
  return t;
}

Tensor constant_(Tensor t, double value) {
  check_defined(t, "constant_");
  kiln::detail::NoGradScope ng;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1); }

Tensor eye_(Tensor t) {
  check_defined(t, "eye_");
  KILN_CHECK(t.dim() == 2, "[nn.init.eye_] only tensors with 2 dimensions are supported, got ",
             t.dim());
  kiln::detail::NoGradScope ng;
  t.copy_(kiln::eye(t.size(0), t.size(1), TensorOptions(t.dtype()).device(t.device())));
  return t;
}

Tensor xavier_uniform_(Tensor t, double gain, std::optional<Generator> generator) {
  auto f = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(f.first + f.second));
  const double a = std::sqrt(3.0) * std;
  return uniform_(std::move(t), -a, a, generator);
}

Tensor xavier_normal_(Tensor t, double gain, std::optional<Generator> generator) {
  auto f = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(f.first + f.second));
  return normal_(std::move(t), 0, std, generator);
}

Tensor kaiming_uniform_(Tensor t, double a, FanMode mode, const std::string& nonlinearity,
                        std::optional<Generator> generator) {
  check_defined(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;  // PyTorch warns and does nothing
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(t), -bound, bound, generator);
}

Tensor kaiming_normal_(Tensor t, double a, FanMode mode, const std::string& nonlinearity,
                       std::optional<Generator> generator) {
  check_defined(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  return normal_(std::move(t), 0, std, generator);
}

Tensor orthogonal_(Tensor t, double gain, std::optional<Generator> generator) {
  check_defined(t, "orthogonal_");
  KILN_CHECK(t.dim() >= 2,
             "[nn.init.orthogonal_] only tensors with 2 or more dimensions are "
             "supported");
  if (t.numel() == 0) return t;
  kiln::detail::NoGradScope ng;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  Tensor flat = kiln::randn({rows, cols}, generator, TensorOptions(kFloat64));
  const bool transposed = rows < cols;
  if (transposed) flat = flat.t().contiguous();
  // A is m x n with m >= n, row-major.
  const int64_t m = flat.size(0), n = flat.size(1);
  std::vector<double> A(flat.data_ptr<double>(), flat.data_ptr<double>() + m * n);
  std::vector<std::vector<double>> vs(static_cast<size_t>(n));
  std::vector<double> rdiag(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += A[i * n + k] * A[i * n + k];
    norm = std::sqrt(norm);
    const double x0 = A[k * n + k];
    const double alpha = x0 >= 0 ? -norm : norm;
    std::vector<double> v(static_cast<size_t>(m - k));
    for (int64_t i = k; i < m; ++i) v[i - k] = A[i * n + k];
    v[0] -= alpha;
    double vn = 0;
    for (double x : v) vn += x * x;
    vn = std::sqrt(vn);
    if (vn > 0)
      for (double& x : v) x /= vn;
    // A[k:, k:] -= 2 v (v^T A[k:, k:])
    for (int64_t j = k; j < n; ++j) {
      double s = 0;
      for (int64_t i = k; i < m; ++i) s += v[i - k] * A[i * n + j];
      for (int64_t i = k; i < m; ++i) A[i * n + j] -= 2 * v[i - k] * s;
    }
    rdiag[k] = A[k * n + k];
    vs[k] = std::move(v);
  }
  // Q = H_0 ... H_{n-1} I[:, :n]
  std::vector<double> Q(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < n; ++i) Q[i * n + i] = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const auto& v = vs[k];
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t i = k; i < m; ++i) s += v[i - k] * Q[i * n + j];
      for (int64_t i = k; i < m; ++i) Q[i * n + j] -= 2 * v[i - k] * s;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    const double sgn = rdiag[j] < 0 ? -1.0 : 1.0;
    for (int64_t i = 0; i < m; ++i) Q[i * n + j] *= sgn * gain;
  }
  Tensor q = kiln::from_vector(Q, {m, n});
  if (transposed) q = q.t();
  t.copy_(q.reshape(t.sizes()));
  return t;
}

}  // namespace kiln::nn::init
