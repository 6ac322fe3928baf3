// Winograd F(2x2, 3x3) float32 convolution for 3x3, stride-1, dilation-1 2-D convolutions on
// CPUs with AVX-512 (Note [Winograd F(2x2,3x3) convolution] in nn_conv_winograd.cpp).
#pragma once

#include <cstdint>

namespace kiln::cpu {

// One 2-D convolution: x [n, c, h, w], weight [o, c / groups, 3, 3], y [n, o, oh, ow] with
// oh = h + 2 * ph - 2, ow = w + 2 * pw - 2.
struct WinogradConv {
  int64_t n, c, h, w, o, groups, ph, pw;
  int64_t oh() const { return h + 2 * ph - 2; }
  int64_t ow() const { return w + 2 * pw - 2; }
};

// True when conv_winograd_f32 runs this convolution: the CPU has AVX-512F, the output is not
// empty, both channel counts per group are at least 8 and the offsets fit 32-bit indices.
bool winograd_applicable(const WinogradConv& g);

// y = conv2d(x, w, padding (ph, pw), groups) + bias (bias may be null), all contiguous. The
// result does not depend on the thread count.
void conv_winograd_f32(const WinogradConv& g, const float* x, const float* w, const float* bias,
                       float* y);

}  // namespace kiln::cpu
