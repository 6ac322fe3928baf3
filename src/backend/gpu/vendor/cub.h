// CUB (CUDA) or hipCUB (HIP) under one namespace alias, kiln::gpu::gpucub, and KILN_HAS_CUB (0
// where the HIP build has no hipCUB: callers then take their portable paths). Include it after
// backend/gpu/vendor.h; only .cu files include it.
#pragma once

#include "backend/gpu/vendor.h"

#if KILN_HIP
#if __has_include(<hipcub/hipcub.hpp>)
#include <hipcub/hipcub.hpp>
#define KILN_HAS_CUB 1
namespace kiln::gpu {
namespace gpucub = ::hipcub;
}  // namespace kiln::gpu
#else
#define KILN_HAS_CUB 0
#endif
#else
#include <cub/cub.cuh>
#define KILN_HAS_CUB 1
namespace kiln::gpu {
namespace gpucub = ::cub;
}  // namespace kiln::gpu
#endif
