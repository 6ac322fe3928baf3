// Tensor factories: empty, zeros, ones, full, arange, linspace, logspace, eye, *_like, tensor().
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// Uninitialized contiguous tensor (dtype defaults to the default float dtype).
Tensor empty(IntArrayRef size, const TensorOptions& options = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options = {});
Tensor zeros(IntArrayRef size, const TensorOptions& options = {});
Tensor ones(IntArrayRef size, const TensorOptions& options = {});
// The dtype, when not given, follows the value: bool, int64, the default float, or complex.
Tensor full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options = {});
// Values start, start+step, ... < end. The dtype, when not given, is int64 if all arguments
// are integers, else the default float dtype.
Tensor arange(const Scalar& end, const TensorOptions& options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              const TensorOptions& options = {});
// `steps` values evenly spaced from start to end inclusive.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps,
                const TensorOptions& options = {});
// base ** linspace(start, end, steps).
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                const TensorOptions& options = {});
// n x m identity (m defaults to n).
Tensor eye(int64_t n, const TensorOptions& options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});

// *_like: same shape; dtype and device of `t` unless options say otherwise.
Tensor empty_like(const Tensor& t, const TensorOptions& options = {});
Tensor zeros_like(const Tensor& t, const TensorOptions& options = {});
Tensor ones_like(const Tensor& t, const TensorOptions& options = {});
Tensor full_like(const Tensor& t, const Scalar& fill_value, const TensorOptions& options = {});

// A nested list of numbers for kiln::tensor({{1, 2}, {3, 4}}).
class TensorData {
 public:
  TensorData(bool v) : scalar_(v), is_scalar_(true) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorData(T v) : scalar_(v), is_scalar_(true), is_f32_(std::is_same_v<T, float>) {}  // NOLINT
  TensorData(complex<float> v) : scalar_(v), is_scalar_(true) {}                        // NOLINT
  TensorData(complex<double> v) : scalar_(v), is_scalar_(true) {}                       // NOLINT
  TensorData(std::initializer_list<TensorData> list) : list_(list) {}                   // NOLINT

  bool is_scalar() const { return is_scalar_; }
  const Scalar& scalar() const { return scalar_; }
  const std::vector<TensorData>& list() const { return list_; }

 private:
  Scalar scalar_;
  bool is_scalar_ = false;
  bool is_f32_ = false;
  std::vector<TensorData> list_;
};

// A tensor holding a copy of the data. Integers give int64, floating values the default float
// dtype, bools bool, complex values complex64 (as torch.tensor); options may set the dtype.
Tensor tensor(const TensorData& data, const TensorOptions& options = {});

// A 1-D (or `shape`-d) tensor holding a copy of v.
template <class T>
Tensor from_vector(const std::vector<T>& v, IntArrayRef shape, const TensorOptions& options = {});
template <class T>
Tensor from_vector(const std::vector<T>& v, const TensorOptions& options = {}) {
  return from_vector(v, {static_cast<int64_t>(v.size())}, options);
}

// Wraps external memory without copying. The deleter (may be empty) runs when the last tensor
// sharing it dies. Strides default to contiguous. options.dtype is the element type (default
// float32), options.device where the memory is.
Tensor from_blob(void* data, IntArrayRef size, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef size, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef size, IntArrayRef strides,
                 std::function<void(void*)> deleter, const TensorOptions& options = {});

namespace detail {
Tensor from_raw_copy(const void* data, int64_t count, DType dtype, IntArrayRef shape,
                     const TensorOptions& o);
}
template <class T>
Tensor from_vector(const std::vector<T>& v, IntArrayRef shape, const TensorOptions& options) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> b(v.begin(), v.end());
    return detail::from_raw_copy(b.data(), static_cast<int64_t>(b.size()), DType::Bool, shape,
                                 options);
  } else {
    return detail::from_raw_copy(v.data(), static_cast<int64_t>(v.size()), dtype_of<T>(), shape,
                                 options);
  }
}

}  // namespace kiln
