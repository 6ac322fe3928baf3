// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (zero padding only).
#pragma once

#include <initializer_list>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// One size for every spatial dim (3) or one per dim ({3, 5}), like PyTorch's int-or-tuple.
struct IntList {
  IntList(int64_t v) : values{v}, scalar(true) {}  // NOLINT
  IntList(std::initializer_list<int64_t> v) : values(v) {}
  IntList(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT
  std::vector<int64_t> expand(size_t n, const char* what) const;
  std::vector<int64_t> values;
  bool scalar = false;
};

// Weight [out, in / groups, *kernel] (transposed: [in, out / groups, *kernel]); weight and bias
// use PyTorch's default init (kaiming_uniform_ with a = sqrt(5), bias U(-1/sqrt(fan_in), ..)).
class ConvNdImpl : public Module {
 public:
  ConvNdImpl(std::string name, size_t dims, bool transposed, int64_t in_channels,
             int64_t out_channels, IntList kernel_size, IntList stride, IntList padding,
             IntList output_padding, IntList dilation, int64_t groups, bool bias);
  Tensor forward(const Tensor& x);
  void reset_parameters() override;
  std::string extra_repr() const override;

  int64_t in_channels, out_channels, groups;
  std::vector<int64_t> kernel_size, stride, padding, output_padding, dilation;
  bool transposed;
  Tensor weight, bias;

 private:
  size_t dims_;
};

#define KILN_CONV_MODULE(Name, D)                                                                  \
  class Name##Impl : public ConvNdImpl {                                                           \
   public:                                                                                         \
    Name##Impl(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1, \
               IntList padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true)    \
        : ConvNdImpl(#Name, D, false, in_channels, out_channels, kernel_size, stride, padding, 0,  \
                     dilation, groups, bias) {}                                                    \
  };                                                                                               \
  class Name : public ModuleHolder<Name##Impl> {                                                   \
   public:                                                                                         \
    using ModuleHolder<Name##Impl>::ModuleHolder;                                                  \
    Name(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,       \
         IntList padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true)          \
        : ModuleHolder(std::make_shared<Name##Impl>(in_channels, out_channels, kernel_size,        \
                                                    stride, padding, dilation, groups, bias)) {}   \
  }

KILN_CONV_MODULE(Conv1d, 1);
KILN_CONV_MODULE(Conv2d, 2);
KILN_CONV_MODULE(Conv3d, 3);
#undef KILN_CONV_MODULE

#define KILN_CONV_TRANSPOSE_MODULE(Name, D)                                                        \
  class Name##Impl : public ConvNdImpl {                                                           \
   public:                                                                                         \
    Name##Impl(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1, \
               IntList padding = 0, IntList output_padding = 0, int64_t groups = 1,                \
               bool bias = true, IntList dilation = 1)                                             \
        : ConvNdImpl(#Name, D, true, in_channels, out_channels, kernel_size, stride, padding,      \
                     output_padding, dilation, groups, bias) {}                                    \
  };                                                                                               \
  class Name : public ModuleHolder<Name##Impl> {                                                   \
   public:                                                                                         \
    using ModuleHolder<Name##Impl>::ModuleHolder;                                                  \
    Name(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1,       \
         IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, bool bias = true,    \
         IntList dilation = 1)                                                                     \
        : ModuleHolder(std::make_shared<Name##Impl>(in_channels, out_channels, kernel_size,        \
                                                    stride, padding, output_padding, groups, bias, \
                                                    dilation)) {}                                  \
  }

KILN_CONV_TRANSPOSE_MODULE(ConvTranspose1d, 1);
KILN_CONV_TRANSPOSE_MODULE(ConvTranspose2d, 2);
KILN_CONV_TRANSPOSE_MODULE(ConvTranspose3d, 3);
#undef KILN_CONV_TRANSPOSE_MODULE

}  // namespace kiln::nn
