// Scans, sorting and searching: cumsum, cumprod, cummax, sort, topk, median, quantile, unique,
// searchsorted, histc, bincount, ... Names and semantics follow PyTorch (NaN sorts as the largest
// value); results do not depend on the number of threads.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {

// ---- scans ----
// Cumulative sum / product along dim; bool and integer inputs give int64 unless dtype= is given.
// Floating inputs accumulate in double (as PyTorch's CPU kernels).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// (running max/min, int64 index of it). Ties take the latest index; a NaN, once seen, stays.
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
// log(cumsum(exp(x))) computed stably (floating and complex).
Tensor logcumsumexp(const Tensor& x, int64_t dim);
// n-th forward difference along dim, with optional prepend/append (bool: x[i+1] != x[i]).
Tensor diff(const Tensor& x, int64_t n = 1, int64_t dim = -1, const Tensor& prepend = Tensor(),
            const Tensor& append = Tensor());

// ---- sorting ----
// (values, int64 indices) sorted along dim. NaN is the largest value. The sort is always stable
// (ties keep their order, also when descending), which is one valid result for stable=false.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> sort(const Tensor& x, std::optional<bool> stable, int64_t dim = -1,
                                bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor msort(const Tensor& x);  // sort along dim 0, values only
// k largest (or smallest) along dim, sorted when `sorted`; ties take the lower index first.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                bool sorted = true);
// k-th smallest (1-based) along dim with its index.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                    bool keepdim = false);
// Lower median (element (n-1)/2 of the sorted values); NaN if any NaN. No-dim forms give a 0-dim
// tensor of all elements.
Tensor median(const Tensor& x);
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
// As median, ignoring NaNs (NaN when all are NaN).
Tensor nanmedian(const Tensor& x);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);
// Most frequent value (the smallest among equally frequent ones) and an index of it.
std::tuple<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);
// q-th quantiles (q in [0, 1]; a 1-D q adds a leading dim) over dim or all elements.
// interpolation: "linear", "lower", "higher", "midpoint", "nearest" (ties to even, as PyTorch).
// quantile gives NaN for rows with a NaN; nanquantile ignores NaNs. Float32/float64 only.
Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim = std::nullopt,
                bool keepdim = false, std::string_view interpolation = "linear");
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = std::nullopt,
                bool keepdim = false, std::string_view interpolation = "linear");
Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim = std::nullopt,
                   bool keepdim = false, std::string_view interpolation = "linear");
Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = std::nullopt,
                   bool keepdim = false, std::string_view interpolation = "linear");

// ---- unique ----
// (values, inverse, counts): the unique elements (slices along dim) in ascending order (also for
// sorted=false, a valid order), the index of each input element in values (input's shape, or
// x.size(dim) with dim), and the count of each value. inverse/counts are empty int64 tensors
// when not requested, as ATen's _unique2. NaNs are all distinct.
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool sorted = true,
                                          bool return_inverse = false, bool return_counts = false,
                                          std::optional<int64_t> dim = std::nullopt);
// As unique, but only merges runs of equal neighbours (no sorting).
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);

// ---- searching and counting ----
// Index where each value would be inserted in the sorted last dim of sorted_sequence (1-D, or
// same leading dims as values). right / side == "right" takes the upper bound. `sorter` gives
// the sorting order of an unsorted sequence. int64 output, int32 when out_int32.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false,
                    bool right = false, std::optional<std::string_view> side = std::nullopt,
                    const Tensor& sorter = Tensor());
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false,
                    bool right = false, std::optional<std::string_view> side = std::nullopt,
                    const Tensor& sorter = Tensor());
// Bucket index of each element for 1-D sorted boundaries (searchsorted with the roles swapped).
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);
Tensor bucketize(const Scalar& x, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);
// Histogram with `bins` equal bins over [min, max] (the data's range when min == max); values
// outside are ignored; the last bin includes max. Floating inputs.
Tensor histc(const Tensor& x, int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0);
// Counts of each value of a non-negative 1-D integer tensor (weighted sums with weights), of
// length max(x.max() + 1, minlength). int64 counts; with weights, float32 for float32 weights and
// float64 otherwise (as PyTorch).
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);

}  // namespace kiln
