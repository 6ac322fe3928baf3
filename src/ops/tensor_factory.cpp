// Internal allocation helpers: empty_impl, empty_strided_impl, make_view, resize_impl.
#include "ops/tensor_factory.h"

#include <limits>

#include "autograd/view_autograd.h"
#include "kiln/random.h"
#include "ops/run.h"

namespace kiln::detail {

namespace {
int64_t checked_numel(IntArrayRef shape, const char* op) {
  int64_t n = 1;
  for (int64_t s : shape) {
    KILN_CHECK(s >= 0, "[", op, "] negative dimension ", s, " in shape ", shape);
    KILN_CHECK(s == 0 || n <= std::numeric_limits<int64_t>::max() / s, "[", op, "] shape ", shape,
               " has too many elements");
    n *= s;
  }
  return n;
}
}  // namespace

Device resolve_device(Device device) {
  // The GPU runtime registers the current-device hook that the generators use too.
  return device.is_cuda() && !device.has_index() ? resolve_rng_device(device) : device;
}

Storage make_device_storage(size_t nbytes, Device device) {
  if (device.is_cuda()) return make_cuda_storage(nbytes, resolve_device(device).index);
  return make_storage(nbytes, device);
}

extern constinit thread_local bool t_inference_mode;  // src/autograd/grad_mode.cpp

Tensor empty_impl(IntArrayRef shape, DType dtype, Device device) {
  int64_t n = checked_numel(shape, "empty");
  device = resolve_device(device);
  Storage st;
  if (!tracing_active())
    st = make_device_storage(static_cast<size_t>(n) * element_size(dtype), device);
  auto impl = Ref<TensorImpl>::make(std::move(st), dtype, device);
  impl->set_sizes_contiguous(shape);
  if (KILN_UNLIKELY(t_inference_mode)) impl->set_inference(true);  // made under InferenceMode
  return Tensor(std::move(impl));
}

int64_t storage_elements_needed(IntArrayRef sizes, IntArrayRef strides) {
  int64_t end = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    end += (sizes[i] - 1) * strides[i];
  }
  return end;
}

Tensor empty_strided_impl(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device) {
  KILN_CHECK(shape.size() == strides.size(), "[empty_strided] shape ", shape, " and strides ",
             strides, " have different lengths");
  checked_numel(shape, "empty_strided");
  for (int64_t s : strides) KILN_CHECK(s >= 0, "[empty_strided] negative stride in ", strides);
  int64_t n = storage_elements_needed(shape, strides);
  device = resolve_device(device);
  Storage st;
  if (!tracing_active())
    st = make_device_storage(static_cast<size_t>(n) * element_size(dtype), device);
  auto impl = Ref<TensorImpl>::make(std::move(st), dtype, device);
  impl->set_sizes_and_strides(shape, strides, 0);
  if (KILN_UNLIKELY(t_inference_mode)) impl->set_inference(true);
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = Ref<TensorImpl>::make(t.impl()->storage(), t.dtype(), t.device());
  impl->set_sizes_and_strides(sizes, strides, offset);
  return track_internal_view(t, Tensor(std::move(impl)));
}

void resize_impl(Tensor& t, IntArrayRef shape) {
  int64_t n = checked_numel(shape, "resize_");
  size_t need = static_cast<size_t>(n + t.storage_offset()) * t.element_size();
  TensorImpl* impl = t.impl();
  if (impl->has_storage() && impl->storage()->nbytes < need) {
    // Grow by replacing the storage (all views of the old storage keep the old data).
    KILN_CHECK(impl->storage().use_count() == 1,
               "[resize_] cannot resize a tensor whose storage is shared with a view");
    impl->set_storage(make_device_storage(need, t.device()));
  }
  impl->set_sizes_contiguous(shape);
}

}  // namespace kiln::detail
