// Reductions: sum mean nansum nanmean prod, amax amin max min argmax argmin aminmax, var std
// var_mean std_mean, norm (and linalg::vector_norm), logsumexp, any all count_nonzero.
// Names and semantics follow PyTorch: `dim` empty means all dims, negative dims count from the
// end, repeated dims are an error, 0-dim tensors accept dim 0 and -1. Results do not depend on
// the number of threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "kiln/tensor.h"

namespace kiln {

// ---- sums and means ----
// bool/integer inputs sum to int64; `dtype` casts the input first (as torch.sum). float16 and
// bfloat16 accumulate in float32; float32 sums use pairwise summation (error O(log n)).
Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
// Sum with NaNs counted as zero (real dtypes only).
Tensor nansum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor nansum(const Tensor& x, IntArrayRef dim, bool keepdim = false,
              std::optional<DType> dtype = std::nullopt);
// Mean of floating/complex tensors; integer inputs need dtype= (as PyTorch). Empty -> NaN.
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
// Mean of the non-NaN elements (floating dtypes only).
Tensor nanmean(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false,
               std::optional<DType> dtype = std::nullopt);
// Product; bool/integer inputs give int64. Empty -> 1.
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);

// out= forms. Without dtype the computation uses out's dtype (as PyTorch); an empty `out` is
// resized.
Tensor& sum_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false,
                std::optional<DType> dtype = std::nullopt);
Tensor& nansum_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt);
Tensor& mean_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false,
                 std::optional<DType> dtype = std::nullopt);
Tensor& prod_out(Tensor& out, const Tensor& x, int64_t dim, bool keepdim = false,
                 std::optional<DType> dtype = std::nullopt);

// ---- extremes ----
// NaN propagates (it is both the max and the min). Reducing an empty dim is an error, as in
// PyTorch. Complex inputs are rejected.
Tensor amax(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
Tensor& amax_out(Tensor& out, const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
Tensor& amin_out(Tensor& out, const Tensor& x, IntArrayRef dim = {}, bool keepdim = false);
// max()/min() of all elements (a 0-dim tensor).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// (values, int64 indices) over one dim; ties and NaNs give the first index.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor&, Tensor&> max_out(Tensor& values, Tensor& indices, const Tensor& x, int64_t dim,
                                     bool keepdim = false);
std::tuple<Tensor&, Tensor&> min_out(Tensor& values, Tensor& indices, const Tensor& x, int64_t dim,
                                     bool keepdim = false);
// Index of the first max/min (of the flattened tensor when dim is not given).
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// (amin, amax) over one dim or all elements.
std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt,
                                   bool keepdim = false);

// ---- statistics ----
// Variance with divisor max(N - correction, 0) (correction 1 = unbiased; a bool is accepted as
// `unbiased`, as in PyTorch). Floating and complex inputs; complex gives a real result.
Tensor var(const Tensor& x, IntArrayRef dim = {}, const Scalar& correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, IntArrayRef dim = {}, const Scalar& correction = 1,
           bool keepdim = false);
// var(x, unbiased) / std(x, unbiased) over all elements (only an exact bool selects these).
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor var(const Tensor& x, B unbiased) {
  return var(x, IntArrayRef{}, Scalar(unbiased ? 1 : 0));
}
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor std(const Tensor& x, B unbiased) {
  return std(x, IntArrayRef{}, Scalar(unbiased ? 1 : 0));
}
// (var, mean) and (std, mean) in one pass.
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntArrayRef dim = {},
                                    const Scalar& correction = 1, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntArrayRef dim = {},
                                    const Scalar& correction = 1, bool keepdim = false);
Tensor& var_out(Tensor& out, const Tensor& x, IntArrayRef dim = {}, const Scalar& correction = 1,
                bool keepdim = false);
Tensor& std_out(Tensor& out, const Tensor& x, IntArrayRef dim = {}, const Scalar& correction = 1,
                bool keepdim = false);

// ---- norms ----
// Vector p-norm over dims (all when empty): p = 2, 1, inf, -inf, 0 (count of nonzeros) or any
// other real p. Floating/complex inputs (complex gives real); dtype casts the input first.
// inf, -inf and negative p of an empty reduction are errors (no identity), as in PyTorch.
Tensor norm(const Tensor& x, const Scalar& p = 2, IntArrayRef dim = {}, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
namespace detail {
Tensor norm_str(const Tensor& x, std::string_view p, IntArrayRef dim, bool keepdim);
template <class S>
inline constexpr bool is_norm_str_v =
    std::is_convertible_v<const S&, std::string_view> && !std::is_arithmetic_v<S>;
}  // namespace detail
// p = "fro": the 2-norm over dims. "nuc" is not implemented (it needs an SVD). (A template, so
// that norm(x, 0) stays the 0-norm instead of converting 0 to a null string.)
template <class S, std::enable_if_t<detail::is_norm_str_v<S>, int> = 0>
Tensor norm(const Tensor& x, const S& p, IntArrayRef dim = {}, bool keepdim = false) {
  return detail::norm_str(x, std::string_view(p), dim, keepdim);
}
Tensor& norm_out(Tensor& out, const Tensor& x, const Scalar& p, IntArrayRef dim = {},
                 bool keepdim = false);
namespace linalg {
// torch.linalg.vector_norm.
Tensor vector_norm(const Tensor& x, const Scalar& ord = 2, IntArrayRef dim = {},
                   bool keepdim = false, std::optional<DType> dtype = std::nullopt);
}  // namespace linalg

// ---- logsumexp ----
// log(sum(exp(x))) computed stably (max-shifted); integer inputs give the default float dtype.
// An empty reduction gives -inf.
Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim = false);
Tensor& logsumexp_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false);

// ---- logical ----
// Whether any / all elements are nonzero. The result is bool (uint8 for uint8 inputs).
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, IntArrayRef dim, bool keepdim = false);
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, IntArrayRef dim, bool keepdim = false);
Tensor& any_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false);
Tensor& all_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim = false);
// Number of nonzero elements (int64) over dims (all when empty).
Tensor count_nonzero(const Tensor& x, IntArrayRef dim = {});

}  // namespace kiln
