// Hopper (sm_90a) attention kernels: warpgroup MMA (wgmma) fed by the tensor memory accelerator.
// Built only for CUDA when the architecture list has 90 (KILN_HAVE_SM90, cmake/gpu_lang.cmake);
// callers fall back to flash_mma.cuh / flash_portable.cuh when these return false.
#pragma once

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/flash_params.h"
#include "kiln/dtype.h"

namespace kiln::gpu::flash {

// Runs the forward on a compute-capability 9.0 device and returns true, or returns false (nothing
// launched) for a call these kernels do not handle (dtype, head dim, mask, dropout, layout).
bool sm90_forward(const detail::FlashParams& p, DType dtype, int device, gpuStream_t stream);

// Turns the sm90 kernels on or off for the whole process (default on; KILN_FLASH_SM90=0 in the
// environment starts with them off), so tests and benchmarks can compare with flash_mma.cuh.
void sm90_set_enabled(bool on);

}  // namespace kiln::gpu::flash
