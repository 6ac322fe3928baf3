// The CUDA spelling of kiln's portable GPU names (gpuMalloc -> cudaMalloc, gpuStream_t ->
// cudaStream_t, ...). With vendor/hip.h, the only files that include a vendor runtime header.
// Include it through backend/gpu/vendor.h, never directly. No #pragma once: the optional
// sections (BLAS, RTC, SMI) are added when a later includer asks for them.
#ifndef KILN_VENDOR_CUDA_RUNTIME
#define KILN_VENDOR_CUDA_RUNTIME 1

#include <type_traits>

#include <cuda_runtime.h>
// Driver-API types only: kiln reaches the driver through cudaGetDriverEntryPointByVersion, so
// binaries do not link libcuda and load where no driver is installed.
#include <cuda.h>

#define KILN_CUDA 1
#define KILN_HIP 0
#define KILN_GPU_VENDOR_NAME "CUDA"

// Compile-time architecture id of the device code (Note [Architecture ids] in runtime.h):
// sm_XY is XY; 0 on the host pass.
#if defined(__CUDA_ARCH__)
#define KILN_DEVICE_ARCH_ID (__CUDA_ARCH__ / 10)
#else
#define KILN_DEVICE_ARCH_ID 0
#endif

// ---- errors, devices -------------------------------------------------------------------------
using gpuError_t = cudaError_t;
using gpuDeviceProp = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion

// ---- memory ----------------------------------------------------------------------------------
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemGetInfo cudaMemGetInfo
#define gpuHostAlloc cudaHostAlloc
#define gpuHostAllocDefault cudaHostAllocDefault
#define gpuFreeHost cudaFreeHost
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyPeerAsync cudaMemcpyPeerAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyDefault cudaMemcpyDefault

// ---- streams, events, graphs -----------------------------------------------------------------
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
using gpuStreamCaptureMode = cudaStreamCaptureMode;
using gpuIpcEventHandle_t = cudaIpcEventHandle_t;
using gpuCaptureId_t = unsigned long long;
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuStreamGetPriority cudaStreamGetPriority
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuEventDefault cudaEventDefault
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventBlockingSync cudaEventBlockingSync
#define gpuEventInterprocess cudaEventInterprocess
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventRecord cudaEventRecord
#define gpuEventQuery cudaEventQuery
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuEventDestroy cudaEventDestroy
#define gpuIpcGetEventHandle cudaIpcGetEventHandle
#define gpuIpcOpenEventHandle cudaIpcOpenEventHandle
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive cudaStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated cudaStreamCaptureStatusInvalidated
#define gpuStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuThreadExchangeStreamCaptureMode cudaThreadExchangeStreamCaptureMode
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphGetNodes cudaGraphGetNodes
#define gpuFuncSetAttribute cudaFuncSetAttribute

// Capture status and id of a stream (the signature differs between the vendors).
inline gpuError_t gpuStreamGetCaptureStatusAndId(gpuStream_t s, gpuStreamCaptureStatus* status,
                                                 gpuCaptureId_t* id) {
  return cudaStreamGetCaptureInfo(s, status, id);
}

// True when `ptr` is page-locked host memory known to the runtime (cudaHostAlloc/Register).
inline bool gpuPointerIsPinnedHost(const void* ptr) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

// The architecture string of a device: "sm_90".
inline void gpu_arch_name(const gpuDeviceProp& p, char* out, int n) {
  int i = 0;
  const char* prefix = "sm_";
  for (; prefix[i] && i < n - 1; ++i) out[i] = prefix[i];
  if (i < n - 1) out[i++] = static_cast<char>('0' + p.major % 10);
  if (i < n - 1) out[i++] = static_cast<char>('0' + p.minor % 10);
  out[i] = 0;
}

// ---- virtual memory (expandable segments) through the driver API ------------------------------
// gpuVm* wrap cuMemAddressReserve / cuMemCreate / cuMemMap + cuMemSetAccess / cuMemUnmap /
// cuMemRelease / cuMemAddressFree. The driver functions are looked up at run time.
using gpuVmError_t = CUresult;
using gpuVmHandle_t = CUmemGenericAllocationHandle;
#define gpuVmSuccess CUDA_SUCCESS
#define gpuVmErrorOutOfMemory CUDA_ERROR_OUT_OF_MEMORY

