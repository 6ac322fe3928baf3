// detail::flat_cat: the elements of several tensors as one contiguous 1-D tensor (used by
// parameters_to_vector, LBFGS and the data loader's collation without depending on kiln::cat).
#pragma once

#include <vector>

#include "kiln/ops/factories.h"

namespace kiln::detail {

// Concatenates the flattened tensors (all of one dtype and device; undefined entries give
// `zeros_for` of the same index, when given, else are an error).
inline Tensor flat_cat(const std::vector<Tensor>& ts,
                       const std::vector<Tensor>* zeros_for = nullptr) {
  KILN_CHECK(!ts.empty(), "[flat_cat] no tensors");
  int64_t total = 0;
  const Tensor* first = nullptr;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i].defined() ? ts[i] : (zeros_for ? (*zeros_for)[i] : ts[i]);
    KILN_CHECK(t.defined(), "[flat_cat] undefined tensor at index ", i);
    if (!first && ts[i].defined()) first = &ts[i];
    total += t.numel();
  }
  const Tensor& ref = first ? *first : (*zeros_for)[0];
  Tensor out = kiln::empty({total}, ref.options());
  int64_t off = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    int64_t n = ts[i].defined() ? ts[i].numel() : (*zeros_for)[i].numel();
    if (n == 0) continue;
    Tensor dst = out.narrow(0, off, n);
    if (ts[i].defined())
      dst.copy_(ts[i].reshape({-1}));
    else
      dst.zero_();
    off += n;
  }
  return out;
}

}  // namespace kiln::detail
