// Tensor methods of the index family: x.f(...) forwards to kiln::f(x, ...); x.f_(...) writes x.
#include "kiln/ops/indexing.h"
#include "ops/index_util.h"

namespace kiln {

using namespace detail;  // NOLINT: the *_impl helpers

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return kiln::index_select(*this, dim, index);
}
Tensor Tensor::gather(int64_t dim, const Tensor& index, bool sparse_grad) const {
  return kiln::gather(*this, dim, index, sparse_grad);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return kiln::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src,
                       std::string_view reduce) const {
  return kiln::scatter(*this, dim, index, src, reduce);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value,
                       std::string_view reduce) const {
  return kiln::scatter(*this, dim, index, value, reduce);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_impl(*this, dim, index, &src, nullptr, {}, true);
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) {
  scatter_impl(*this, dim, index, nullptr, &value, {}, true);
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src,
                         std::string_view reduce) {
  KILN_CHECK(!reduce.empty(), "[scatter_] reduce argument must be either add or multiply");
  scatter_impl(*this, dim, index, &src, nullptr, reduce, true);
  return *this;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value,
                         std::string_view reduce) {
  KILN_CHECK(!reduce.empty(), "[scatter_] reduce argument must be either add or multiply");
  scatter_impl(*this, dim, index, nullptr, &value, reduce, true);
  return *this;
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_add_impl(*this, dim, index, src, true);
  return *this;
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self) const {
  return kiln::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                                std::string_view reduce, bool include_self) {
  scatter_reduce_impl(*this, dim, index, src, reduce, include_self, true);
  return *this;
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) const {
  return kiln::index_add(*this, dim, index, source, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha) {
  index_add_impl(*this, dim, index, source, alpha, true);
  return *this;
}
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return kiln::index_copy(*this, dim, index, source);
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) {
  index_copy_impl(*this, dim, index, source, true);
  return *this;
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return kiln::index_fill(*this, dim, index, value);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Tensor& value) const {
  return kiln::index_fill(*this, dim, index, value);
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) {
  index_fill_impl(*this, dim, index, value, true);
  return *this;
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Tensor& value) {
  index_fill_impl(*this, dim, index, value_scalar(value, "index_fill_"), true);
  return *this;
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return kiln::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  masked_fill_impl(*this, mask, value, true);
  return *this;
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& value) {
  masked_fill_impl(*this, mask, value_scalar(value, "masked_fill_"), true);
  return *this;
}
Tensor Tensor::masked_select(const Tensor& mask) const { return kiln::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return kiln::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  masked_scatter_impl(*this, mask, source, true);
  return *this;
}
Tensor Tensor::take(const Tensor& index) const { return kiln::take(*this, index); }
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return kiln::take_along_dim(*this, indices, dim);
}
Tensor Tensor::nonzero() const { return kiln::nonzero(*this); }
Tensor Tensor::argwhere() const { return kiln::argwhere(*this); }
std::vector<Tensor> Tensor::nonzero_numpy() const { return kiln::nonzero_numpy(*this); }
Tensor Tensor::index(const std::vector<std::optional<Tensor>>& indices) const {
  return kiln::index(*this, indices);
}
Tensor Tensor::index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                         bool accumulate) const {
  return kiln::index_put(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                           bool accumulate) {
  index_put_impl(*this, indices, values, accumulate, true);
  return *this;
}

}  // namespace kiln
