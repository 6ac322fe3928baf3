// kiln::cuda (include/kiln/cuda.h) in builds without GPU support: is_available() is false,
// device_count() is 0, and everything else throws "[cuda.X] kiln was built without GPU support".
#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/graph_rng.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/tensor.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace version {
const char* const cuda = "";
const char* const hip = "";
}  // namespace version

namespace cuda {

namespace {
[[noreturn]] void no_gpu(const char* what) {
  KILN_ERROR("[cuda.", what, "] kiln was built without GPU support");
}
}  // namespace

bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { no_gpu("current_device"); }
void set_device(int) { no_gpu("set_device"); }
void synchronize(int) { no_gpu("synchronize"); }
DeviceProperties get_device_properties(int) { no_gpu("get_device_properties"); }
std::string get_device_name(int) { no_gpu("get_device_name"); }
std::pair<int, int> get_device_capability(int) { no_gpu("get_device_capability"); }
std::vector<std::string> get_arch_list() { return {}; }
bool can_device_access_peer(int, int) { no_gpu("can_device_access_peer"); }
DeviceGuard::DeviceGuard(int) { no_gpu("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

Stream::Stream(int, int) { no_gpu("Stream"); }
Stream Stream::wrap(int, uintptr_t) { no_gpu("Stream.wrap"); }
int Stream::priority() const { no_gpu("Stream.priority"); }
bool Stream::query() const { no_gpu("Stream.query"); }
void Stream::synchronize() const { no_gpu("Stream.synchronize"); }
void Stream::wait_event(const Event&) const { no_gpu("Stream.wait_event"); }
void Stream::wait_stream(const Stream&) const { no_gpu("Stream.wait_stream"); }
Event Stream::record_event() const { no_gpu("Stream.record_event"); }
void Stream::record_event(Event&) const { no_gpu("Stream.record_event"); }
Stream current_stream(int) { no_gpu("current_stream"); }
Stream default_stream(int) { no_gpu("default_stream"); }
void set_stream(const Stream&) { no_gpu("set_stream"); }
StreamGuard::StreamGuard(const Stream& s) : prev_device_(0), prev_stream_(s) {
  no_gpu("StreamGuard");
}
StreamGuard::~StreamGuard() = default;

Event::Event(bool, bool, bool) { no_gpu("Event"); }
Event::~Event() = default;
Event::Event(Event&& o) noexcept : event_(o.event_), device_(o.device_), flags_(o.flags_) {}
Event& Event::operator=(Event&&) noexcept { return *this; }
void Event::create(int) { no_gpu("Event"); }
void Event::record() { no_gpu("Event.record"); }
void Event::record(const Stream&) { no_gpu("Event.record"); }
void Event::wait() { no_gpu("Event.wait"); }
void Event::wait(const Stream&) { no_gpu("Event.wait"); }
bool Event::query() const { no_gpu("Event.query"); }
void Event::synchronize() const { no_gpu("Event.synchronize"); }
float Event::elapsed_time(const Event&) const { no_gpu("Event.elapsed_time"); }
std::string Event::ipc_handle() const { no_gpu("Event.ipc_handle"); }
Event Event::from_ipc_handle(int, const std::string&) { no_gpu("Event.from_ipc_handle"); }

MempoolId graph_pool_handle() { no_gpu("graph_pool_handle"); }
CUDAGraph::CUDAGraph() : impl_(nullptr) { no_gpu("CUDAGraph"); }
CUDAGraph::~CUDAGraph() = default;
void CUDAGraph::capture_begin(MempoolId, CaptureErrorMode) { no_gpu("CUDAGraph.capture_begin"); }
void CUDAGraph::capture_end() { no_gpu("CUDAGraph.capture_end"); }
void CUDAGraph::replay() { no_gpu("CUDAGraph.replay"); }
void CUDAGraph::reset() { no_gpu("CUDAGraph.reset"); }
MempoolId CUDAGraph::pool() const { no_gpu("CUDAGraph.pool"); }
size_t CUDAGraph::num_nodes() const { no_gpu("CUDAGraph.num_nodes"); }
void graph(CUDAGraph&, const std::function<void()>&, MempoolId, const std::optional<Stream>&,
           CaptureErrorMode) {
  no_gpu("graph");
}

size_t memory_allocated(int) { no_gpu("memory_allocated"); }
size_t max_memory_allocated(int) { no_gpu("max_memory_allocated"); }
size_t memory_reserved(int) { no_gpu("memory_reserved"); }
size_t max_memory_reserved(int) { no_gpu("max_memory_reserved"); }
void reset_peak_memory_stats(int) { no_gpu("reset_peak_memory_stats"); }
void reset_accumulated_memory_stats(int) { no_gpu("reset_accumulated_memory_stats"); }
std::map<std::string, int64_t> memory_stats(int) { no_gpu("memory_stats"); }
std::string memory_snapshot() { no_gpu("memory_snapshot"); }
void dump_snapshot(const std::string&) { no_gpu("dump_snapshot"); }
void record_memory_history(bool, size_t) { no_gpu("record_memory_history"); }
void empty_cache() {}  // nothing is cached: a no-op, as torch.cuda.empty_cache() without CUDA
void set_per_process_memory_fraction(double, int) { no_gpu("set_per_process_memory_fraction"); }
void set_allocator_settings(const std::string&) { no_gpu("set_allocator_settings"); }
std::pair<size_t, size_t> mem_get_info(int) { no_gpu("mem_get_info"); }
std::string list_gpu_processes(int) { no_gpu("list_gpu_processes"); }
void record_stream(const Tensor&, const Stream&) { no_gpu("record_stream"); }
size_t host_memory_allocated() { return 0; }
size_t host_memory_reserved() { return 0; }
void host_empty_cache() {}

}  // namespace cuda

namespace detail {
Tensor pin_memory(const Tensor& t) {
  KILN_CHECK(t.defined(), "[pin_memory] called on an undefined tensor");
  KILN_ERROR("[pin_memory] kiln was built without GPU support: page-locked memory needs a GPU");
}
bool is_pinned(const Tensor&) { return false; }
Storage make_cuda_storage(size_t, int device) {
  KILN_ERROR("[cuda:", device, "] kiln was built without GPU support");
}
}  // namespace detail

namespace gpu {
// No cuda tensor exists without GPU support, so no random op is ever captured.
CapturedRng capture_rng(const Generator&, PhiloxSeedOffset, int) { return {}; }
std::unique_ptr<DeviceApi> make_cuda_device_api(int) {
  KILN_ERROR("[cuda.caching_allocator] kiln was built without GPU support");
}
}  // namespace gpu

}  // namespace kiln
