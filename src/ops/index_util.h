// Shared pieces of the index front ends: argument checks with PyTorch's errors and the builders
// of scatter-like calls (out-of-place: a fresh output; in-place: self is the output).
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "ops/op.h"

namespace kiln::detail {

void check_index_defined(const Tensor& t, const char* op, const char* what);
// index dtype: int64, or int32 too when allow_int32.
void check_index_dtype(const Tensor& index, const char* op, bool allow_int32);
// All tensors on x's device.
void check_same_device(const char* op, const Tensor& x,
                       std::initializer_list<const Tensor*> others);
// Sizes of a tensor treating 0-dim as 1-D of size 1 (PyTorch's ensure_nonempty_size).
int64_t size_or_1(const Tensor& t, int64_t d);

// Fills c.out: `self` for in-place (sets inplace/provided_out), else a fresh tensor like x.
void set_scatter_output(OpCall& c, const Tensor& x, bool inplace);

// The ops with an in-place form; inplace writes into x and returns it.
Tensor scatter_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src,
                    const Scalar* value, std::string_view reduce, bool inplace);
Tensor scatter_add_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        bool inplace);
Tensor scatter_reduce_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce, bool include_self, bool inplace);
Tensor index_add_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha, bool inplace);
Tensor index_copy_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                       bool inplace);
Tensor index_fill_impl(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value,
                       bool inplace);
Tensor masked_fill_impl(const Tensor& x, const Tensor& mask, const Scalar& value, bool inplace);
Tensor masked_scatter_impl(const Tensor& x, const Tensor& mask, const Tensor& source, bool inplace);
Tensor index_put_impl(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                      const Tensor& values, bool accumulate, bool inplace);
// A 0-dim tensor value's Scalar (PyTorch accepts only 0-dim value tensors).
Scalar value_scalar(const Tensor& value, const char* op);

}  // namespace kiln::detail
