// The pending batch of deferred small elementwise ops (Note [Deferred small launches] in
// small_ops.h): queueing under one lock, the flush, and the on/off switch.
#include "backend/gpu/small_ops.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/gpu/runtime.h"
#include "kiln/error.h"

namespace kiln::gpu {

namespace detail_small {
std::atomic<bool> pending{false};
}

namespace {

struct Batch {
  std::mutex mu;
  SmallBatchLaunch launch = nullptr;  // the kind of the queued entries; null: empty
  int device = -1;
  uintptr_t stream = 0;
  size_t entry_size = 0;
  int capacity = 0;
  int count = 0;
  alignas(16) unsigned char bytes[kSmallBatchBytes];
};

Batch& batch() {
  static Batch* b = new Batch();  // Note [Leaked at exit] (stream.cu)
  return *b;
}

std::atomic<uint64_t> g_queued{0}, g_launched{0};

std::atomic<int>& enabled_flag() {  // -1: not read yet
  static std::atomic<int> f{-1};
  return f;
}

// Caller holds b.mu. The batch is emptied before the launch, so a failed launch (it throws)
// leaves nothing half-queued; `pending` drops only once the launch is enqueued, so a thread that
// saw it set and skipped nothing cannot launch ahead of the batch.
void flush_locked(Batch& b) {
  if (b.launch == nullptr) return;
  const SmallBatchLaunch launch = b.launch;
  const int count = b.count;
  b.launch = nullptr;
  b.count = 0;
  struct Clear {
    ~Clear() { detail_small::pending.store(false, std::memory_order_release); }
  } clear;
  DeviceGuard g(b.device);
  g_launched.fetch_add(1, std::memory_order_relaxed);
  launch(b.bytes, count, b.stream);
}

}  // namespace

bool small_ops_enabled() {
  int f = enabled_flag().load(std::memory_order_relaxed);
  if (KILN_UNLIKELY(f < 0)) {
    const char* e = std::getenv("KILN_SMALL_OP_BATCHING");
    f = (e != nullptr && std::strcmp(e, "0") == 0) ? 0 : 1;
    enabled_flag().store(f, std::memory_order_relaxed);
  }
  return f == 1 && !launch_blocking();
}

bool set_small_ops_enabled(bool on) {
  flush_small_ops();
  const bool was = small_ops_enabled();
  enabled_flag().store(on ? 1 : 0, std::memory_order_relaxed);
  return was;
}

bool small_op_defer(SmallBatchLaunch launch, int capacity, int device, uintptr_t stream,
                    const void* entry, size_t size) {
  if (!small_ops_enabled() || capacity < 2) return false;
  KILN_ASSERT(size * static_cast<size_t>(capacity) <= kSmallBatchBytes, "small-op batch size");
  Batch& b = batch();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.launch != nullptr &&
      (b.launch != launch || b.device != device || b.stream != stream || b.count >= b.capacity))
    flush_locked(b);
  if (b.launch == nullptr) {
    b.launch = launch;
    b.device = device;
    b.stream = stream;
    b.entry_size = size;
    b.capacity = capacity;
    b.count = 0;
    detail_small::pending.store(true, std::memory_order_release);
  }
  std::memcpy(b.bytes + size * static_cast<size_t>(b.count), entry, size);
  g_queued.fetch_add(1, std::memory_order_relaxed);
  if (++b.count == b.capacity) flush_locked(b);
  return true;
}

uint64_t small_ops_queued() { return g_queued.load(std::memory_order_relaxed); }
uint64_t small_batches_launched() { return g_launched.load(std::memory_order_relaxed); }

void flush_small_ops() {
  Batch& b = batch();
  std::lock_guard<std::mutex> lock(b.mu);
  flush_locked(b);
}

}  // namespace kiln::gpu
