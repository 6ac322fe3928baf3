// Tensor: a cheap handle to a TensorImpl. Copies share data, as in PyTorch.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/array_ref.h"
#include "kiln/detail/tensor_impl.h"
#include "kiln/error.h"
#include "kiln/random.h"
#include "kiln/scalar.h"
#include "kiln/tensor_options.h"

namespace kiln {

class Tensor;
template <class T, size_t N>
class TensorAccessor;

// A slice index for Tensor::slice-style indexing; None means "to the end".
inline constexpr std::nullopt_t None = std::nullopt;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(detail::Ref<detail::TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  detail::TensorImpl* impl() const { return impl_.get(); }
  const detail::Ref<detail::TensorImpl>& impl_ref() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  int32_t use_count() const { return impl_.use_count(); }

  // ---- metadata ----
  int64_t dim() const { return impl_->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return impl_->numel(); }
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef shape() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;  // negative d counts from the end
  DType dtype() const { return impl_->dtype(); }
  DType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_floating_point() const { return kiln::is_floating_point(dtype()); }
  bool is_complex() const { return kiln::is_complex(dtype()); }
  int64_t storage_offset() const { return impl_->offset(); }
  int64_t element_size() const { return kiln::element_size(dtype()); }
  int64_t nbytes() const { return numel() * element_size(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  uint32_t _version() const { return impl_->version(); }
  std::string str() const;  // what operator<< prints

  // ---- raw data ----
  void* data_ptr() const { return impl_->data(); }
  template <class T>
  T* data_ptr() const {
    check_dtype_for_access(dtype_of<T>(), "data_ptr");
    return static_cast<T*>(impl_->data());
  }
  template <class T>
  const T* const_data_ptr() const {
    return data_ptr<T>();
  }
  // The single element of a 1-element tensor, converted to T (copies from the GPU if needed).
  Scalar item() const;
  template <class T>
  T item() const {
    return item().to<T>();
  }
  // Typed element access: x.accessor<float, 2>()[i][j]. CPU only; dtype must match exactly.
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const;

  // ---- views (share storage) ----
#include "kiln/detail/tensor_view_methods.inc"
  // ---- elementwise math ----
#include "kiln/detail/tensor_elementwise_methods.inc"
  // ---- reductions ----
#include "kiln/detail/tensor_reduce_methods.inc"
  // ---- matmul family ----
#include "kiln/detail/tensor_linalg_methods.inc"
#include "kiln/detail/tensor_random_methods.inc"
  // ---- indexing, shape, scans/sorting ----
#include "kiln/detail/tensor_index_methods.inc"
#include "kiln/detail/tensor_scan_methods.inc"
#include "kiln/detail/tensor_shape_methods.inc"
  // ---- autograd ----
#include "kiln/detail/tensor_autograd_methods.inc"

  // ---- copies and conversions ----
  Tensor contiguous() const;
  Tensor clone() const;
  // A copy of this CPU tensor in page-locked host memory (itself when already pinned): the source
  // of non_blocking host-to-GPU copies. Needs a GPU build.
  Tensor pin_memory() const;
  bool is_pinned() const;
  // Copies src into this tensor (broadcasting src, converting dtype and device).
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor to(DType dtype, bool copy = false) const;
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, DType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();
  std::vector<Scalar> tolist_flat() const;  // all elements, row-major, as Scalars

  // ---- C++ operators (assignment forms) ----
  Tensor& operator+=(const Tensor& o);
  Tensor& operator+=(const Scalar& o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator-=(const Scalar& o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator*=(const Scalar& o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator/=(const Scalar& o);
  Tensor operator[](int64_t i) const { return select(0, i); }

  // Throws unless the tensor is defined and of dtype `want` (typed data access).
  void check_dtype_for_access(DType want, const char* what) const;

 private:
  detail::Ref<detail::TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- typed element access ----
template <class T, size_t N>
class TensorAccessor {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  TensorAccessor<T, N - 1> operator[](int64_t i) const {
    return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <class T>
class TensorAccessor<T, 1> {
 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  T& operator[](int64_t i) const { return data_[i * strides_[0]]; }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t stride(int64_t d) const { return strides_[d]; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

namespace detail {
void check_accessor(const Tensor& t, DType want, size_t n);
}

template <class T, size_t N>
TensorAccessor<T, N> Tensor::accessor() const {
  static_assert(N > 0, "accessor needs at least one dimension; use item() for 0-dim tensors");
  detail::check_accessor(*this, dtype_of<T>(), N);
  return TensorAccessor<T, N>(static_cast<T*>(impl_->data()), sizes().data(), strides().data());
}

}  // namespace kiln
