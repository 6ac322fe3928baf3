// Portability macros shared by host code, GPU code and the run-time compilers.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
#define KILN_HD __host__ __device__
#define KILN_DEVICE_COMPILER 1
#else
#define KILN_HD
#define KILN_DEVICE_COMPILER 0
#endif

// True while compiling code for the GPU itself (not the host side of a .cu file).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KILN_DEVICE_CODE 1
#else
#define KILN_DEVICE_CODE 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KILN_LIKELY(x) __builtin_expect(!!(x), 1)
#define KILN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KILN_INLINE inline __attribute__((always_inline))
#define KILN_NOINLINE __attribute__((noinline))
#else
#define KILN_LIKELY(x) (x)
#define KILN_UNLIKELY(x) (x)
#define KILN_INLINE inline
#define KILN_NOINLINE
#endif

#define KILN_API __attribute__((visibility("default")))
