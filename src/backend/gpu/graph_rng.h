// Random numbers inside captured GPU graphs: the front ends of the random ops ask capture_rng
// whether their call is being captured, and if so read their Philox state from the device at
// replay time (Note [Graph-safe random numbers], graph.cu). Plain C++: the no-GPU build stubs it.
#pragma once

#include <cstdint>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln::gpu {

struct CapturedRng {
  // Undefined when the call is not captured. Otherwise an int64 [2] tensor on the device that
  // holds {seed, base offset}; the graph writes it before every replay.
  Tensor state;
  // The call's offset relative to the base offset (its counters are base + offset + j).
  uint64_t offset = 0;
};

// Called by a random op on cuda:`device` after it reserved `so` from `gen`. If the device's
// current stream is being captured by a kiln::cuda::CUDAGraph, registers `gen` with that graph
// and returns the state tensor the kernel must read; throws if a graph that kiln did not begin is
// capturing (its replays would repeat the same numbers).
CapturedRng capture_rng(const Generator& gen, PhiloxSeedOffset so, int device);

}  // namespace kiln::gpu
