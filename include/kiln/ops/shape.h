// Shape ops that move data or re-arrange views: cat, stack, split, flip, roll, repeat, tril/triu,
// pad, broadcast, meshgrid, diag, ... Names and semantics follow PyTorch; every misuse raises
// kiln::Error naming the op and the offending values.
#pragma once

#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// ---- joining ----
// Concatenates along dim. Inputs promote to their common dtype (result_type); 1-D empty tensors
// (shape [0]) are skipped, as PyTorch's legacy rule; all others must match except in dim.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim = 0);
inline Tensor concat(const std::vector<Tensor>& t, int64_t dim = 0) { return cat(t, dim); }
inline Tensor concatenate(const std::vector<Tensor>& t, int64_t dim = 0) { return cat(t, dim); }
// Joins along a new dim; all shapes must be equal.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor hstack(const std::vector<Tensor>& tensors);  // cat on dim 1 (dim 0 for 1-D inputs)
Tensor vstack(const std::vector<Tensor>& tensors);  // cat of atleast_2d on dim 0
inline Tensor row_stack(const std::vector<Tensor>& t) { return vstack(t); }
Tensor dstack(const std::vector<Tensor>& tensors);  // cat of atleast_3d on dim 2
Tensor column_stack(const std::vector<Tensor>& tensors);

// ---- splitting (all results are views of x) ----
// Pieces of split_size along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
// Pieces with the given sizes, which must sum to x.size(dim).
std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
// `sections` nearly equal pieces (the first size % sections ones get one more element).
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim = 0);
// Pieces cut before each index (indices are clamped like Python slices).
std::vector<Tensor> tensor_split(const Tensor& x, IntArrayRef indices, int64_t dim = 0);
// Integer tensor: a 0-dim tensor gives sections, a 1-D one gives indices (as PyTorch).
std::vector<Tensor> tensor_split(const Tensor& x, const Tensor& indices_or_sections,
                                 int64_t dim = 0);
// At most `chunks` pieces of ceil(size / chunks) elements (fewer when the division is uneven).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);

// ---- reordering ----
Tensor flip(const Tensor& x, IntArrayRef dims);
Tensor fliplr(const Tensor& x);  // flip dim 1 (needs >= 2 dims)
Tensor flipud(const Tensor& x);  // flip dim 0 (needs >= 1 dim)
// Shifts elements along dims (circularly); with no dims the flattened tensor is rolled and the
// shape restored.
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
// Rotates by 90 degrees k times in the plane of dims (from dims[0] towards dims[1]).
Tensor rot90(const Tensor& x, int64_t k = 1, IntArrayRef dims = {0, 1});

// ---- repetition ----
// Tensor.repeat: tiles x; repeats.size() >= x.dim() (leading new dims are added).
Tensor repeat(const Tensor& x, IntArrayRef repeats);
// Repeats each element (or slice along dim; the flattened tensor when dim is absent).
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
// repeat_interleave(repeats): index i repeated repeats[i] times (int64 1-D repeats).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);
// numpy.tile: dims shorter than x.dim() are padded with leading ones.
Tensor tile(const Tensor& x, IntArrayRef dims);

// ---- triangles and diagonals ----
// Lower / upper triangle of the last two dims; elements above (below) diagonal are zero.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// 2 x N int64 (or `options` dtype) coordinates of the lower / upper triangle of a row x col
// matrix, row-major.
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0,
                    const TensorOptions& options = TensorOptions(DType::Int64));
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0,
                    const TensorOptions& options = TensorOptions(DType::Int64));
// 1-D x: square matrix with x on the `diagonal`-th diagonal. 2-D x: that diagonal as a copy.
Tensor diag(const Tensor& x, int64_t diagonal = 0);
// Last dim of x placed on the `offset` diagonal of the (dim1, dim2) planes of a new tensor.
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
// Block diagonal matrix of 0-, 1- (one row) or 2-D tensors; dtypes promote.
Tensor block_diag(const std::vector<Tensor>& tensors);
// Cartesian product of 1-D tensors: N x k (1-D when k == 1).
Tensor cartesian_prod(const std::vector<Tensor>& tensors);

// ---- padding ----
// torch.nn.functional.pad: `pad` holds (left, right) pairs from the last dim backwards. Modes:
// "constant" (value; negative pads crop), "reflect", "replicate", "circular". Non-constant modes
// pad up to the last 3 dims of a (batch, channel, ...) input, as PyTorch.
Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode = "constant",
           const Scalar& value = 0);

// ---- broadcasting ----
Tensor broadcast_to(const Tensor& x, IntArrayRef size);
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
// Grids of 1-D (or 0-dim) tensors; indexing "ij" (matrix) or "xy" (Cartesian: first two swapped).
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");
Tensor atleast_1d(const Tensor& x);
Tensor atleast_2d(const Tensor& x);
Tensor atleast_3d(const Tensor& x);
std::vector<Tensor> atleast_1d(const std::vector<Tensor>& xs);
std::vector<Tensor> atleast_2d(const std::vector<Tensor>& xs);
std::vector<Tensor> atleast_3d(const std::vector<Tensor>& xs);

}  // namespace kiln
