// Tensor reduction methods: thin forwards to the free functions of kiln/ops/reduce.h.
#include "kiln/ops/reduce.h"

namespace kiln {

Tensor Tensor::sum(std::optional<DType> dtype) const { return kiln::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::nansum(std::optional<DType> dtype) const { return kiln::nansum(*this, dtype); }
Tensor Tensor::nansum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::nansum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return kiln::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::nanmean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::nanmean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<DType> dtype) const { return kiln::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return kiln::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return kiln::amin(*this, dim, keepdim); }
Tensor Tensor::max() const { return kiln::max(*this); }
Tensor Tensor::min() const { return kiln::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return kiln::max(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return kiln::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmin(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::aminmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::aminmax(*this, dim, keepdim);
}
Tensor Tensor::var(IntArrayRef dim, const Scalar& correction, bool keepdim) const {
  return kiln::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std(IntArrayRef dim, const Scalar& correction, bool keepdim) const {
  return kiln::std(*this, dim, correction, keepdim);
}
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim,
                    std::optional<DType> dtype) const {
  return kiln::norm(*this, p, dim, keepdim, dtype);
}
Tensor Tensor::norm_named(std::string_view p, IntArrayRef dim, bool keepdim) const {
  return detail::norm_str(*this, p, dim, keepdim);
}
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return kiln::logsumexp(*this, dim, keepdim);
}
Tensor Tensor::any() const { return kiln::any(*this); }
Tensor Tensor::any(IntArrayRef dim, bool keepdim) const { return kiln::any(*this, dim, keepdim); }
Tensor Tensor::all() const { return kiln::all(*this); }
Tensor Tensor::all(IntArrayRef dim, bool keepdim) const { return kiln::all(*this, dim, keepdim); }
Tensor Tensor::count_nonzero(IntArrayRef dim) const { return kiln::count_nonzero(*this, dim); }

}  // namespace kiln
