// What dnn.cu's loader shares with the other cuDNN callers (dnn_pool.cu): the library's function
// table, the per-device handle, status checks and the dtype mapping. Private to src/backend/gpu.
#pragma once

#include "backend/gpu/vendor.h"
#include "backend/gpu/vendor/dnn.h"

#include <string>

#include "kiln/dtype.h"

namespace kiln::gpu::dnn {

#if KILN_GPU_DNN_AVAILABLE

struct DnnApi {
  decltype(&GPUDNN_FN(Create)) create = nullptr;
  decltype(&GPUDNN_FN(SetStream)) set_stream = nullptr;
  decltype(&GPUDNN_FN(GetErrorString)) error_string = nullptr;
  decltype(&GPUDNN_FN(CreateTensorDescriptor)) tensor_create = nullptr;
  decltype(&GPUDNN_FN(SetTensorNdDescriptor)) tensor_set = nullptr;
  decltype(&GPUDNN_FN(DestroyTensorDescriptor)) tensor_destroy = nullptr;
  decltype(&GPUDNN_FN(CreateFilterDescriptor)) filter_create = nullptr;
  decltype(&GPUDNN_FN(SetFilterNdDescriptor)) filter_set = nullptr;
  decltype(&GPUDNN_FN(DestroyFilterDescriptor)) filter_destroy = nullptr;
  decltype(&GPUDNN_FN(CreateConvolutionDescriptor)) conv_create = nullptr;
  decltype(&GPUDNN_FN(SetConvolutionNdDescriptor)) conv_set = nullptr;
  decltype(&GPUDNN_FN(SetConvolutionGroupCount)) conv_groups = nullptr;
  decltype(&GPUDNN_FN(SetConvolutionMathType)) conv_math = nullptr;
  decltype(&GPUDNN_FN(DestroyConvolutionDescriptor)) conv_destroy = nullptr;
  decltype(&GPUDNN_FN(GetConvolutionForwardAlgorithm_v7)) fwd_get = nullptr;
  decltype(&GPUDNN_FN(FindConvolutionForwardAlgorithmEx)) fwd_find = nullptr;
  decltype(&GPUDNN_FN(ConvolutionForward)) fwd = nullptr;
  decltype(&GPUDNN_FN(GetConvolutionBackwardDataAlgorithm_v7)) bwd_data_get = nullptr;
  decltype(&GPUDNN_FN(FindConvolutionBackwardDataAlgorithmEx)) bwd_data_find = nullptr;
  decltype(&GPUDNN_FN(ConvolutionBackwardData)) bwd_data = nullptr;
  decltype(&GPUDNN_FN(GetConvolutionBackwardFilterAlgorithm_v7)) bwd_filter_get = nullptr;
  decltype(&GPUDNN_FN(FindConvolutionBackwardFilterAlgorithmEx)) bwd_filter_find = nullptr;
  decltype(&GPUDNN_FN(ConvolutionBackwardFilter)) bwd_filter = nullptr;
  // Graph (backend) API, for the execution-plan path (Note [cuDNN graph path]).
  decltype(&GPUDNN_FN(BackendCreateDescriptor)) be_create = nullptr;
  decltype(&GPUDNN_FN(BackendDestroyDescriptor)) be_destroy = nullptr;
  decltype(&GPUDNN_FN(BackendFinalize)) be_finalize = nullptr;
  decltype(&GPUDNN_FN(BackendSetAttribute)) be_set = nullptr;
  decltype(&GPUDNN_FN(BackendGetAttribute)) be_get = nullptr;
  decltype(&GPUDNN_FN(BackendExecute)) be_execute = nullptr;
  // Pooling (Note [cuDNN pooling] in dnn.h); optional: convolutions work without them.
  decltype(&GPUDNN_FN(CreatePoolingDescriptor)) pool_create = nullptr;
  decltype(&GPUDNN_FN(SetPoolingNdDescriptor)) pool_set = nullptr;
  decltype(&GPUDNN_FN(DestroyPoolingDescriptor)) pool_destroy = nullptr;
  decltype(&GPUDNN_FN(PoolingForward)) pool_fwd = nullptr;
  decltype(&GPUDNN_FN(PoolingBackward)) pool_bwd = nullptr;
  bool pooling = false;
  bool graph = false;  // the graph path is on (not KILN_CUDNN_GRAPH=0) and its symbols loaded
  std::string error;   // why the library is unusable; empty when loaded
};

// The library, loaded once (KILN_CUDNN_LIBRARY, KILN_DISABLE_CUDNN; Note [cuDNN convolutions]).
const DnnApi& dnn_api();
// Throws kiln::Error naming `op` and the failed `call` unless s is success.
void dnn_check(gpuDnnStatus_t s, const char* op, const char* call);
// The device's handle, bound to `stream`.
gpuDnnHandle_t dnn_handle(int device, gpuStream_t stream, const char* op);
// cuDNN's data and compute types for a kiln dtype; false when cuDNN has none.
bool data_type(DType d, gpuDnnDataType_t* data, gpuDnnDataType_t* compute);
void count_pool_call();

#endif

}  // namespace kiln::gpu::dnn
