// kiln::cuda (include/kiln/cuda.h) in GPU builds: devices, streams, events, graphs and the
// memory API over the runtime, the caching allocators and the pinned allocator.
#define KILN_GPU_WANT_SMI 1

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/small_ops.h"
#include "backend/gpu/vendor.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "backend/gpu/event.h"
#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/graph.h"
#include "backend/gpu/kernel_error.h"
#include "backend/gpu/pinned_allocator.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "kiln/cuda.h"
#include "kiln/detail/tensor_impl.h"
#include "kiln/tensor.h"

namespace kiln {

namespace {
struct VersionString {
  char s[16] = {};
};
constexpr VersionString make_version(int major, int minor) {
  VersionString v;
  int i = 0;
  if (major >= 10) v.s[i++] = static_cast<char>('0' + major / 10);
  v.s[i++] = static_cast<char>('0' + major % 10);
  v.s[i++] = '.';
  if (minor >= 10) v.s[i++] = static_cast<char>('0' + minor / 10);
  v.s[i++] = static_cast<char>('0' + minor % 10);
  return v;
}
#if KILN_CUDA
constexpr VersionString kToolkit =
    make_version(CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
#else
constexpr VersionString kToolkit = make_version(HIP_VERSION_MAJOR, HIP_VERSION_MINOR);
#endif
}  // namespace

namespace version {
const char* const cuda = KILN_CUDA ? kToolkit.s : "";
const char* const hip = KILN_HIP ? kToolkit.s : "";
}  // namespace version

namespace cuda {

// ---- devices ---------------------------------------------------------------------------------

bool is_available() { return gpu::device_count() > 0; }
int device_count() { return gpu::device_count(); }
int current_device() { return gpu::current_device(); }
void set_device(int device) { gpu::set_device(device); }

void synchronize(int device) {
  int d = gpu::resolve_device(device, "cuda.synchronize");
  gpu::DeviceGuard g(d);
  gpu::flush_small_ops_if_pending();
  KILN_GPU_CHECK("cuda.synchronize", gpuDeviceSynchronize());
  gpu::check_kernel_errors();
}

DeviceProperties get_device_properties(int device) {
  const gpu::DeviceInfo& i = gpu::device_info(device);
  DeviceProperties p;
  p.name = i.name;
  p.total_memory = i.total_memory;
  p.multi_processor_count = i.multi_processor_count;
  p.warp_size = i.warp_size;
  p.major = i.major;
  p.minor = i.minor;
  p.gcn_arch_name = i.gcn_arch_name;
  p.arch_name = i.arch_name;
  p.l2_cache_size = i.l2_cache_size;
  p.max_threads_per_multi_processor = i.max_threads_per_multi_processor;
  p.is_integrated = i.is_integrated;
  return p;
}

std::string get_device_name(int device) { return gpu::device_info(device).name; }

std::pair<int, int> get_device_capability(int device) {
  const gpu::DeviceInfo& i = gpu::device_info(device);
  return {i.major, i.minor};
}

bool can_device_access_peer(int device, int peer) { return gpu::can_access_peer(device, peer); }

std::vector<std::string> get_arch_list() {
  std::vector<std::string> out;
#ifdef KILN_GPU_ARCHS
  // CMAKE_CUDA_ARCHITECTURES / CMAKE_HIP_ARCHITECTURES joined by commas: "80,90-real", "gfx90a".
  std::stringstream ss(KILN_GPU_ARCHS);
  std::string a;
  while (std::getline(ss, a, ',')) {
    a = a.substr(0, a.find('-'));
    if (!a.empty()) out.push_back(KILN_CUDA ? "sm_" + a : a);
  }
#endif
  return out;
}

DeviceGuard::DeviceGuard(int device) {
  cur_ = gpu::resolve_device(device, "cuda.DeviceGuard");
  prev_ = gpu::current_device();
  if (prev_ != cur_) gpu::set_device(cur_);
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0 && prev_ != cur_) (void)gpuSetDevice(prev_);
}

// ---- streams ---------------------------------------------------------------------------------

Stream::Stream(int device, int priority) {
  device_ = gpu::resolve_device(device, "cuda.Stream");
  handle_ = gpu::pool_stream(device_, priority < 0);
}

Stream Stream::wrap(int device, uintptr_t handle) {
  return Stream(gpu::resolve_device(device, "cuda.Stream.wrap"), handle, true);
}

int Stream::priority() const { return handle_ == 0 ? 0 : gpu::stream_priority(handle_); }
bool Stream::query() const {
  gpu::DeviceGuard g(device_);
  return gpu::stream_query(handle_, "cuda.Stream.query");
}
void Stream::synchronize() const {
  gpu::DeviceGuard g(device_);
  gpu::stream_synchronize(handle_, "cuda.Stream.synchronize");
}
void Stream::wait_event(const Event& event) const {
  if (event.handle() == 0) return;  // never recorded: nothing to wait for
  gpu::DeviceGuard g(device_);
  gpu::stream_wait_event(handle_, event.handle(), "cuda.Stream.wait_event");
}
void Stream::wait_stream(const Stream& other) const {
  gpu::DeviceGuard g(device_);
  gpu::stream_wait_stream(other.device_, handle_, other.handle_, "cuda.Stream.wait_stream");
}
Event Stream::record_event() const {
  Event e;
  e.record(*this);
  return e;
}
void Stream::record_event(Event& event) const { event.record(*this); }

Stream current_stream(int device) {
  int d = gpu::resolve_device(device, "cuda.current_stream");
  return Stream::wrap(d, gpu::current_stream(d));
}
Stream default_stream(int device) {
  return Stream::wrap(gpu::resolve_device(device, "cuda.default_stream"), 0);
}
void set_stream(const Stream& s) { gpu::set_current_stream(s.device_index(), s.handle()); }

StreamGuard::StreamGuard(const Stream& s)
    : prev_device_(gpu::current_device()), prev_stream_(current_stream(s.device_index())) {
  if (prev_device_ != s.device_index()) gpu::set_device(s.device_index());
  set_stream(s);
}

StreamGuard::~StreamGuard() {
  gpu::set_current_stream(prev_stream_.device_index(), prev_stream_.handle());
  if (prev_device_ != prev_stream_.device_index()) (void)gpuSetDevice(prev_device_);
}

// ---- events ----------------------------------------------------------------------------------

namespace {
constexpr unsigned kTiming = 1, kBlocking = 2, kInterprocess = 4;
}

Event::Event(bool enable_timing, bool blocking, bool interprocess)
    : flags_((enable_timing ? kTiming : 0) | (blocking ? kBlocking : 0) |
             (interprocess ? kInterprocess : 0)) {
  KILN_CHECK(!(enable_timing && interprocess),
             "[cuda.Event] an interprocess event cannot have enable_timing=true");
}

Event::~Event() { gpu::event_destroy(event_); }

Event::Event(Event&& o) noexcept
    : event_(o.event_), device_(o.device_), flags_(o.flags_), recorded_(o.recorded_) {
  o.event_ = 0;
  o.recorded_ = false;
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    gpu::event_destroy(event_);
    event_ = o.event_;
    device_ = o.device_;
    flags_ = o.flags_;
    recorded_ = o.recorded_;
    o.event_ = 0;
    o.recorded_ = false;
  }
  return *this;
}

void Event::create(int device) {
  if (event_ != 0) return;
  event_ = gpu::event_create(device, flags_ & kTiming, flags_ & kBlocking, flags_ & kInterprocess);
  device_ = device;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& stream) {
  create(stream.device_index());
  KILN_CHECK(device_ == stream.device_index(),
             "[cuda.Event.record] the event was created on cuda:", device_,
             " but the stream is on cuda:", stream.device_index());
  gpu::DeviceGuard g(device_);
  gpu::event_record(event_, stream.handle(), "cuda.Event.record");
  recorded_ = true;
}

void Event::wait() { wait(current_stream()); }
void Event::wait(const Stream& stream) { stream.wait_event(*this); }

bool Event::query() const {
  if (event_ == 0) return true;
  gpu::DeviceGuard g(device_);
  return gpu::event_query(event_, "cuda.Event.query");
}

void Event::synchronize() const {
  if (event_ == 0) return;
  gpu::DeviceGuard g(device_);
  gpu::event_synchronize(event_, "cuda.Event.synchronize");
}

float Event::elapsed_time(const Event& end) const {
  const char* op = "cuda.Event.elapsed_time";
  KILN_CHECK((flags_ & kTiming) && (end.flags_ & kTiming), "[", op,
             "] both events must be created with enable_timing=true");
  KILN_CHECK(recorded_ && end.recorded_, "[", op,
             "] both events must be recorded before calculating elapsed time");
  synchronize();
  end.synchronize();
  gpu::DeviceGuard g(device_);
  return gpu::event_elapsed_ms(event_, end.event_, op);
}

std::string Event::ipc_handle() const {
  const char* op = "cuda.Event.ipc_handle";
  KILN_CHECK(flags_ & kInterprocess, "[", op, "] the event was not created with interprocess=true");
  if (event_ == 0) const_cast<Event*>(this)->create(gpu::current_device());
  return gpu::event_ipc_handle(event_, op);
}

Event Event::from_ipc_handle(int device, const std::string& handle) {
  const char* op = "cuda.Event.from_ipc_handle";
  int d = gpu::resolve_device(device, op);
  Event e(false, false, true);
  e.event_ = gpu::event_from_ipc_handle(d, handle, op);
  e.device_ = d;
  e.recorded_ = true;
  return e;
}

// ---- graphs ----------------------------------------------------------------------------------

struct CUDAGraph::Impl : gpu::Graph {};

MempoolId graph_pool_handle() { return gpu::new_pool_id(); }

CUDAGraph::CUDAGraph() : impl_(new Impl()) {}
CUDAGraph::~CUDAGraph() { delete impl_; }
void CUDAGraph::capture_begin(MempoolId pool, CaptureErrorMode mode) {
  impl_->capture_begin(pool, static_cast<int>(mode));
}
void CUDAGraph::capture_end() { impl_->capture_end(); }
void CUDAGraph::replay() { impl_->replay(); }
void CUDAGraph::reset() { impl_->reset(); }
MempoolId CUDAGraph::pool() const { return impl_->pool(); }
size_t CUDAGraph::num_nodes() const { return impl_->num_nodes(); }

void graph(CUDAGraph& g, const std::function<void()>& body, MempoolId pool,
           const std::optional<Stream>& stream, CaptureErrorMode mode) {
  int dev = gpu::current_device();
  synchronize(dev);
  empty_cache();
  static thread_local std::vector<std::optional<Stream>> side(static_cast<size_t>(device_count()));
  auto& slot = side[static_cast<size_t>(dev)];
  if (!stream && !slot) slot = Stream(dev);
  Stream cap = stream ? *stream : *slot;
  StreamGuard guard(cap);
  g.capture_begin(pool, mode);
  try {
    body();
  } catch (...) {
    g.reset();  // ends the capture and drops it
    throw;
  }
  g.capture_end();
}

// ---- memory ----------------------------------------------------------------------------------

namespace {
gpu::CachingAllocator& alloc(int device, const char* op) {
  return gpu::device_allocator(gpu::resolve_device(device, op));
}
}  // namespace

size_t memory_allocated(int device) {
  return alloc(device, "cuda.memory_allocated").memory_allocated();
}
size_t max_memory_allocated(int device) {
  return alloc(device, "cuda.max_memory_allocated").max_memory_allocated();
}
size_t memory_reserved(int device) {
  return alloc(device, "cuda.memory_reserved").memory_reserved();
}
size_t max_memory_reserved(int device) {
  return alloc(device, "cuda.max_memory_reserved").max_memory_reserved();
}
void reset_peak_memory_stats(int device) {
  alloc(device, "cuda.reset_peak_memory_stats").reset_peak_memory_stats();
}
void reset_accumulated_memory_stats(int device) {
  alloc(device, "cuda.reset_accumulated_memory_stats").reset_accumulated_memory_stats();
}

std::map<std::string, int64_t> memory_stats(int device) {
  std::map<std::string, int64_t> out;
  for (auto& [k, v] : alloc(device, "cuda.memory_stats").memory_stats()) out.emplace(k, v);
  return out;
}

namespace {
gpu::Snapshot all_devices_snapshot(const char* op) {
  gpu::resolve_device(-1, op);
  gpu::device_allocator(gpu::current_device());  // at least the current device
  gpu::Snapshot all;
  gpu::for_each_allocator([&](gpu::CachingAllocator& a) {
    gpu::Snapshot s = a.memory_snapshot();
    for (auto& seg : s.segments) all.segments.push_back(std::move(seg));
    if (all.device_traces.size() < s.device_traces.size())
      all.device_traces.resize(s.device_traces.size());
    auto d = static_cast<size_t>(a.device());
    if (d < s.device_traces.size()) all.device_traces[d] = std::move(s.device_traces[d]);
    all.settings = s.settings;
  });
  std::sort(all.segments.begin(), all.segments.end(),
            [](const auto& x, const auto& y) { return x.address < y.address; });
  return all;
}
}  // namespace

std::string memory_snapshot() {
  return gpu::snapshot_to_json(all_devices_snapshot("cuda.memory_snapshot"));
}

void dump_snapshot(const std::string& path) {
  gpu::Snapshot s = all_devices_snapshot("cuda.dump_snapshot");
  auto ends_with = [&](const char* suffix) {
    std::string x(suffix);
    return path.size() >= x.size() && path.compare(path.size() - x.size(), x.size(), x) == 0;
  };
  bool pickle = ends_with(".pickle") || ends_with(".pkl");
  gpu::write_file_atomically(path, pickle ? gpu::snapshot_to_pickle(s) : gpu::snapshot_to_json(s));
}

void record_memory_history(bool enabled, size_t max_entries) {
  int n = gpu::device_count();
  KILN_CHECK(n > 0, "[cuda.record_memory_history] no GPU is available");
  for (int d = 0; d < n; ++d) gpu::device_allocator(d).record_memory_history(enabled, max_entries);
}

void empty_cache() {
  gpu::for_each_allocator([](gpu::CachingAllocator& a) { a.empty_cache(); });
}

void set_per_process_memory_fraction(double fraction, int device) {
  alloc(device, "cuda.set_per_process_memory_fraction").set_per_process_memory_fraction(fraction);
}

void set_allocator_settings(const std::string& conf) {
  int n = gpu::device_count();
  KILN_CHECK(n > 0, "[cuda.set_allocator_settings] no GPU is available");
  gpu::AllocatorConfig c = gpu::AllocatorConfig::parse(conf);
  for (int d = 0; d < n; ++d) gpu::device_allocator(d).set_config(c);
}

std::pair<size_t, size_t> mem_get_info(int device) {
  int d = gpu::resolve_device(device, "cuda.mem_get_info");
  gpu::DeviceGuard g(d);
  size_t free = 0, total = 0;
  KILN_GPU_CHECK("cuda.mem_get_info", gpuMemGetInfo(&free, &total));
  return {free, total};
}

std::string list_gpu_processes(int device) {
  int d = gpu::resolve_device(device, "cuda.list_gpu_processes");
  std::ostringstream os;
  os << "GPU:" << d;
#if KILN_GPU_HAS_NVML
  namespace nvml = gpu::vendor::nvml;
  static void* lib = dlopen(nvml::kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    os << "\nNVML (" << nvml::kLibrary << ") was not found";
    return os.str();
  }
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<nvml::InitFn>(sym(nvml::kInit));
  auto by_bus = reinterpret_cast<nvml::HandleByPciBusIdFn>(sym(nvml::kHandleByPciBusId));
  auto procs_fn = reinterpret_cast<nvml::ComputeProcessesFn>(sym(nvml::kComputeProcesses));
  auto err_str = reinterpret_cast<nvml::ErrorStringFn>(sym(nvml::kErrorString));
  if (!init || !by_bus || !procs_fn || !err_str) {
    os << "\nNVML lacks the functions kiln needs";
    return os.str();
  }
  // NVML failures are reported in the text, as torch does when pynvml is missing.
  static const nvml::Return init_status = init();
  if (init_status != nvml::kSuccess) {
    os << "\nNVML could not be initialized: " << err_str(init_status);
    return os.str();
  }
  char bus[64] = {};
  KILN_GPU_CHECK("cuda.list_gpu_processes", gpuDeviceGetPCIBusId(bus, sizeof(bus), d));
  nvml::Device dev = nullptr;
  nvml::Return r = by_bus(bus, &dev);
  if (r != nvml::kSuccess) {
    os << "\nNVML does not know the device at PCI bus " << bus << ": " << err_str(r);
    return os.str();
  }
  std::vector<nvml::ProcessInfo> procs(64);
  unsigned count = static_cast<unsigned>(procs.size());
  r = procs_fn(dev, &count, procs.data());
  if (r == nvml::kErrorInsufficientSize) {
    procs.resize(count + 16);
    count = static_cast<unsigned>(procs.size());
    r = procs_fn(dev, &count, procs.data());
  }
  if (r != nvml::kSuccess) {
    os << "\nNVML could not list the processes: " << err_str(r);
    return os.str();
  }
  if (count == 0) os << "\nno processes are running";
  for (unsigned i = 0; i < count; ++i) {
    char line[96];
    std::snprintf(line, sizeof(line), "\nprocess %10u uses %12.3f MB GPU memory", procs[i].pid,
                  static_cast<double>(procs[i].used_gpu_memory) / (1024.0 * 1024.0));
    os << line;
  }
#else
  os << "\nlisting GPU processes needs NVML, which ROCm builds do not have";
#endif
  return os.str();
}

void record_stream(const Tensor& t, const Stream& stream) {
  KILN_CHECK(t.defined() && t.is_cuda(), "[record_stream] expects a cuda tensor");
  if (!t.impl()->has_storage()) return;
  const DataPtr& p = t.impl()->storage()->ptr;
  gpu::CachingAllocator* a = gpu::allocator_of(p);
  if (a != nullptr) a->record_stream(p.data, stream.handle());
}

size_t host_memory_allocated() { return gpu::pinned_allocated_bytes(); }
size_t host_memory_reserved() { return gpu::pinned_reserved_bytes(); }
void host_empty_cache() { gpu::pinned_empty_cache(); }

}  // namespace cuda
}  // namespace kiln
