// cuBLASLt / hipBLASLt spelled once for kiln's matmul (backend/gpu/blas.cu): the library's types
// and enum names as gpuLt*, and its functions looked up at run time (dlopen), so binaries load
// where the library is absent and say so only when a matmul runs. CUDA: libcublasLt.so.13;
// HIP: libhipblaslt.so. Include after backend/gpu/vendor.h; only blas.cu includes it.
#pragma once

#include "backend/gpu/vendor.h"

#if KILN_CUDA
#include <cublasLt.h>
#define KILN_GPU_LT_AVAILABLE 1
#define KILN_GPU_LT_LIBRARY "libcublasLt.so.13"
#define KILN_GPU_LT_LIBRARY_ALT "libcublasLt.so"
#define KILN_GPU_LT_SYM(name) "cublasLt" #name
#define GPULT_FN(name) cublasLt##name
using gpuLtHandle_t = cublasLtHandle_t;
using gpuLtMatmulDesc_t = cublasLtMatmulDesc_t;
using gpuLtMatrixLayout_t = cublasLtMatrixLayout_t;
using gpuLtMatmulPreference_t = cublasLtMatmulPreference_t;
using gpuLtMatmulHeuristicResult_t = cublasLtMatmulHeuristicResult_t;
using gpuLtStatus_t = cublasStatus_t;
using gpuLtComputeType_t = cublasComputeType_t;
using gpuLtDataType_t = cudaDataType_t;
using gpuLtOperation_t = cublasOperation_t;
#define GPULT_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define GPULT_OP_N CUBLAS_OP_N
#define GPULT_OP_T CUBLAS_OP_T
#define GPULT_OP_C CUBLAS_OP_C
#define GPULT_COMPUTE_32F CUBLAS_COMPUTE_32F
#define GPULT_COMPUTE_32F_FAST_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define GPULT_COMPUTE_64F CUBLAS_COMPUTE_64F
#define GPULT_R_16F CUDA_R_16F
#define GPULT_R_16BF CUDA_R_16BF
#define GPULT_R_32F CUDA_R_32F
#define GPULT_R_64F CUDA_R_64F
#define GPULT_C_32F CUDA_C_32F
#define GPULT_C_64F CUDA_C_64F
#define GPULT_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define GPULT_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define GPULT_LAYOUT_BATCH_COUNT CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
#define GPULT_LAYOUT_BATCH_OFFSET CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
#define GPULT_PREF_MAX_WORKSPACE CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
using gpuLtEpilogue_t = cublasLtEpilogue_t;
#define GPULT_DESC_EPILOGUE CUBLASLT_MATMUL_DESC_EPILOGUE
#define GPULT_DESC_BIAS_POINTER CUBLASLT_MATMUL_DESC_BIAS_POINTER
#define GPULT_DESC_AUX_POINTER CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
#define GPULT_DESC_AUX_LD CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
#define GPULT_EPILOGUE_DEFAULT CUBLASLT_EPILOGUE_DEFAULT
#define GPULT_EPILOGUE_BIAS CUBLASLT_EPILOGUE_BIAS
#define GPULT_EPILOGUE_GELU CUBLASLT_EPILOGUE_GELU
#define GPULT_EPILOGUE_GELU_AUX CUBLASLT_EPILOGUE_GELU_AUX
#define GPULT_EPILOGUE_GELU_BIAS CUBLASLT_EPILOGUE_GELU_BIAS
#define GPULT_EPILOGUE_GELU_AUX_BIAS CUBLASLT_EPILOGUE_GELU_AUX_BIAS
#define GPULT_EPILOGUE_DGELU CUBLASLT_EPILOGUE_DGELU
#define GPULT_EPILOGUE_DGELU_BGRAD CUBLASLT_EPILOGUE_DGELU_BGRAD
#define GPULT_EPILOGUE_BGRADA CUBLASLT_EPILOGUE_BGRADA
#define GPULT_EPILOGUE_BGRADB CUBLASLT_EPILOGUE_BGRADB
#elif __has_include(<hipblaslt/hipblaslt.h>)
#include <hipblaslt/hipblaslt.h>
#define KILN_GPU_LT_AVAILABLE 1
#define KILN_GPU_LT_LIBRARY "libhipblaslt.so.0"
#define KILN_GPU_LT_LIBRARY_ALT "libhipblaslt.so"
#define KILN_GPU_LT_SYM(name) "hipblasLt" #name
#define GPULT_FN(name) hipblasLt##name
using gpuLtHandle_t = hipblasLtHandle_t;
using gpuLtMatmulDesc_t = hipblasLtMatmulDesc_t;
using gpuLtMatrixLayout_t = hipblasLtMatrixLayout_t;
using gpuLtMatmulPreference_t = hipblasLtMatmulPreference_t;
using gpuLtMatmulHeuristicResult_t = hipblasLtMatmulHeuristicResult_t;
using gpuLtStatus_t = hipblasStatus_t;
using gpuLtComputeType_t = hipblasComputeType_t;
using gpuLtDataType_t = hipDataType;
using gpuLtOperation_t = hipblasOperation_t;
#define GPULT_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define GPULT_OP_N HIPBLAS_OP_N
#define GPULT_OP_T HIPBLAS_OP_T
#define GPULT_OP_C HIPBLAS_OP_C
#define GPULT_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define GPULT_COMPUTE_32F_FAST_TF32 HIPBLAS_COMPUTE_32F_FAST_TF32
#define GPULT_COMPUTE_64F HIPBLAS_COMPUTE_64F
#define GPULT_R_16F HIP_R_16F
#define GPULT_R_16BF HIP_R_16BF
#define GPULT_R_32F HIP_R_32F
#define GPULT_R_64F HIP_R_64F
#define GPULT_C_32F HIP_C_32F
#define GPULT_C_64F HIP_C_64F
#define GPULT_DESC_TRANSA HIPBLASLT_MATMUL_DESC_TRANSA
#define GPULT_DESC_TRANSB HIPBLASLT_MATMUL_DESC_TRANSB
#define GPULT_LAYOUT_BATCH_COUNT HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT
#define GPULT_LAYOUT_BATCH_OFFSET HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
#define GPULT_PREF_MAX_WORKSPACE HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
// hipBLASLt's epilogue names (not compile-checked here: no hipBLASLt headers on the build machine).
using gpuLtEpilogue_t = hipblasLtEpilogue_t;
#define GPULT_DESC_EPILOGUE HIPBLASLT_MATMUL_DESC_EPILOGUE
#define GPULT_DESC_BIAS_POINTER HIPBLASLT_MATMUL_DESC_BIAS_POINTER
#define GPULT_DESC_AUX_POINTER HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
#define GPULT_DESC_AUX_LD HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
#define GPULT_EPILOGUE_DEFAULT HIPBLASLT_EPILOGUE_DEFAULT
#define GPULT_EPILOGUE_BIAS HIPBLASLT_EPILOGUE_BIAS
#define GPULT_EPILOGUE_GELU HIPBLASLT_EPILOGUE_GELU
#define GPULT_EPILOGUE_GELU_AUX HIPBLASLT_EPILOGUE_GELU_AUX
#define GPULT_EPILOGUE_GELU_BIAS HIPBLASLT_EPILOGUE_GELU_BIAS
#define GPULT_EPILOGUE_GELU_AUX_BIAS HIPBLASLT_EPILOGUE_GELU_AUX_BIAS
#define GPULT_EPILOGUE_DGELU HIPBLASLT_EPILOGUE_DGELU
#define GPULT_EPILOGUE_DGELU_BGRAD HIPBLASLT_EPILOGUE_DGELU_BGRAD
#define GPULT_EPILOGUE_BGRADA HIPBLASLT_EPILOGUE_BGRADA
#define GPULT_EPILOGUE_BGRADB HIPBLASLT_EPILOGUE_BGRADB
#else
#define KILN_GPU_LT_AVAILABLE 0
#endif
