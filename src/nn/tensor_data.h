// detail::set_data(dst, src): makes dst's TensorImpl view src's storage, geometry, dtype and device
// (PyTorch's `dst.data = src`), so every handle sharing dst sees the change. See
// Note [Module parameters are shared handles] in kiln/nn/module.h.
#pragma once

#include "kiln/tensor.h"

namespace kiln::detail {

template <class Impl>
void set_impl_device(Impl* impl, Device device) {
  if constexpr (requires { impl->set_device(device); }) {
    impl->set_device(device);
  } else {
    KILN_ERROR("[Module.to] moving parameters to ", device,
               " needs TensorImpl::set_device, which this build lacks");
  }
}

inline void set_data(const Tensor& dst, const Tensor& src) {
  KILN_CHECK(dst.defined() && src.defined(), "[set_data] undefined tensor");
  TensorImpl* d = dst.impl();
  const TensorImpl* s = src.impl();
  if (d->device() != s->device()) set_impl_device(d, s->device());
  d->set_storage(s->storage());
  d->set_dtype(s->dtype());
  d->set_sizes_and_strides(s->sizes(), s->strides(), s->offset());
}

}  // namespace kiln::detail