namespace kiln::gpu::vendor {

struct DriverApi {
  CUresult (*mem_get_allocation_granularity)(size_t*, const CUmemAllocationProp*,
                                             CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr,
                                  unsigned long long) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                         unsigned long long) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                      unsigned long long) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  bool ok = false;
};

// Looks the driver functions up once; ok is false when the driver lacks them.
inline const DriverApi& driver_api() {
  static const DriverApi api = [] {
    DriverApi a;
    auto get = [](const char* name, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult q{};
      if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) == cudaSuccess &&
          q == cudaDriverEntryPointSuccess)
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      else
        (void)cudaGetLastError();
      return fn != nullptr;
    };
    a.ok = get("cuMemGetAllocationGranularity", a.mem_get_allocation_granularity) &&
           get("cuMemAddressReserve", a.mem_address_reserve) &&
           get("cuMemAddressFree", a.mem_address_free) && get("cuMemCreate", a.mem_create) &&
           get("cuMemRelease", a.mem_release) && get("cuMemMap", a.mem_map) &&
           get("cuMemUnmap", a.mem_unmap) && get("cuMemSetAccess", a.mem_set_access) &&
           get("cuGetErrorString", a.get_error_string);
    return a;
  }();
  return api;
}

inline CUmemAllocationProp vm_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace kiln::gpu::vendor

