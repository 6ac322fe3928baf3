// TensorImpl: storage + offset + sizes/strides + dtype/device + version + autograd metadata.
#pragma once

#include <memory>

#include "kiln/dtype.h"
#include "kiln/small_vector.h"
#include "kiln/storage.h"

namespace kiln {

struct AutogradMeta;  // defined by autograd; null while no gradient is needed

namespace detail {

struct AutogradMetaDeleter {
  void operator()(AutogradMeta* m) const;
};

class TensorImpl : public RefCounted {
 public:
  TensorImpl(Storage storage, DType dtype, Device device)
      : storage_(std::move(storage)), dtype_(dtype), device_(device) {}
  ~TensorImpl();

  const Storage& storage() const { return storage_; }
  bool has_storage() const { return static_cast<bool>(storage_); }
  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // Module::to() moves parameters in place (Note [Module parameters are shared handles]).
  void set_device(Device d) { device_ = d; }
  bool is_contiguous() const { return contiguous_; }
  // Address of element 0 (storage base + offset), or null for an empty storage.
  void* data() const {
    return storage_ ? static_cast<char*>(storage_->ptr.data) + offset_ * element_size(dtype_)
                    : nullptr;
  }

  // Sets sizes and contiguous strides.
  void set_sizes_contiguous(IntArrayRef sizes);
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t offset);
  void set_offset(int64_t off) { offset_ = off; }
  void set_storage(Storage s) { storage_ = std::move(s); }
  void set_dtype(DType d) { dtype_ = d; }

  uint32_t version() const {
    return storage_ ? storage_->version.load(std::memory_order_relaxed) : 0;
  }
  void bump_version() {
    if (storage_) storage_->version.fetch_add(1, std::memory_order_relaxed);
  }

  // A 0-dim tensor made from a C++ number for an op (x + 2.5): it promotes like a scalar.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool w) { wrapped_number_ = w; }

  // Made under InferenceMode (torch.is_inference): autograd refuses to record it later.
  bool is_inference() const { return inference_; }
  void set_inference(bool v) { inference_ = v; }

  AutogradMeta* autograd_meta() const { return autograd_.get(); }
  void set_autograd_meta(AutogradMeta* m) { autograd_.reset(m); }

 private:
  void refresh();  // numel_ and contiguous_ from sizes/strides

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  DType dtype_;
  Device device_;
  bool contiguous_ = true;
  bool wrapped_number_ = false;
  bool inference_ = false;
  std::unique_ptr<AutogradMeta, AutogradMetaDeleter> autograd_;
};

}  // namespace detail
}  // namespace kiln
