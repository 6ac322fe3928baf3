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

}  // namespace kiln::detail
