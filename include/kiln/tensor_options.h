// TensorOptions: dtype/device/requires_grad for factories; converts implicitly from DType and
// Device.
#pragma once

#include <optional>

#include "kiln/device.h"
#include "kiln/dtype.h"

namespace kiln {

struct TensorOptions {
  std::optional<DType> dtype_;
  Device device_ = Device(DeviceType::CPU);
  bool requires_grad_ = false;
  bool pinned_memory_ = false;

  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}                     // NOLINT
  TensorOptions(Device d) : device_(d) {}                   // NOLINT
  TensorOptions(DeviceType t) : device_(t) {}               // NOLINT
  TensorOptions(const char* dev) : device_(Device(dev)) {}  // NOLINT

  TensorOptions dtype(DType d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }
  TensorOptions pinned_memory(bool p = true) const {
    TensorOptions o = *this;
    o.pinned_memory_ = p;
    return o;
  }
  DType dtype_or_default() const;  // dtype_, else the default float dtype
};

inline TensorOptions dtype(DType d) { return TensorOptions(d); }
inline TensorOptions device(Device d) { return TensorOptions(d); }

}  // namespace kiln
