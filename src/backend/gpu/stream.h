// GPU streams: the calling thread's current stream per device, the pool of non-blocking streams
// behind kiln::cuda::Stream, and stream waits/queries. Handles are the vendor stream pointer
// (StreamHandle, 0 = the device's default stream).
#pragma once

#include "backend/gpu/device_api.h"

namespace kiln::gpu {

// `device` must be a valid index (resolve_device) in all of these.
StreamHandle current_stream(int device);
void set_current_stream(int device, StreamHandle stream);
// Round-robin over 32 streams of each priority, created on first use (like PyTorch's pool).
StreamHandle pool_stream(int device, bool high_priority);
// The device's priority range: least (normal, 0) and greatest (most urgent, negative).
void stream_priority_range(int device, int* least, int* greatest);
int stream_priority(StreamHandle stream);
bool stream_query(StreamHandle stream, const char* op);
void stream_synchronize(StreamHandle stream, const char* op);
// Work queued on `stream` later waits for `event`.
void stream_wait_event(StreamHandle stream, EventHandle event, const char* op);
// Work queued on `waiter` later waits for what `waited` has queued so far (both on `device`).
void stream_wait_stream(int device, StreamHandle waiter, StreamHandle waited, const char* op);

}  // namespace kiln::gpu
