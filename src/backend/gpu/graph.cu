// gpu::Graph: capture of the current stream into a graph (allocations go to a private pool of
// the caching allocator), graph-safe random-number state, instantiation, replay and teardown.
#include <algorithm>
#include <cstdio>
#include <mutex>

#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/graph.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "backend/gpu/vendor.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

// Note [Graph-safe random numbers]
// --------------------------------
// A replayed graph runs the captured kernels with the arguments they had at capture time, so a
// random kernel that took its Philox (seed, offset) by value would draw the same numbers on every
// replay. As PyTorch's philox_cuda_state does, a captured random op instead gets a device tensor
// `state` = {seed, base} and its offset relative to `base` (capture_rng); the kernel reads
// seed = state[0] and offset = state[1] + relative offset when it runs. Per generator used in the
// capture, the graph remembers `base` (the generator's offset at its first use) and the counters
// the capture consumed (`used`); capture_end gives those counters back (capturing draws nothing),
// and every replay reserves `used` fresh counters from the generator and writes {seed, offset}
// into `state` on the replay stream just before launching the graph. So a replay consumes the
// generator exactly as running the captured ops eagerly would, and with equal (seed, offset) it
// gives the same numbers as the eager ops.

namespace {
gpuStream_t as_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

// Graphs that are capturing now, found by capture_rng through their capture id.
std::mutex g_active_mu;
struct ActiveEntry {
  Graph* graph;
  int device;
  unsigned long long id;
};
std::vector<ActiveEntry> g_active_ids;

void set_active(Graph* g, int device, unsigned long long id, bool on) {
  std::lock_guard<std::mutex> lock(g_active_mu);
  auto& v = g_active_ids;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const ActiveEntry& e) { return e.graph == g; }),
          v.end());
  if (on) v.push_back({g, device, id});
}

__global__ void write_rng_state_kernel(int64_t* state, uint64_t seed, uint64_t offset) {
  state[0] = static_cast<int64_t>(seed);
  state[1] = static_cast<int64_t>(offset);
}
}  // namespace

CapturedRng capture_rng(const Generator& gen, PhiloxSeedOffset so, int device) {
  const char* op = "random";
  gpuStreamCaptureStatus st{};
  gpuCaptureId_t id = 0;
  device = resolve_device(device, op);
  DeviceGuard guard(device);
  StreamHandle s = current_stream(device);
  KILN_GPU_CHECK(op, gpuStreamGetCaptureStatusAndId(as_stream(s), &st, &id));
  if (st != gpuStreamCaptureStatusActive) return {};
  Graph* g = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_active_mu);
    for (const ActiveEntry& e : g_active_ids)
      if (e.device == device && e.id == id) g = e.graph;
  }
  KILN_CHECK(g != nullptr, "[", op,
             "] a random op is being captured into a graph that kiln::cuda::CUDAGraph did not "
             "begin: its replays would repeat the same numbers");
  return g->use_rng(gen, so);
}

CapturedRng Graph::use_rng(const Generator& gen, PhiloxSeedOffset so) {
  auto it = std::find_if(rng_.begin(), rng_.end(), [&](const RngUse& u) { return u.gen == gen; });
  if (it == rng_.end()) {
    RngUse u{gen, so.offset, 0, {}};
    // From the graph's private pool (the current stream is capturing): it lives as long as the
    // graph, at a fixed address.
    u.state = ::kiln::detail::empty_impl({2}, DType::Int64, Device(kCUDA, device_));
    rng_.push_back(std::move(u));
    it = rng_.end() - 1;
  }
  KILN_CHECK(so.offset >= it->base,
             "[random] the generator's offset moved backwards during a "
             "graph capture");
  return {it->state, so.offset - it->base};
}

Graph::~Graph() {
  try {
    reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: warning: destroying a CUDA graph failed: %s\n", e.what());
  }
}

