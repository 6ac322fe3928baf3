// The caching allocator of page-locked ("pinned") host memory behind Tensor::pin_memory() and
// the non_blocking copies that use it.
#pragma once

#include <cstddef>

#include "backend/gpu/device_api.h"
#include "kiln/storage.h"

namespace kiln::gpu {

// Page-locked host memory of at least nbytes (sizes are rounded up to powers of two and cached).
DataPtr pinned_allocate(size_t nbytes);
// Marks the pinned block holding `ptr` as used by work queued on `stream` of `device`: when
// freed, it is reused only after that work finished. False when `ptr` is not from
// pinned_allocate.
bool pinned_record_stream(const void* ptr, int device, StreamHandle stream);
// True for memory from pinned_allocate or page-locked by the runtime otherwise.
bool is_pinned_ptr(const void* ptr);
size_t pinned_allocated_bytes();
size_t pinned_reserved_bytes();
// Returns cached blocks that are free (and whose streams finished) to the driver.
void pinned_empty_cache();

}  // namespace kiln::gpu
