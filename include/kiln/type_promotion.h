// result_type / can_cast: PyTorch's type promotion for tensors and scalars.
#pragma once

#include "kiln/tensor.h"

namespace kiln {

// The dtype an elementwise op on these operands computes in (torch.result_type): tensors with
// dims decide first, then 0-dim tensors, then scalars, and the lower groups may only raise the
// category (bool < integer < floating < complex), never the width within it.
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(const Scalar& a, const Tensor& b);
DType result_type(const Scalar& a, const Scalar& b);

// Whether an op computing in `from` may write its result into a tensor of dtype `to`
// (torch.can_cast): no complex -> real, floating -> integral, or non-bool -> bool.
bool can_cast(DType from, DType to);

namespace detail {
// Incremental form used by infer(): add operands one by one, then read the result.
struct ResultTypeState {
  std::optional<DType> dim_result, zero_result, wrapped_result;
  void add(const Tensor& t);
  void add(const Scalar& s);
  DType result() const;
};
}  // namespace detail

}  // namespace kiln