void Graph::capture_begin(PoolId pool, int mode) {
  const char* op = "cuda.CUDAGraph.capture_begin";
  KILN_CHECK(!capturing_, "[", op, "] a capture into this graph is already underway");
  KILN_CHECK(exec_ == 0, "[", op, "] this graph already holds a capture; call reset() first");
  int dev = current_device();
  StreamHandle stream = current_stream(dev);
  KILN_CHECK(stream != 0, "[", op,
             "] cannot capture the default stream: make a side stream current first "
             "(kiln::cuda::graph does this)");
  if (holds_pool_) {  // a reset graph captured again
    device_allocator(device_).release_pool(pool_);
    holds_pool_ = false;
  }
  device_ = dev;
  stream_ = stream;
  pool_ = pool == PoolId{0, 0} ? new_pool_id() : pool;
  CachingAllocator& alloc = device_allocator(dev);
  // Allocations from streams taking part in this capture go to the private pool.
  alloc.begin_allocate_to_pool(pool_, [this](StreamHandle s) {
    gpuStreamCaptureStatus st{};
    gpuCaptureId_t id = 0;
    if (gpuStreamGetCaptureStatusAndId(as_stream(s), &st, &id) != gpuSuccess) {
      (void)gpuGetLastError();
      return false;
    }
    return st == gpuStreamCaptureStatusActive && id == capture_id_;
  });
  holds_pool_ = true;
  gpuStreamCaptureMode m = mode == 1   ? gpuStreamCaptureModeThreadLocal
                           : mode == 2 ? gpuStreamCaptureModeRelaxed
                                       : gpuStreamCaptureModeGlobal;
  gpuError_t e = gpuStreamBeginCapture(as_stream(stream), m);
  if (e == gpuSuccess) {
    gpuStreamCaptureStatus st{};
    gpuCaptureId_t id = 0;
    e = gpuStreamGetCaptureStatusAndId(as_stream(stream), &st, &id);
    capture_id_ = id;
  }
  if (e == gpuSuccess) set_active(this, dev, capture_id_, true);
  if (e != gpuSuccess) {
    alloc.end_allocate_to_pool(pool_);
    alloc.release_pool(pool_);
    holds_pool_ = false;
    throw_gpu_error(static_cast<int>(e), op, "gpuStreamBeginCapture");
  }
  capturing_ = true;
}

void Graph::capture_end() {
  const char* op = "cuda.CUDAGraph.capture_end";
  KILN_CHECK(capturing_, "[", op, "] no capture is underway (call capture_begin first)");
  DeviceGuard guard(device_);
  KILN_CHECK(current_stream(device_) == stream_, "[", op,
             "] the capture must end on the stream it began on");
  gpuGraph_t graph = nullptr;
  gpuError_t e = gpuStreamEndCapture(as_stream(stream_), &graph);
  capturing_ = false;
  set_active(this, device_, 0, false);
  device_allocator(device_).end_allocate_to_pool(pool_);
  // Capturing draws no numbers: give the counters back; each replay reserves them afresh.
  for (RngUse& u : rng_) {
    u.used = u.gen.get_offset() - u.base;
    u.gen.set_offset(u.base);
  }
  if (e != gpuSuccess || graph == nullptr) {
    (void)gpuGetLastError();
    if (graph) (void)gpuGraphDestroy(graph);
    KILN_ERROR("[", op, "] the capture failed: ", gpuGetErrorString(e),
               ". An operation that is not allowed while capturing ran on the stream (a "
               "synchronization, a copy to or from pageable host memory, or work on another "
               "stream that was not joined back)");
  }
  size_t n = 0;
  (void)gpuGraphGetNodes(graph, nullptr, &n);
  num_nodes_ = n;
  gpuGraphExec_t exec = nullptr;
  e = gpuGraphInstantiateWithFlags(&exec, graph, 0);
  (void)gpuGraphDestroy(graph);  // the executable graph keeps what it needs
  KILN_GPU_CHECK(op, e);
  exec_ = reinterpret_cast<uintptr_t>(exec);
}

void Graph::replay() {
  const char* op = "cuda.CUDAGraph.replay";
  KILN_CHECK(exec_ != 0, "[", op, "] called before a successful capture_end");
  DeviceGuard guard(device_);
  StreamHandle s = current_stream(device_);
  for (RngUse& u : rng_) {
    PhiloxSeedOffset so = u.gen.reserve(u.used);
    write_rng_state_kernel<<<1, 1, 0, as_stream(s)>>>(static_cast<int64_t*>(u.state.data_ptr()),
                                                      so.seed, so.offset);
    KILN_GPU_CHECK(op, gpuGetLastError());
  }
  KILN_GPU_CHECK(op, gpuGraphLaunch(reinterpret_cast<gpuGraphExec_t>(exec_), as_stream(s)));
  check_launch(op, s);
}

void Graph::reset() {
  if (capturing_) {
    // Abandon the capture: end it, drop what was captured.
    DeviceGuard guard(device_);
    gpuGraph_t graph = nullptr;
    (void)gpuStreamEndCapture(as_stream(stream_), &graph);
    (void)gpuGetLastError();
    if (graph) (void)gpuGraphDestroy(graph);
    capturing_ = false;
    set_active(this, device_, 0, false);
    device_allocator(device_).end_allocate_to_pool(pool_);
    for (RngUse& u : rng_) u.gen.set_offset(u.base);  // an abandoned capture draws nothing
  }
  if (exec_ != 0) {
    DeviceGuard guard(device_);
    (void)gpuGraphExecDestroy(reinterpret_cast<gpuGraphExec_t>(exec_));
    exec_ = 0;
    num_nodes_ = 0;
  }
  rng_.clear();  // frees the state tensors into the pool before it is released
  if (holds_pool_) {
    holds_pool_ = false;
    device_allocator(device_).release_pool(pool_);
  }
}

}  // namespace kiln::gpu
