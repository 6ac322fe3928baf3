// kiln::cuda: GPU devices, streams, events, CUDA graphs and the caching allocator's memory API
// (torch.cuda's names). AMD GPUs are `cuda` too, as in PyTorch on ROCm. No vendor headers here;
// in a build without GPU support is_available() is false and the rest throws kiln::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/device.h"

namespace kiln {

class Tensor;

// The toolkit kiln was built with: version::cuda is "13.0" in a CUDA build, version::hip "5.2"
// in a HIP build; the other (both without GPU support) is "".
namespace version {
extern const char* const cuda;
extern const char* const hip;
}  // namespace version

namespace cuda {

// ---- devices ---------------------------------------------------------------------------------
// In the functions below, device -1 means the current device.
bool is_available();  // false without GPU support, a driver, or a device (never throws)
int device_count();   // 0 in those cases
int current_device();
void set_device(int device);
// Waits for all work on the device.
void synchronize(int device = -1);

struct DeviceProperties {
  std::string name;         // "NVIDIA H100 80GB HBM3"
  size_t total_memory = 0;  // bytes
  int multi_processor_count = 0;
  int warp_size = 0;          // 32 on NVIDIA, 64 on AMD CDNA
  int major = 0, minor = 0;   // compute capability (AMD: the gfx major/minor)
  std::string gcn_arch_name;  // AMD's "gfx90a:sramecc+:xnack-"; empty on NVIDIA
  std::string arch_name;      // "sm_90" or "gfx90a"
  size_t l2_cache_size = 0;
  int max_threads_per_multi_processor = 0;
  bool is_integrated = false;
};
DeviceProperties get_device_properties(int device = -1);
std::string get_device_name(int device = -1);
std::pair<int, int> get_device_capability(int device = -1);
// Whether `device` can reach `peer`'s memory directly (torch.cuda.can_device_access_peer).
// Copies between such GPUs enable peer access and go device to device.
bool can_device_access_peer(int device, int peer);
// The architectures this build carries code for, e.g. {"sm_80", "sm_90"}.
std::vector<std::string> get_arch_list();

// Makes `device` current for the scope, then restores the previous one (torch.cuda.device).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  int original_device() const { return prev_; }

 private:
  int prev_ = -1;
  int cur_ = -1;
};

// ---- streams and events ----------------------------------------------------------------------
class Event;

// A queue of GPU work (cudaStream_t). Cheap to copy: copies name the same stream.
class Stream {
 public:
  // A stream from kiln's pool on `device` (torch.cuda.Stream(device, priority)). As in
  // PyTorch, a lower number is a higher priority: priority < 0 gives a high-priority stream.
  explicit Stream(int device = -1, int priority = 0);
  // An existing vendor stream (cudaStream_t) made on `device`; 0 is the default stream.
  static Stream wrap(int device, uintptr_t handle);

  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, device_); }
  uintptr_t handle() const { return handle_; }  // the cudaStream_t / hipStream_t
  int priority() const;
  bool query() const;  // true when all work queued so far has finished
  void synchronize() const;
  // Later work on this stream waits for `event` / for the work queued on `other` so far.
  void wait_event(const Event& event) const;
  void wait_stream(const Stream& other) const;
  Event record_event() const;
  void record_event(Event& event) const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && handle_ == o.handle_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  Stream(int device, uintptr_t handle, bool) : device_(device), handle_(handle) {}
  int device_ = 0;
  uintptr_t handle_ = 0;
};

// The calling thread's current stream on `device` (the default stream until set).
Stream current_stream(int device = -1);
// The device's default (legacy, synchronizing) stream.
Stream default_stream(int device = -1);
// Makes `s` the current stream of its device for the calling thread.
void set_stream(const Stream& s);

// Makes `s` current (and its device the current device) for the scope (torch.cuda.stream(s)).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int prev_device_;
  Stream prev_stream_;
};

// A marker in a stream (cudaEvent_t), created when first recorded. Move-only.
class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false, bool interprocess = false);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record();  // on the current stream
  void record(const Stream& stream);
  void wait();  // makes the current stream wait for this event
  void wait(const Stream& stream);
  bool query() const;  // true when the recorded work finished (or nothing was recorded)
  void synchronize() const;
  // Milliseconds between this event and `end`, both recorded with enable_timing; waits for both.
  float elapsed_time(const Event& end) const;
  // The interprocess handle (64 bytes) of an Event made with interprocess = true and recorded.
  std::string ipc_handle() const;
  static Event from_ipc_handle(int device, const std::string& handle);

  int device_index() const { return device_; }
  uintptr_t handle() const { return event_; }

 private:
  void create(int device);
  uintptr_t event_ = 0;
  int device_ = -1;
  unsigned flags_ = 0;
  bool recorded_ = false;
};

