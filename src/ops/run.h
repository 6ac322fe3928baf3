// run(): the path every primitive call takes (DESIGN.md §3):
// autocast -> infer -> trace hook -> kernel for the device -> autograd record.
#pragma once

#include "ops/op.h"

namespace kiln::detail {

// Hooks installed by graph capture, autocast, autograd and the profiler. Null means off; the
// fast path tests them with one load each.
struct OpHooks {
  // Graph capture: records the call (outputs already inferred) and returns true to skip the kernel.
  bool (*trace)(OpCall& c) = nullptr;
  // Autocast: may cast c.in before infer.
  void (*autocast)(OpCall& c) = nullptr;
  // Autograd (src/autograd/record.cpp): autograd_pre runs after infer and returns a pending
  // record (null: nothing to record); the kernel then runs with grad mode off, and
  // autograd_post attaches the outputs (autograd_abort drops the record on an exception).
  void* (*autograd_pre)(OpCall& c) = nullptr;
  void (*autograd_post)(OpCall& c, void* pending) = nullptr;
  void (*autograd_abort)(void* pending) = nullptr;
  // Profiler: brackets the kernel.
  void (*profile_begin)(const OpCall& c) = nullptr;
  void (*profile_end)(const OpCall& c) = nullptr;
};
OpHooks& op_hooks();  // process-wide
// Thread-local switch for graph capture (the trace hook only runs on the tracing thread).
bool& tracing_active();

// Runs c and returns c.out[0]. In-place and out= calls set c.out and c.provided_out first.
void run(OpCall& c);
inline Tensor run1(OpCall& c) {
  run(c);
  return c.out[0];
}

// Wraps a C++ number as a 0-dim "wrapped number" tensor on the CPU (it promotes like a scalar).
Tensor wrap_scalar(const Scalar& s);

}  // namespace kiln::detail
