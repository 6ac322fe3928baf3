// Linear layers and reshaping modules: Identity, Linear, Bilinear, Flatten, Unflatten.
#pragma once

#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Returns its input.
class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x) { return x; }
};
KILN_MODULE(Identity);

// y = x W^T + b with W [out, in]; W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's default).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = kFloat32);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight, bias;
};
KILN_MODULE(Linear);

// y[.., o] = x1 W[o] x2 + b[o] with W [out, in1, in2]; U(-1/sqrt(in1), 1/sqrt(in1)) init.
class BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x1, const Tensor& x2);
  void reset_parameters() override;
  std::string extra_repr() const override;

  int64_t in1_features, in2_features, out_features;
  Tensor weight, bias;
};
KILN_MODULE(Bilinear);

// x.flatten(start_dim, end_dim).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
KILN_MODULE(Flatten);

// x.unflatten(dim, sizes).
class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes)
      : Module("Unflatten"), dim(dim), sizes(std::move(sizes)) {}
  Tensor forward(const Tensor& x) { return x.unflatten(dim, sizes); }
  std::string extra_repr() const override;
  int64_t dim;
  std::vector<int64_t> sizes;
};
class Unflatten : public ModuleHolder<UnflattenImpl> {
 public:
  using ModuleHolder<UnflattenImpl>::ModuleHolder;
  Unflatten(int64_t dim, std::vector<int64_t> sizes)
      : ModuleHolder(std::make_shared<UnflattenImpl>(dim, std::move(sizes))) {}
};

}  // namespace kiln::nn
