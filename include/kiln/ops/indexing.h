// Indexing: index_select gather scatter scatter_add scatter_reduce index_add index_copy index_fill
// index / index_put, masked_fill masked_select masked_scatter, take take_along_dim, nonzero
// argwhere. Names and semantics follow PyTorch. Index tensors are int64 (int32 is also accepted
// where PyTorch accepts it: index_select, index_add, index/index_put); negative indices
// count from the end; an out-of-range index raises kiln::Error naming the op, the index and the
// size, before any element is written. Scatters with repeated indices are deterministic: updates to
// one element apply in the order of their positions in `index` (so for scatter/index_copy/index_put
// without accumulate, the last one wins), whatever the number of threads.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/tensor_index.h"

namespace kiln {

// ---- along one dim ----
// out[..., k, ...] = x[..., index[k], ...]; index is 1-D (or 0-dim) int64/int32.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor& index_select_out(Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
// out[i][j][k] = x[index[i][j][k]][j][k] (dim 0); index (int64) has x's number of dims and
// index.size(d) <= x.size(d) for d != dim. out has index's shape. sparse_grad is ignored.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, bool sparse_grad = false);
// out = x with out[index[i][j]][j] = src[i][j] (dim 0). index.size(d) <= src.size(d) for all d
// and <= x.size(d) for d != dim. reduce: "add" or "multiply" (combine instead of assigning).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
               std::string_view reduce);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value,
               std::string_view reduce);
// scatter with += (src must have x's dtype).
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// reduce: "sum" "prod" "mean" "amax" "amin". include_self=false leaves x's values out of the
// reduction for the elements that receive at least one src value. Integer "mean" rounds down.
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self = true);
// out = x with out[..., index[k], ...] += alpha * source[..., k, ...].
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
// out = x with out[..., index[k], ...] = source[..., k, ...].
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
// out = x with out[..., index[k], ...] = value (a Scalar or a 0-dim tensor).
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value);

// ---- advanced indexing ----
// aten::index: indices[d] indexes dim d (undefined/nullopt = all of it); int64/int32/bool/uint8
// tensors; index tensors broadcast together. Result shape follows NumPy/PyTorch: the broadcast
// index shape replaces the indexed dims when they are adjacent, else it goes first.
Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices);
// out = x with out[indices] = values (values broadcast to x[indices]'s shape; same dtype as x);
// accumulate adds instead (repeated indices then all count).
Tensor index_put(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate = false);
// PyTorch's C++ tensor indexing (TensorIndex lists) is the method form only, as in PyTorch:
// x.index({Slice(1, None, 2), idx, None, Ellipsis, mask}) and x.index_put_({...}, value).
// Basic indices (ints, slices, None, Ellipsis) give views; x.index_put_ converts the value to
// x's dtype (as Python's x[...] = v), while index_put needs values of x's dtype.

// ---- masks ----
// out = x where mask is false, value where true; mask (bool) broadcasts with x. A tensor value
// must be 0-dim.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
// The elements of x where mask (bool, broadcast with x) is true, as a 1-D tensor (row-major order).
Tensor masked_select(const Tensor& x, const Tensor& mask);
// out = x with the elements where mask is true replaced, in row-major order, by source's first
// elements (source needs at least as many elements as mask has true values).
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);

// ---- flat and along-dim lookups ----
// x.flatten()[index], shaped like index (int64).
Tensor take(const Tensor& x, const Tensor& index);
// gather with indices broadcast against x over the other dims; without dim, x is flattened.
Tensor take_along_dim(const Tensor& x, const Tensor& indices,
                      std::optional<int64_t> dim = std::nullopt);
// Indices of nonzero elements: int64 [n, x.dim()] in row-major order.
Tensor nonzero(const Tensor& x);
Tensor argwhere(const Tensor& x);
// nonzero(as_tuple=True): x.dim() int64 tensors of shape [n] (one for a 0-dim x).
std::vector<Tensor> nonzero_numpy(const Tensor& x);

}  // namespace kiln
