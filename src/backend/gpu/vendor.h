// Picks the vendor spelling of the portable GPU names (vendor/hip.h for HIP builds and hipcc,
// vendor/cuda.h otherwise) and defines KILN_CUDA / KILN_HIP. Define KILN_GPU_WANT_BLAS, _RTC or
// _SMI before including it for those sections.
#if defined(KILN_GPU_BACKEND_HIP) || defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include "backend/gpu/vendor/hip.h"
#else
#include "backend/gpu/vendor/cuda.h"
#endif
