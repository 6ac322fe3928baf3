// Convolutions through cuDNN (MIOpen later): the GPU convolution kernels (kernels/gpu/conv_ops.cu)
// call these when the library loads, and keep their im2col + GEMM path otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln::gpu::dnn {

// Note [cuDNN convolutions]
// Each problem runs through a cached execution plan of cuDNN's graph API when one supports it
// (Note [cuDNN graph path] in dnn.cu), else through the legacy convolution API
// (cudnnConvolutionForward / BackwardData / BackwardFilter) described here, on
// the Convolution rows' contiguous 5-D [N, C, D, H, W] tensors (4-D descriptors when D and the
// kernel depth are 1 and the depth padding is 0), any groups, stride, padding and dilation;
// float16 / bfloat16 / float32 / float64 with float32 (float64) accumulation. Math: tensor cores
// for half precision; float32 uses TF32 only under set_float32_matmul_precision("high") and plain
// FMA otherwise. The algorithm is searched once per (kind, device, dtype, shapes, stride, padding,
// dilation, groups, TF32, deterministic mode): cudnnFind*AlgorithmEx (every algorithm timed on the
// call's own buffers, with a workspace sized by the largest candidate up to 1 GiB) outside graph
// capture, the _v7 heuristics during capture; deterministic mode keeps only deterministic
// algorithms. The problem's descriptors are kept with its algorithm (built once per problem).
// Workspaces come from the caching allocator on the current stream. The library is dlopen'ed:
// KILN_CUDNN_LIBRARY (a path), else libcudnn.so.9 / libcudnn.so on the loader's path;
// KILN_DISABLE_CUDNN=1 turns cuDNN off (the kernels then run im2col + GEMM).

// Parameters of the Convolution op rows (ints = stride[3], padding[3], dilation[3]; i0 = groups).
struct ConvParams {
  int64_t stride[3], pad[3], dil[3], groups;
};

// True when cuDNN is built in and its library loaded; otherwise unavailable_reason() says why.
bool available();
std::string unavailable_reason();

// y = conv(x, w); gx = conv_backward_data(gy, w); gw = conv_backward_filter(gy, x). All tensors
// contiguous, on one device, of one dtype; outputs overwritten. Return false (nothing written)
// when cuDNN cannot run the problem (sizes beyond its 32-bit dimensions, or no algorithm supports
// it): the caller falls back. Throw kiln::Error on library failures.
bool conv_forward(const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p);
bool conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvParams& p);
bool conv_backward_filter(const Tensor& gy, const Tensor& x, const Tensor& gw, const ConvParams& p);

// Note [cuDNN pooling]
// The average pooling backward (2-D; 1-D and 3-D callers reshape to it) runs through
// cudnnPoolingBackward on contiguous tensors when cuDNN's floor-rule output size is the op's (not
// for ceil_mode windows past it) and there is no divisor_override; count_include_pad picks the
// include/exclude-padding mode. The forward stays on kiln's kernel, which measured 2.8x faster
// than cuDNN's forward and 10x slower than its backward (H200, N32 C64 112x112, 3x3 windows,
// stride 2: forward 0.095 vs 0.268 ms, backward 1.40 vs 0.148 ms; PyTorch 0.087 / 0.553 ms,
// bench/run_conv_bench.sh). Max pooling stays on kiln's kernels: its op returns the argmax
// indices the backward scatters by (PyTorch's contract), which cuDNN's pooling does not produce.
// avg_pool2d(.., backward = false, ..) runs cuDNN's forward (tests compare it too).
struct PoolParams {
  int64_t kernel[2], stride[2], pad[2];
  bool count_include_pad;
};
// Forward: in = x, out = y; backward: in = grad y, out = grad x. False (nothing written) when
// cuDNN is unavailable or cannot run the call.
bool avg_pool2d(const Tensor& in, const Tensor& out, bool backward, const PoolParams& p);
// Pooling calls cuDNN ran so far (tests check the path was taken).
int64_t pool_call_count();

// Algorithm searches run so far in this process (one per cached problem; tests check hits).
int64_t algo_search_count();

}  // namespace kiln::gpu::dnn
