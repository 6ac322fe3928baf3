// The HIP (ROCm) spelling of kiln's portable GPU names (gpuMalloc -> hipMalloc, gpuStream_t ->
// hipStream_t, ...). With vendor/cuda.h, the only files that include a vendor runtime header.
// Include it through backend/gpu/vendor.h, never directly. No #pragma once: the optional
// sections (BLAS, RTC, SMI) are added when a later includer asks for them.
#ifndef KILN_VENDOR_HIP_RUNTIME
#define KILN_VENDOR_HIP_RUNTIME 1

#include <hip/hip_runtime.h>
#include <hip/hip_version.h>

#define KILN_CUDA 0
#define KILN_HIP 1
#define KILN_GPU_VENDOR_NAME "HIP"

// Compile-time architecture id of the device code (Note [Architecture ids] in runtime.h):
// 100000 + the gfx number read as hexadecimal (gfx90a -> 100000 + 0x90a); 0 on the host pass.
#if defined(__gfx942__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x942)
#elif defined(__gfx941__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x941)
#elif defined(__gfx940__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x940)
#elif defined(__gfx90a__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x90a)
#elif defined(__gfx908__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x908)
#elif defined(__gfx906__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x906)
#elif defined(__gfx1100__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x1100)
#elif defined(__gfx1030__)
#define KILN_DEVICE_ARCH_ID (100000 + 0x1030)
#elif defined(__HIP_DEVICE_COMPILE__)
#define KILN_DEVICE_ARCH_ID 100000
#else
#define KILN_DEVICE_ARCH_ID 0
#endif

// ---- errors, devices -------------------------------------------------------------------------
using gpuError_t = hipError_t;
using gpuDeviceProp = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion

// ---- memory ----------------------------------------------------------------------------------
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemGetInfo hipMemGetInfo
#define gpuHostAlloc hipHostMalloc
#define gpuHostAllocDefault hipHostMallocDefault
#define gpuFreeHost hipHostFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyPeerAsync hipMemcpyPeerAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyDefault hipMemcpyDefault