inline bool gpuVmSupported() { return kiln::gpu::vendor::driver_api().ok; }
inline const char* gpuVmErrorString(gpuVmError_t e) {
  const char* s = nullptr;
  auto& api = kiln::gpu::vendor::driver_api();
  if (api.get_error_string) api.get_error_string(e, &s);
  return s ? s : "unknown driver error";
}
inline gpuVmError_t gpuVmGranularity(int device, size_t* out) {
  CUmemAllocationProp prop = kiln::gpu::vendor::vm_prop(device);
  return kiln::gpu::vendor::driver_api().mem_get_allocation_granularity(
      out, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}
inline gpuVmError_t gpuVmReserve(void** out, size_t size, size_t alignment) {
  CUdeviceptr p = 0;
  CUresult r = kiln::gpu::vendor::driver_api().mem_address_reserve(&p, size, alignment, 0, 0);
  *out = reinterpret_cast<void*>(p);
  return r;
}
inline gpuVmError_t gpuVmFree(void* base, size_t size) {
  return kiln::gpu::vendor::driver_api().mem_address_free(reinterpret_cast<CUdeviceptr>(base),
                                                          size);
}
inline gpuVmError_t gpuVmCreate(gpuVmHandle_t* out, size_t size, int device) {
  CUmemAllocationProp prop = kiln::gpu::vendor::vm_prop(device);
  return kiln::gpu::vendor::driver_api().mem_create(out, size, &prop, 0);
}
inline gpuVmError_t gpuVmRelease(gpuVmHandle_t h) {
  return kiln::gpu::vendor::driver_api().mem_release(h);
}
inline gpuVmError_t gpuVmMap(void* addr, size_t size, gpuVmHandle_t h, int device) {
  auto& api = kiln::gpu::vendor::driver_api();
  auto p = reinterpret_cast<CUdeviceptr>(addr);
  CUresult r = api.mem_map(p, size, 0, h, 0);
  if (r != CUDA_SUCCESS) return r;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = device;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = api.mem_set_access(p, size, &desc, 1);
  if (r != CUDA_SUCCESS) api.mem_unmap(p, size);
  return r;
}
inline gpuVmError_t gpuVmUnmap(void* addr, size_t size) {
  return kiln::gpu::vendor::driver_api().mem_unmap(reinterpret_cast<CUdeviceptr>(addr), size);
}

#endif  // KILN_VENDOR_CUDA_RUNTIME

// ---- BLAS (cuBLAS, cuBLASLt): only where KILN_GPU_WANT_BLAS is defined -------------------------
#if defined(KILN_GPU_WANT_BLAS) && !defined(KILN_VENDOR_CUDA_BLAS)
#define KILN_VENDOR_CUDA_BLAS 1
#include <cublasLt.h>
#include <cublas_v2.h>
#define KILN_GPU_HAS_BLASLT 1
using gpublasHandle_t = cublasHandle_t;
using gpublasStatus_t = cublasStatus_t;
using gpublasOperation_t = cublasOperation_t;
using gpublasComputeType_t = cublasComputeType_t;
using gpuDataType_t = cudaDataType_t;
using gpublasLtHandle_t = cublasLtHandle_t;
using gpublasLtMatmulDesc_t = cublasLtMatmulDesc_t;
using gpublasLtMatrixLayout_t = cublasLtMatrixLayout_t;
using gpublasLtMatmulPreference_t = cublasLtMatmulPreference_t;
using gpublasLtMatmulHeuristicResult_t = cublasLtMatmulHeuristicResult_t;
#define GPUBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define GPUBLAS_OP_N CUBLAS_OP_N
#define GPUBLAS_OP_T CUBLAS_OP_T
#define GPUBLAS_OP_C CUBLAS_OP_C
#define GPUBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define GPUBLAS_COMPUTE_32F_FAST_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define GPUBLAS_COMPUTE_64F CUBLAS_COMPUTE_64F
#define GPU_R_16F CUDA_R_16F
#define GPU_R_16BF CUDA_R_16BF
#define GPU_R_32F CUDA_R_32F
#define GPU_R_64F CUDA_R_64F
#define GPU_C_32F CUDA_C_32F
#define GPU_C_64F CUDA_C_64F
#define gpublasCreate cublasCreate
#define gpublasDestroy cublasDestroy
#define gpublasSetStream cublasSetStream
#define gpublasSetWorkspace cublasSetWorkspace
#define gpublasGetStatusString cublasGetStatusString
#define gpublasGemmEx cublasGemmEx
#define gpublasGemmStridedBatchedEx cublasGemmStridedBatchedEx
#define gpublasLtCreate cublasLtCreate
#define gpublasLtDestroy cublasLtDestroy
#define gpublasLtMatmul cublasLtMatmul
#define gpublasLtMatmulDescCreate cublasLtMatmulDescCreate
#define gpublasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define gpublasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define gpublasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define gpublasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define gpublasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define gpublasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define gpublasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define gpublasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#endif

// ---- run-time compilation (NVRTC): only where KILN_GPU_WANT_RTC is defined ----------------------
#if defined(KILN_GPU_WANT_RTC) && !defined(KILN_VENDOR_CUDA_RTC)
#define KILN_VENDOR_CUDA_RTC 1
#include <nvrtc.h>
using gpurtcResult = nvrtcResult;
using gpurtcProgram = nvrtcProgram;
#define GPURTC_SUCCESS NVRTC_SUCCESS
#define gpurtcCreateProgram nvrtcCreateProgram
#define gpurtcDestroyProgram nvrtcDestroyProgram
#define gpurtcCompileProgram nvrtcCompileProgram
#define gpurtcGetProgramLogSize nvrtcGetProgramLogSize
#define gpurtcGetProgramLog nvrtcGetProgramLog
#define gpurtcGetCodeSize nvrtcGetCUBINSize
#define gpurtcGetCode nvrtcGetCUBIN
#define gpurtcGetErrorString nvrtcGetErrorString
#define gpurtcAddNameExpression nvrtcAddNameExpression
#define gpurtcGetLoweredName nvrtcGetLoweredName
#define gpurtcVersion nvrtcVersion
#endif

// ---- NVML (GPU processes): its stable C ABI, declared here; libnvidia-ml is opened with dlopen
// ---
#if defined(KILN_GPU_WANT_SMI) && !defined(KILN_VENDOR_CUDA_SMI)
#define KILN_VENDOR_CUDA_SMI 1
#define KILN_GPU_HAS_NVML 1
namespace kiln::gpu::vendor::nvml {
using Return = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using Device = struct nvmlDevice_st*;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorInsufficientSize = 7;
struct ProcessInfo {  // nvmlProcessInfo_t (v2 layout, used by the _v3 query)
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using HandleByPciBusIdFn = Return (*)(const char*, Device*);
using ComputeProcessesFn = Return (*)(Device, unsigned int*, ProcessInfo*);
using ErrorStringFn = const char* (*)(Return);
inline constexpr const char* kLibrary = "libnvidia-ml.so.1";
inline constexpr const char* kInit = "nvmlInit_v2";
inline constexpr const char* kShutdown = "nvmlShutdown";
inline constexpr const char* kHandleByPciBusId = "nvmlDeviceGetHandleByPciBusId_v2";
inline constexpr const char* kComputeProcesses = "nvmlDeviceGetComputeRunningProcesses_v3";
inline constexpr const char* kErrorString = "nvmlErrorString";
}  // namespace kiln::gpu::vendor::nvml
#endif
