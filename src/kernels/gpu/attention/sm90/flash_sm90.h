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
// Whether the sm90 kernels are on (sm90_set_enabled / KILN_FLASH_SM90).
bool sm90_enabled();

// The backward's dK / dV kernel (dQ added into p.dq_acc, which must be set: not in deterministic
// mode), in place of mma_backward_kv after mma_backward_prep (l2, dl: its [B, Hq, pad] rows):
// returns true when it ran, false (nothing launched) for a call it does not handle (dtype, head
// dim other than 64 / 128, mask, dropout, GQA, layout, no dq accumulator) or when it is off.
bool sm90_backward(const detail::FlashParams& p, DType dtype, int device, gpuStream_t stream,
                   const float* l2, const float* dl, int64_t pad);
// Whether the dq cast after sm90_backward may be launched as a programmatic dependent of it
// (KILN_FLASH_SM90_PDL, default on).
bool sm90_backward_pdl();
// Turns the sm90 backward on or off (default: on unless KILN_FLASH_SM90_BWD=0; it also follows
// sm90_set_enabled), so tests and benchmarks can compare it with flash_mma's backward.
void sm90_set_backward_enabled(bool on);
// Turns the head-dim-128 sm90 backward on or off (default: on unless KILN_FLASH_SM90_BWD128=0;
// it also follows the two switches above).
void sm90_set_backward128_enabled(bool on);

}  // namespace kiln::gpu::flash
