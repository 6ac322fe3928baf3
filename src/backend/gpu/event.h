// GPU events: creation with PyTorch's flags, record/query/synchronize, timing and IPC handles.
#pragma once

#include <string>

#include "backend/gpu/device_api.h"

namespace kiln::gpu {

// Creates an event on `device` (made current for the call).
EventHandle event_create(int device, bool enable_timing, bool blocking, bool interprocess);
void event_destroy(EventHandle event) noexcept;
void event_record(EventHandle event, StreamHandle stream, const char* op);
bool event_query(EventHandle event, const char* op);
void event_synchronize(EventHandle event, const char* op);
float event_elapsed_ms(EventHandle start, EventHandle end, const char* op);
std::string event_ipc_handle(EventHandle event, const char* op);
EventHandle event_from_ipc_handle(int device, const std::string& handle, const char* op);

}  // namespace kiln::gpu
