// Internal tensor construction used by ops: allocation without the public API's checks.
#pragma once

#include "kiln/tensor.h"

namespace kiln::detail {

// Contiguous, uninitialized; symbolic (no storage) while graph capture is active.
Tensor empty_impl(IntArrayRef shape, DType dtype, Device device);
Tensor empty_strided_impl(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device);
// A view of t's storage with new geometry (no checks).
Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset);
// Resizes an out= tensor in place to a contiguous shape, reallocating when it needs more bytes.
void resize_impl(Tensor& t, IntArrayRef shape);
// Bytes needed by a strided layout (max offset + 1 elements).
int64_t storage_elements_needed(IntArrayRef sizes, IntArrayRef strides);
// `device` with a cuda index of -1 replaced by the current cuda device (cpu: unchanged), so every
// tensor names the GPU its memory lives on.
Device resolve_device(Device device);
// nbytes on `device` (index resolved): cuda memory comes from that device's caching allocator on
// its current stream, whatever the current device is (backend/gpu/gpu_allocator.cu; the no-GPU
// build's version throws).
Storage make_device_storage(size_t nbytes, Device device);
Storage make_cuda_storage(size_t nbytes, int device);

}  // namespace kiln::detail
