// Shared pieces of the GPU convolution kernels: the 3-D im2col geometry and the im2col / col2im
// launchers (conv_kernels.cu), which the convolution ops build on.
#pragma once

#include "backend/gpu/vendor.h"

#include <cstdint>

namespace kiln::gpu::conv {

// Input [N, C, ID, IH, IW], kernel [KD, KH, KW], output positions [OD, OH, OW]; strides s,
// paddings p, dilations d.
struct ColGeo {
  int64_t n, c, id, ih, iw, kd, kh, kw, od, oh, ow;
  int64_t sd, sh, sw, pd, ph, pw, dd, dh, dw;
};

struct Launch {
  int device;
  gpuStream_t stream;
};

// cols [N, C*KD*KH*KW, OD*OH*OW] <- x [N, C, ID, IH, IW] (contiguous), zero outside the input.
template <class T>
void im2col_gpu(const T* x, T* cols, const ColGeo& g, const Launch& l);
// x <- the adjoint of im2col applied to cols (x overwritten, not accumulated).
template <class T>
void col2im_gpu(const T* cols, T* x, const ColGeo& g, const Launch& l);

}  // namespace kiln::gpu::conv
