// Pooling and pixel-rearranging modules: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d,
// AdaptiveMaxPool1d/2d, PixelShuffle, PixelUnshuffle.
#pragma once

#include <tuple>

#include "kiln/nn/modules/conv.h"

namespace kiln::nn {

// stride defaults to kernel_size (pass an empty list {} for that).
class MaxPoolImpl : public Module {
 public:
  MaxPoolImpl(std::string name, size_t dims, IntList kernel_size, IntList stride, IntList padding,
              IntList dilation, bool ceil_mode);
  Tensor forward(const Tensor& x);
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string extra_repr() const override;
  IntList kernel_size, stride, padding, dilation;
  bool ceil_mode;

 private:
  size_t dims_;
};

#define KILN_MAXPOOL_MODULE(Name, D)                                                              \
  class Name##Impl : public MaxPoolImpl {                                                         \
   public:                                                                                        \
    explicit Name##Impl(IntList kernel_size, IntList stride = std::vector<int64_t>{},             \
                        IntList padding = 0, IntList dilation = 1, bool ceil_mode = false)        \
        : MaxPoolImpl(#Name, D, kernel_size, stride, padding, dilation, ceil_mode) {}             \
  };                                                                                              \
  class Name : public ModuleHolder<Name##Impl> {                                                  \
   public:                                                                                        \
    using ModuleHolder<Name##Impl>::ModuleHolder;                                                 \
    Name(IntList kernel_size, IntList stride = std::vector<int64_t>{}, IntList padding = 0,       \
         IntList dilation = 1, bool ceil_mode = false)                                            \
        : ModuleHolder(                                                                           \
              std::make_shared<Name##Impl>(kernel_size, stride, padding, dilation, ceil_mode)) {} \
  }
KILN_MAXPOOL_MODULE(MaxPool1d, 1);
KILN_MAXPOOL_MODULE(MaxPool2d, 2);
#undef KILN_MAXPOOL_MODULE

class AvgPoolImpl : public Module {
 public:
  AvgPoolImpl(std::string name, size_t dims, IntList kernel_size, IntList stride, IntList padding,
              bool ceil_mode, bool count_include_pad);
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override;
  IntList kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;

 private:
  size_t dims_;
};

#define KILN_AVGPOOL_MODULE(Name, D)                                                           \
  class Name##Impl : public AvgPoolImpl {                                                      \
   public:                                                                                     \
    explicit Name##Impl(IntList kernel_size, IntList stride = std::vector<int64_t>{},          \
                        IntList padding = 0, bool ceil_mode = false,                           \
                        bool count_include_pad = true)                                         \
        : AvgPoolImpl(#Name, D, kernel_size, stride, padding, ceil_mode, count_include_pad) {} \
  };                                                                                           \
  class Name : public ModuleHolder<Name##Impl> {                                               \
   public:                                                                                     \
    using ModuleHolder<Name##Impl>::ModuleHolder;                                              \
    Name(IntList kernel_size, IntList stride = std::vector<int64_t>{}, IntList padding = 0,    \
         bool ceil_mode = false, bool count_include_pad = true)                                \
        : ModuleHolder(std::make_shared<Name##Impl>(kernel_size, stride, padding, ceil_mode,   \
                                                    count_include_pad)) {}                     \
  }
KILN_AVGPOOL_MODULE(AvgPool1d, 1);
KILN_AVGPOOL_MODULE(AvgPool2d, 2);
#undef KILN_AVGPOOL_MODULE

#define KILN_ADAPTIVE_MODULE(Name)                                              \
  class Name##Impl : public Module {                                            \
   public:                                                                      \
    explicit Name##Impl(IntList output_size)                                    \
        : Module(#Name), output_size(std::move(output_size)) {}                 \
    Tensor forward(const Tensor& x);                                            \
    std::string extra_repr() const override;                                    \
    IntList output_size;                                                        \
  };                                                                            \
  class Name : public ModuleHolder<Name##Impl> {                                \
   public:                                                                      \
    using ModuleHolder<Name##Impl>::ModuleHolder;                               \
    Name(IntList output_size)                                                   \
        : ModuleHolder(std::make_shared<Name##Impl>(std::move(output_size))) {} \
  }
KILN_ADAPTIVE_MODULE(AdaptiveAvgPool1d);
KILN_ADAPTIVE_MODULE(AdaptiveAvgPool2d);
KILN_ADAPTIVE_MODULE(AdaptiveMaxPool1d);
KILN_ADAPTIVE_MODULE(AdaptiveMaxPool2d);
#undef KILN_ADAPTIVE_MODULE

class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor)
      : Module("PixelShuffle"), upscale_factor(upscale_factor) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override {
    return "upscale_factor=" + std::to_string(upscale_factor);
  }
  int64_t upscale_factor;
};
KILN_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor)
      : Module("PixelUnshuffle"), downscale_factor(downscale_factor) {}
  Tensor forward(const Tensor& x);
  std::string extra_repr() const override {
    return "downscale_factor=" + std::to_string(downscale_factor);
  }
  int64_t downscale_factor;
};
KILN_MODULE(PixelUnshuffle);

}  // namespace kiln::nn
