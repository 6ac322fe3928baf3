// Normalization layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d.
#pragma once

#include <optional>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Normalizes over the trailing dims `normalized_shape`; weight = 1, bias = 0 when affine.
class LayerNormImpl : public Module {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                bool elementwise_affine = true, bool bias = true);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};
class LayerNorm : public ModuleHolder<LayerNormImpl> {
 public:
  using ModuleHolder<LayerNormImpl>::ModuleHolder;
  LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
            bool elementwise_affine = true, bool bias = true)
      : ModuleHolder(std::make_shared<LayerNormImpl>(std::move(normalized_shape), eps,
                                                     elementwise_affine, bias)) {}
};

// x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps: the dtype's epsilon if unset).
class RMSNormImpl : public Module {
 public:
  RMSNormImpl(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
              bool elementwise_affine = true);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;
};
class RMSNorm : public ModuleHolder<RMSNormImpl> {
 public:
  using ModuleHolder<RMSNormImpl>::ModuleHolder;
  RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt,
          bool elementwise_affine = true)
      : ModuleHolder(
            std::make_shared<RMSNormImpl>(std::move(normalized_shape), eps, elementwise_affine)) {}
};

class GroupNormImpl : public Module {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
  Tensor weight, bias;
};
KILN_MODULE(GroupNorm);

// Shared by BatchNorm and InstanceNorm: per-channel affine parameters and running statistics
// (running_mean 0, running_var 1, num_batches_tracked 0). momentum = nullopt uses the
// cumulative average 1 / num_batches_tracked.
class NormBase : public Module {
 public:
  NormBase(std::string name, int64_t num_features, double eps, std::optional<double> momentum,
           bool affine, bool track_running_stats);
  void reset_running_stats();
  void reset_parameters() override;
  std::string extra_repr() const override;
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  void check_dims(const Tensor& x, int64_t a, int64_t b) const;
};

class BatchNormImpl : public NormBase {
 public:
  BatchNormImpl(std::string name, int64_t dims_a, int64_t dims_b, int64_t num_features, double eps,
                std::optional<double> momentum, bool affine, bool track_running_stats);
  Tensor forward(const Tensor& x);

 private:
  int64_t dims_a_, dims_b_;
};

#define KILN_BATCHNORM_MODULE(Name, A, B)                                                         \
  class Name##Impl : public BatchNormImpl {                                                       \
   public:                                                                                        \
    explicit Name##Impl(int64_t num_features, double eps = 1e-5,                                  \
                        std::optional<double> momentum = 0.1, bool affine = true,                 \
                        bool track_running_stats = true)                                          \
        : BatchNormImpl(#Name, A, B, num_features, eps, momentum, affine, track_running_stats) {} \
  };                                                                                              \
  KILN_MODULE(Name)

KILN_BATCHNORM_MODULE(BatchNorm1d, 2, 3);  // [N, C] or [N, C, L]
KILN_BATCHNORM_MODULE(BatchNorm2d, 4, 4);  // [N, C, H, W]
KILN_BATCHNORM_MODULE(BatchNorm3d, 5, 5);  // [N, C, D, H, W]
#undef KILN_BATCHNORM_MODULE

class InstanceNormImpl : public NormBase {
 public:
  InstanceNormImpl(std::string name, int64_t dims, int64_t num_features, double eps,
                   std::optional<double> momentum, bool affine, bool track_running_stats);
  Tensor forward(const Tensor& x);

 private:
  int64_t dims_;  // batched input dims
};

#define KILN_INSTANCENORM_MODULE(Name, D)                                                         \
  class Name##Impl : public InstanceNormImpl {                                                    \
   public:                                                                                        \
    explicit Name##Impl(int64_t num_features, double eps = 1e-5,                                  \
                        std::optional<double> momentum = 0.1, bool affine = false,                \
                        bool track_running_stats = false)                                         \
        : InstanceNormImpl(#Name, D, num_features, eps, momentum, affine, track_running_stats) {} \
  };                                                                                              \
  KILN_MODULE(Name)

// Unbatched inputs (one dim fewer) are accepted too.
KILN_INSTANCENORM_MODULE(InstanceNorm1d, 3);
KILN_INSTANCENORM_MODULE(InstanceNorm2d, 4);
KILN_INSTANCENORM_MODULE(InstanceNorm3d, 5);
#undef KILN_INSTANCENORM_MODULE

}  // namespace kiln::nn
