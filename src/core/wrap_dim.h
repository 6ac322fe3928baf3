// Dim wrapping with PyTorch's errors: -1 is the last dim; 0-dim tensors accept dims -1 and 0.
#pragma once

#include <cstdint>

#include "kiln/array_ref.h"
#include "kiln/error.h"
#include "kiln/small_vector.h"

namespace kiln::detail {

inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim > 0 ? ndim : 1;
  KILN_CHECK(dim >= -n && dim < n, "[", op,
             "] dimension out of range (expected to be in range of [", -n, ", ", n - 1,
             "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// Wraps every dim and rejects repeats; returns a bitmask-free sorted-as-given list.
inline DimVector wrap_dims(IntArrayRef dims, int64_t ndim, const char* op) {
  DimVector out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    for (int64_t o : out)
      KILN_CHECK(o != w, "[", op, "] dim ", w, " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

}  // namespace kiln::detail