// True when `ptr` is page-locked host memory known to the runtime (hipHostMalloc/Register).
inline bool gpuPointerIsPinnedHost(const void* ptr) {
  hipPointerAttribute_t a{};
  if (hipPointerGetAttributes(&a, ptr) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
#if HIP_VERSION_MAJOR >= 6
  return a.type == hipMemoryTypeHost;
#else
  return a.memoryType == hipMemoryTypeHost;
#endif
}

// ---- streams, events, graphs -----------------------------------------------------------------
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
using gpuStreamCaptureMode = hipStreamCaptureMode;
using gpuIpcEventHandle_t = hipIpcEventHandle_t;
using gpuCaptureId_t = unsigned long long;
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuStreamGetPriority hipStreamGetPriority
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuEventDefault hipEventDefault
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventBlockingSync hipEventBlockingSync
#define gpuEventInterprocess hipEventInterprocess
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventRecord hipEventRecord
#define gpuEventQuery hipEventQuery
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventDestroy hipEventDestroy
#define gpuIpcGetEventHandle hipIpcGetEventHandle
#define gpuIpcOpenEventHandle hipIpcOpenEventHandle
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamCaptureStatusActive hipStreamCaptureStatusActive
#define gpuStreamCaptureStatusInvalidated hipStreamCaptureStatusInvalidated
#define gpuStreamCaptureModeGlobal hipStreamCaptureModeGlobal
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphGetNodes hipGraphGetNodes
#define gpuFuncSetAttribute hipFuncSetAttribute

// Capture status and id of a stream (the signature differs between the vendors).
inline gpuError_t gpuStreamGetCaptureStatusAndId(gpuStream_t s, gpuStreamCaptureStatus* status,
                                                 gpuCaptureId_t* id) {
  return hipStreamGetCaptureInfo(s, status, id);
}

// The architecture string of a device: "gfx90a" (gcnArchName without its ":sramecc+..." tail).
inline void gpu_arch_name(const gpuDeviceProp& p, char* out, int n) {
  int i = 0;
  for (; p.gcnArchName[i] && p.gcnArchName[i] != ':' && i < n - 1; ++i) out[i] = p.gcnArchName[i];
  out[i] = 0;
}

// ---- virtual memory (expandable segments) ----------------------------------------------------
using gpuVmError_t = hipError_t;
using gpuVmHandle_t = hipMemGenericAllocationHandle_t;
#define gpuVmSuccess hipSuccess
#define gpuVmErrorOutOfMemory hipErrorOutOfMemory

namespace kiln::gpu::vendor {
inline hipMemAllocationProp vm_prop(int device) {
  hipMemAllocationProp prop{};
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = device;
  return prop;
}
}  // namespace kiln::gpu::vendor

inline bool gpuVmSupported() { return true; }
inline const char* gpuVmErrorString(gpuVmError_t e) { return hipGetErrorString(e); }
inline gpuVmError_t gpuVmGranularity(int device, size_t* out) {
  hipMemAllocationProp prop = kiln::gpu::vendor::vm_prop(device);
  return hipMemGetAllocationGranularity(out, &prop, hipMemAllocationGranularityMinimum);
}
inline gpuVmError_t gpuVmReserve(void** out, size_t size, size_t alignment) {
  return hipMemAddressReserve(out, size, alignment, nullptr, 0);
}
inline gpuVmError_t gpuVmFree(void* base, size_t size) { return hipMemAddressFree(base, size); }
inline gpuVmError_t gpuVmCreate(gpuVmHandle_t* out, size_t size, int device) {
  hipMemAllocationProp prop = kiln::gpu::vendor::vm_prop(device);
  return hipMemCreate(out, size, &prop, 0);
}
inline gpuVmError_t gpuVmRelease(gpuVmHandle_t h) { return hipMemRelease(h); }
inline gpuVmError_t gpuVmMap(void* addr, size_t size, gpuVmHandle_t h, int device) {
  hipError_t r = hipMemMap(addr, size, 0, h, 0);
  if (r != hipSuccess) return r;
  hipMemAccessDesc desc{};
  desc.location.type = hipMemLocationTypeDevice;
  desc.location.id = device;
  desc.flags = hipMemAccessFlagsProtReadWrite;
  r = hipMemSetAccess(addr, size, &desc, 1);
  if (r != hipSuccess) (void)hipMemUnmap(addr, size);
  return r;
}
inline gpuVmError_t gpuVmUnmap(void* addr, size_t size) { return hipMemUnmap(addr, size); }

#endif  // KILN_VENDOR_HIP_RUNTIME

// ---- BLAS (hipBLAS, hipBLASLt where installed): only where KILN_GPU_WANT_BLAS is defined -------
#if defined(KILN_GPU_WANT_BLAS) && !defined(KILN_VENDOR_HIP_BLAS)
#define KILN_VENDOR_HIP_BLAS 1
#if __has_include(<hipblas/hipblas.h>)
#include <hipblas/hipblas.h>
#else
#include <hipblas.h>
#endif
using gpublasHandle_t = hipblasHandle_t;
using gpublasStatus_t = hipblasStatus_t;
using gpublasOperation_t = hipblasOperation_t;
#define GPUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define GPUBLAS_OP_N HIPBLAS_OP_N
#define GPUBLAS_OP_T HIPBLAS_OP_T
#define GPUBLAS_OP_C HIPBLAS_OP_C
#define gpublasCreate hipblasCreate
#define gpublasDestroy hipblasDestroy
#define gpublasSetStream hipblasSetStream
#define gpublasGemmEx hipblasGemmEx
#define gpublasGemmStridedBatchedEx hipblasGemmStridedBatchedEx
#if __has_include(<hipblaslt/hipblaslt.h>)
#include <hipblaslt/hipblaslt.h>
#define KILN_GPU_HAS_BLASLT 1
using gpublasLtHandle_t = hipblasLtHandle_t;
using gpublasLtMatmulDesc_t = hipblasLtMatmulDesc_t;
using gpublasLtMatrixLayout_t = hipblasLtMatrixLayout_t;
using gpublasLtMatmulPreference_t = hipblasLtMatmulPreference_t;
using gpublasLtMatmulHeuristicResult_t = hipblasLtMatmulHeuristicResult_t;
#define gpublasLtCreate hipblasLtCreate
#define gpublasLtDestroy hipblasLtDestroy
#define gpublasLtMatmul hipblasLtMatmul
#define gpublasLtMatmulDescCreate hipblasLtMatmulDescCreate
#define gpublasLtMatmulDescDestroy hipblasLtMatmulDescDestroy
#define gpublasLtMatmulDescSetAttribute hipblasLtMatmulDescSetAttribute
#define gpublasLtMatrixLayoutCreate hipblasLtMatrixLayoutCreate
#define gpublasLtMatrixLayoutDestroy hipblasLtMatrixLayoutDestroy
#define gpublasLtMatmulPreferenceCreate hipblasLtMatmulPreferenceCreate
#define gpublasLtMatmulPreferenceDestroy hipblasLtMatmulPreferenceDestroy
#define gpublasLtMatmulPreferenceSetAttribute hipblasLtMatmulPreferenceSetAttribute
#define gpublasLtMatmulAlgoGetHeuristic hipblasLtMatmulAlgoGetHeuristic
#else
#define KILN_GPU_HAS_BLASLT 0
#endif
#endif

// ---- run-time compilation (hiprtc): only where KILN_GPU_WANT_RTC is defined ---------------------
#if defined(KILN_GPU_WANT_RTC) && !defined(KILN_VENDOR_HIP_RTC)
#define KILN_VENDOR_HIP_RTC 1
#include <hip/hiprtc.h>
using gpurtcResult = hiprtcResult;
using gpurtcProgram = hiprtcProgram;
#define GPURTC_SUCCESS HIPRTC_SUCCESS
#define gpurtcCreateProgram hiprtcCreateProgram
#define gpurtcDestroyProgram hiprtcDestroyProgram
#define gpurtcCompileProgram hiprtcCompileProgram
#define gpurtcGetProgramLogSize hiprtcGetProgramLogSize
#define gpurtcGetProgramLog hiprtcGetProgramLog
#define gpurtcGetCodeSize hiprtcGetCodeSize
#define gpurtcGetCode hiprtcGetCode
#define gpurtcGetErrorString hiprtcGetErrorString
#define gpurtcAddNameExpression hiprtcAddNameExpression
#define gpurtcGetLoweredName hiprtcGetLoweredName
#define gpurtcVersion hiprtcVersion
#endif

// ---- SMI: ROCm has no NVML; list_gpu_processes says so -----------------------------------------
#if defined(KILN_GPU_WANT_SMI) && !defined(KILN_VENDOR_HIP_SMI)
#define KILN_VENDOR_HIP_SMI 1
#define KILN_GPU_HAS_NVML 0
#endif
