// Internal autocast interface: the per-thread "any scope active" flag, the casting helper for
// front ends and modules whose dtype checks run before the op layer, and the guard the autograd
// engine uses to keep the backward pass out of autocast.
#pragma once

#include <initializer_list>

#include "kiln/tensor.h"

namespace kiln::detail {

// What an op does under autocast (Note [autocast lists] in src/amp/autocast.cpp).
enum class AutocastPolicy : uint8_t {
  None,     // runs in its input dtypes
  Lower,    // float32 inputs are cast to the scope's lower-precision dtype
  Float32,  // float16/bfloat16 inputs are cast to float32
  Promote,  // floating inputs are cast to the widest floating input dtype
};

// True while an enabled autocast scope (any device) is open on this thread and no
// AutocastSuspend is active: one thread-local load.
extern constinit thread_local bool t_autocast_on;
inline bool autocast_active() { return t_autocast_on; }

// Casts the defined tensors pointed to (in place of the local handles) by `policy` for the
// device of the first defined one, when autocast is active there. Cast weights (leaves that
// require grad) come from the scope's cache. No-op when autocast is off.
void autocast_args(AutocastPolicy policy, std::initializer_list<Tensor*> tensors);

// Turns autocast off on this thread while alive (the backward pass runs in the forward's dtypes).
class AutocastSuspend {
 public:
  AutocastSuspend();
  ~AutocastSuspend();
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  bool prev_;
};

// The autocast state of this thread (checkpoint records it with the forward) and a guard that
// reinstates one, lifting any AutocastSuspend, for its lifetime (checkpoint's recomputation
// inside the backward pass runs under the forward's autocast state, as PyTorch's does).
struct AutocastSnapshot {
  bool enabled[2] = {false, false};
  DType dtype[2] = {DType::BFloat16, DType::Float16};
};
AutocastSnapshot autocast_snapshot();
class AutocastRestore {
 public:
  explicit AutocastRestore(const AutocastSnapshot& s);
  ~AutocastRestore();
  AutocastRestore(const AutocastRestore&) = delete;
  AutocastRestore& operator=(const AutocastRestore&) = delete;

 private:
  AutocastSnapshot prev_;
  int prev_suspended_;
};

}  // namespace kiln::detail
