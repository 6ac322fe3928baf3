// gpu::Graph: stream capture into a CUDA/HIP graph with a private pool of the caching allocator,
// the random-number state of its random ops, instantiation and replay. kiln::cuda::CUDAGraph is
// a thin handle over it.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/gpu/alloc_snapshot.h"
#include "backend/gpu/device_api.h"
#include "backend/gpu/graph_rng.h"

namespace kiln::gpu {

class Graph {
 public:
  Graph() = default;
  ~Graph();  // reset(), errors reported to stderr
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Captures the current stream of the current device. mode: 0 global, 1 thread-local,
  // 2 relaxed (cudaStreamCaptureMode). pool {0, 0}: a new private pool.
  void capture_begin(PoolId pool, int mode);
  void capture_end();
  void replay();
  void reset();
  PoolId pool() const { return pool_; }
  size_t num_nodes() const { return num_nodes_; }
  // capture_rng's work for this graph (called while this graph is capturing).
  CapturedRng use_rng(const Generator& gen, PhiloxSeedOffset so);

 private:
  // A generator that random ops of the capture used (Note [Graph-safe random numbers]).
  struct RngUse {
    Generator gen;
    uint64_t base = 0;  // the generator's offset at its first use in the capture
    uint64_t used = 0;  // counters the captured ops consume per replay
    Tensor state;       // {seed, base} on the device, rewritten before each replay
  };
  std::vector<RngUse> rng_;

  int device_ = -1;
  StreamHandle stream_ = 0;
  unsigned long long capture_id_ = 0;
  PoolId pool_{0, 0};
  bool capturing_ = false;
  bool holds_pool_ = false;
  uintptr_t exec_ = 0;  // gpuGraphExec_t
  size_t num_nodes_ = 0;
};

}  // namespace kiln::gpu