// ---- CUDA graphs -----------------------------------------------------------------------------
// A private memory pool of the caching allocator ({0, n} for graph pools).
using MempoolId = std::pair<uint64_t, uint64_t>;
// A fresh pool id to share one pool between several graphs (torch.cuda.graph_pool_handle()).
MempoolId graph_pool_handle();

enum class CaptureErrorMode { Global, ThreadLocal, Relaxed };

// A captured sequence of GPU work replayed with one launch (torch.cuda.CUDAGraph).
// Memory allocated during the capture comes from a private pool that stays reserved until the
// graph is reset or destroyed, so replays find their tensors at the same addresses.
class CUDAGraph {
 public:
  CUDAGraph();
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  // Starts capturing the current stream, which must not be the default stream (kiln::cuda::graph
  // switches to a side stream). `pool` shares another graph's pool ({0, 0}: a new one).
  void capture_begin(MempoolId pool = {0, 0}, CaptureErrorMode mode = CaptureErrorMode::Global);
  void capture_end();
  void replay();  // on the current stream
  void reset();   // drops the graph and its pool
  MempoolId pool() const;
  size_t num_nodes() const;  // kernel/copy/memset nodes in the captured graph

 private:
  struct Impl;
  Impl* impl_;
};

// Captures `body` into `g` on a side stream (or `stream`), like `with torch.cuda.graph(g):`.
// Synchronizes the device and empties the cache first; the capture stream waits for the current
// stream before, and the current stream for it after.
void graph(CUDAGraph& g, const std::function<void()>& body, MempoolId pool = {0, 0},
           const std::optional<Stream>& stream = std::nullopt,
           CaptureErrorMode mode = CaptureErrorMode::Global);

// ---- memory (the caching allocator) ----------------------------------------------------------
size_t memory_allocated(int device = -1);
size_t max_memory_allocated(int device = -1);
size_t memory_reserved(int device = -1);
size_t max_memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
void reset_accumulated_memory_stats(int device = -1);
// torch.cuda.memory_stats(): "allocated_bytes.all.current" and the other keys.
std::map<std::string, int64_t> memory_stats(int device = -1);
// torch.cuda.memory_snapshot() as JSON: segments of every device and each device's trace.
std::string memory_snapshot();
// torch.cuda.memory._dump_snapshot(path): a pickle for *.pickle (pytorch.org/memory_viz), else
// JSON.
void dump_snapshot(const std::string& path);
// torch.cuda.memory._record_memory_history: records allocator actions (all devices) in a ring
// buffer of max_entries.
void record_memory_history(bool enabled = true, size_t max_entries = SIZE_MAX);
// Returns unused cached memory of every device to the driver.
void empty_cache();
void set_per_process_memory_fraction(double fraction, int device = -1);
// KILN_CUDA_ALLOC_CONF syntax, applied at run time (torch.cuda.memory._set_allocator_settings).
void set_allocator_settings(const std::string& conf);
// (free, total) bytes of the device (cudaMemGetInfo).
std::pair<size_t, size_t> mem_get_info(int device = -1);
// The processes using the device and their memory, as torch.cuda.list_gpu_processes() prints it
// (NVML, opened at run time).
std::string list_gpu_processes(int device = -1);
// Tensor.record_stream: the tensor's memory is used on `stream` too; it is not reused before the
// work queued there so far has finished.
void record_stream(const Tensor& t, const Stream& stream);

// Page-locked host memory (the pinned allocator behind Tensor::pin_memory).
size_t host_memory_allocated();
size_t host_memory_reserved();
void host_empty_cache();

}  // namespace cuda

namespace detail {
// Backing of Tensor::pin_memory() / is_pinned(): a copy of a CPU tensor in page-locked memory
// (or t itself when already pinned), and whether t's memory is page-locked.
Tensor pin_memory(const Tensor& t);
bool is_pinned(const Tensor& t);
}  // namespace detail

}  // namespace kiln
