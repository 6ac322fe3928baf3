// Deferred launches of small elementwise ops (Note [Deferred small launches]): the pending batch,
// its flush, and the hooks every other GPU path calls before it enqueues, waits or frees.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kiln::gpu {

// Note [Deferred small launches]
// A kernel launch costs the host 4-5 us on the H100/H200 machines, more than everything else an
// eager op does. Elementwise ops on at most kSmallOpMaxElems contiguous elements are therefore not
// launched one by one: each appends an entry (its functor, pointers, count, operand modes) to
// one pending batch, and the batch is launched as ONE kernel (a single block running the entries
// in order, a barrier between entries, so an entry reads what earlier ones wrote). A batch holds
// entries of one kernel kind on one (device, stream); another kind, device or stream flushes it
// first. Stream order is kept because everything else that touches the GPU flushes before it
// acts: current_stream() (every launch, cuBLAS/cuDNN call, copy and NCCL call asks it for its
// stream), stream waits, queries and synchronizations, event records, device synchronization
// and the release of device memory to the driver. Allocations do not flush (they enqueue
// nothing): the allocator and the elementwise front end use current_stream_noflush(). Off under
// KILN_LAUNCH_BLOCKING=1 and with KILN_SMALL_OP_BATCHING=0.
inline constexpr int64_t kSmallOpMaxElems = 1024;
// The batch travels as the kernel's parameter block (4 KB at most on CUDA and HIP).
inline constexpr size_t kSmallBatchBytes = 3968;

// Launches `count` entries (laid out back to back in `bytes`) as one kernel on `stream`.
using SmallBatchLaunch = void (*)(const unsigned char* bytes, int count, uintptr_t stream);

namespace detail_small {
extern std::atomic<bool> pending;
}

// The calling thread's current stream on `device` without flushing (stream.cu): for code that
// enqueues nothing (allocation) or defers (the elementwise front end).
uintptr_t current_stream_noflush(int device);

bool small_ops_enabled();
// Test hook: turns deferral on or off (flushes first); returns the previous setting.
bool set_small_ops_enabled(bool on);
// Queues `entry` (`size` bytes, trivially copyable) for `launch` on (device, stream); `capacity`
// entries fit one batch. Returns false, queuing nothing, when deferral is off.
bool small_op_defer(SmallBatchLaunch launch, int capacity, int device, uintptr_t stream,
                    const void* entry, size_t size);
// Counters for tests and benchmarks: ops queued, batches launched (since the start).
uint64_t small_ops_queued();
uint64_t small_batches_launched();
// Launches the pending batch now.
void flush_small_ops();
inline void flush_small_ops_if_pending() {
  if (detail_small::pending.load(std::memory_order_acquire)) flush_small_ops();
}

}  // namespace kiln::gpu
