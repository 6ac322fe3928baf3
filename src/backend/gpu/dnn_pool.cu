// Average pooling's backward through cuDNN (Note [cuDNN pooling] in dnn.h), on the library dnn.cu
// loads.
#include "backend/gpu/vendor.h"

#include <climits>

#include "backend/gpu/dnn.h"
#include "backend/gpu/dnn_lib.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"

namespace kiln::gpu::dnn {

#if KILN_GPU_DNN_AVAILABLE

bool avg_pool2d(const Tensor& in, const Tensor& out, bool backward, const PoolParams& p) {
  const DnnApi& api = dnn_api();
  if (!api.error.empty() || !api.pooling) return false;
  const Tensor& x = backward ? out : in;  // [N, C, H, W] or [C, H, W]: planes of H x W
  const Tensor& y = backward ? in : out;
  gpuDnnDataType_t data, compute;
  if (!data_type(x.dtype(), &data, &compute) || y.dtype() != x.dtype()) return false;
  if (!x.is_contiguous() || !y.is_contiguous() || x.dim() < 3 || y.dim() != x.dim()) return false;
  const int64_t h = x.size(-2), w = x.size(-1), oh = y.size(-2), ow = y.size(-1);
  const int64_t planes = h * w > 0 ? x.numel() / (h * w) : 0;
  if (planes == 0 || oh * ow == 0 || x.numel() >= INT_MAX || y.numel() >= INT_MAX) return false;
  // cuDNN's output size is the floor rule; ceil_mode windows past it stay on kiln's kernels.
  if (oh != 1 + (h + 2 * p.pad[0] - p.kernel[0]) / p.stride[0] ||
      ow != 1 + (w + 2 * p.pad[1] - p.kernel[1]) / p.stride[1])
    return false;
  const char* op = backward ? "avg_pool2d_backward" : "avg_pool2d";
  const int dev = x.device().index;
  gpuStream_t stream = reinterpret_cast<gpuStream_t>(current_stream(dev));
  gpuDnnHandle_t hd = dnn_handle(dev, stream, op);
  gpuDnnTensorDesc_t xd = nullptr, yd = nullptr;
  gpuDnnPoolingDesc_t pd = nullptr;
  struct Free {
    const DnnApi& a;
    gpuDnnTensorDesc_t& x;
    gpuDnnTensorDesc_t& y;
    gpuDnnPoolingDesc_t& p;
    ~Free() {
      if (p) a.pool_destroy(p);
      if (y) a.tensor_destroy(y);
      if (x) a.tensor_destroy(x);
    }
  } free_descs{api, xd, yd, pd};
  dnn_check(api.tensor_create(&xd), op, "create tensor descriptor");
  dnn_check(api.tensor_create(&yd), op, "create tensor descriptor");
  dnn_check(api.pool_create(&pd), op, "create pooling descriptor");
  // Every plane pools alike: [planes, 1, H, W].
  const int xs[4] = {static_cast<int>(planes), 1, static_cast<int>(h), static_cast<int>(w)};
  const int xst[4] = {static_cast<int>(h * w), static_cast<int>(h * w), static_cast<int>(w), 1};
  const int ys[4] = {static_cast<int>(planes), 1, static_cast<int>(oh), static_cast<int>(ow)};
  const int yst[4] = {static_cast<int>(oh * ow), static_cast<int>(oh * ow), static_cast<int>(ow),
                      1};
  const int win[2] = {static_cast<int>(p.kernel[0]), static_cast<int>(p.kernel[1])};
  const int pad[2] = {static_cast<int>(p.pad[0]), static_cast<int>(p.pad[1])};
  const int str[2] = {static_cast<int>(p.stride[0]), static_cast<int>(p.stride[1])};
  if (api.tensor_set(xd, data, 4, xs, xst) != GPUDNN_STATUS_SUCCESS ||
      api.tensor_set(yd, data, 4, ys, yst) != GPUDNN_STATUS_SUCCESS ||
      api.pool_set(pd,
                   p.count_include_pad ? GPUDNN_POOLING_AVERAGE_INCLUDE_PAD
                                       : GPUDNN_POOLING_AVERAGE_EXCLUDE_PAD,
                   GPUDNN_PROPAGATE_NAN, 2, win, pad, str) != GPUDNN_STATUS_SUCCESS)
    return false;
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool dbl = x.dtype() == DType::Float64;
  const void* one = dbl ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : &zero_f;
  if (backward)  // average pooling reads neither y nor x: dy and dx stand in for them
    dnn_check(api.pool_bwd(hd, pd, one, yd, in.data_ptr(), yd, in.data_ptr(), xd, out.data_ptr(),
                           zero, xd, out.data_ptr()),
              op, "PoolingBackward");
  else
    dnn_check(api.pool_fwd(hd, pd, one, xd, in.data_ptr(), zero, yd, out.data_ptr()), op,
              "PoolingForward");
  count_pool_call();
  check_launch(op, reinterpret_cast<uintptr_t>(stream));
  return true;
}

#else  // built without cuDNN headers

bool avg_pool2d(const Tensor&, const Tensor&, bool, const PoolParams&) { return false; }

#endif

}  // namespace kiln::gpu::dnn
