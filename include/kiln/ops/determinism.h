// Deterministic algorithms, as torch.use_deterministic_algorithms: with the mode on, ops whose
// GPU kernels would be nondeterministic (atomics in scatter_add, index_add, index_put with
// accumulate, ...) take a deterministic path, or raise kiln::Error naming the op.
#pragma once

namespace kiln {

// warn_only: ops without a deterministic path print a warning once instead of raising.
void use_deterministic_algorithms(bool mode, bool warn_only = false);
bool are_deterministic_algorithms_enabled();
bool is_deterministic_algorithms_warn_only_enabled();

namespace detail {
// For kernels: throws (or warns once, in warn-only mode) "[op] does not have a deterministic
// implementation ..." when the mode is on. Call it only where no deterministic path exists.
void alert_not_deterministic(const char* op);
}  // namespace detail

}  // namespace kiln
