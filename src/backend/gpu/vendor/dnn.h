// cuDNN spelled once for kiln's convolutions (backend/gpu/dnn.cu): the library's types and enum
// names as gpuDnn*, its functions looked up at run time (dlopen) from libcudnn.so.9 (or
// KILN_CUDNN_LIBRARY). HIP: MIOpen is not wired yet (KILN_GPU_DNN_AVAILABLE 0). Only dnn.cu.
#pragma once

#include "backend/gpu/vendor.h"

#if KILN_CUDA && __has_include(<cudnn.h>)
#include <cudnn.h>
#define KILN_GPU_DNN_AVAILABLE 1
#define KILN_GPU_DNN_LIBRARY "libcudnn.so.9"
#define KILN_GPU_DNN_LIBRARY_ALT "libcudnn.so"
#define KILN_GPU_DNN_SYM(name) "cudnn" #name
#define GPUDNN_FN(name) cudnn##name
using gpuDnnHandle_t = cudnnHandle_t;
using gpuDnnStatus_t = cudnnStatus_t;
using gpuDnnTensorDesc_t = cudnnTensorDescriptor_t;
using gpuDnnFilterDesc_t = cudnnFilterDescriptor_t;
using gpuDnnConvDesc_t = cudnnConvolutionDescriptor_t;
using gpuDnnDataType_t = cudnnDataType_t;
using gpuDnnMathType_t = cudnnMathType_t;
using gpuDnnFwdAlgo_t = cudnnConvolutionFwdAlgo_t;
using gpuDnnBwdDataAlgo_t = cudnnConvolutionBwdDataAlgo_t;
using gpuDnnBwdFilterAlgo_t = cudnnConvolutionBwdFilterAlgo_t;
using gpuDnnFwdPerf_t = cudnnConvolutionFwdAlgoPerf_t;
using gpuDnnBwdDataPerf_t = cudnnConvolutionBwdDataAlgoPerf_t;
using gpuDnnBwdFilterPerf_t = cudnnConvolutionBwdFilterAlgoPerf_t;
#define GPUDNN_STATUS_SUCCESS CUDNN_STATUS_SUCCESS
#define GPUDNN_DATA_HALF CUDNN_DATA_HALF
#define GPUDNN_DATA_BFLOAT16 CUDNN_DATA_BFLOAT16
#define GPUDNN_DATA_FLOAT CUDNN_DATA_FLOAT
#define GPUDNN_DATA_DOUBLE CUDNN_DATA_DOUBLE
#define GPUDNN_TENSOR_NCHW CUDNN_TENSOR_NCHW
#define GPUDNN_CROSS_CORRELATION CUDNN_CROSS_CORRELATION
#define GPUDNN_DEFAULT_MATH CUDNN_DEFAULT_MATH
#define GPUDNN_TENSOR_OP_MATH CUDNN_TENSOR_OP_MATH
#define GPUDNN_FMA_MATH CUDNN_FMA_MATH
#define GPUDNN_DETERMINISTIC CUDNN_DETERMINISTIC
using gpuDnnPoolingDesc_t = cudnnPoolingDescriptor_t;
#define GPUDNN_POOLING_AVERAGE_INCLUDE_PAD CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
#define GPUDNN_POOLING_AVERAGE_EXCLUDE_PAD CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
#define GPUDNN_PROPAGATE_NAN CUDNN_PROPAGATE_NAN
#else
#define KILN_GPU_DNN_AVAILABLE 0
#endif
