// Tensor copies and conversions: copy_, to, contiguous, clone, fill_, item, typed access.
#include "kiln/cuda.h"
#include "kiln/ops/factories.h"
#include "kiln/tensor.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

void Tensor::check_dtype_for_access(DType want, const char* what) const {
  KILN_CHECK(defined(), "[", what, "] called on an undefined tensor");
  KILN_CHECK(want == dtype(), "[", what, "] expected scalar type ", dtype_name(want), " but found ",
             dtype_name(dtype()));
}

namespace detail {
void check_accessor(const Tensor& t, DType want, size_t n) {
  t.check_dtype_for_access(want, "accessor");
  KILN_CHECK(t.dim() == static_cast<int64_t>(n), "[accessor] expected ", n, " dims but tensor has ",
             t.dim());
  KILN_CHECK(t.is_cpu(), "[accessor] needs a cpu tensor, got one on ", t.device().str());
}
}  // namespace detail

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  KILN_CHECK(defined() && src.defined(), "[copy_] undefined tensor");
  OpCall c(OpId::Copy);
  c.in.push_back(src);
  c.out.push_back(*this);
  c.provided_out = true;
  c.inplace = true;
  // broadcast check: src must broadcast to self's shape
  DimVector b = detail::broadcast_shapes("copy_", sizes(), src.sizes());
  KILN_CHECK(IntArrayRef(b) == sizes(), "[copy_] source of shape ", src.sizes(),
             " cannot be broadcast to the destination shape ", sizes());
  c.compute = dtype();
  c.attrs.flag = non_blocking;  // GPU copies from/to pinned memory return before they finish
  detail::run(c);
  return *this;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = detail::empty_impl(sizes(), dtype(), device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::pin_memory() const { return detail::pin_memory(*this); }
bool Tensor::is_pinned() const { return detail::is_pinned(*this); }

Tensor Tensor::clone() const {
  Tensor out = detail::make_output(sizes(), dtype(), device(), *this);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dt, bool copy) const {
  if (dt == dtype() && !copy) return *this;
  Tensor out = detail::make_output(sizes(), dt, device(), *this);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device dev, bool non_blocking, bool copy) const {
  return to(dev, dtype(), non_blocking, copy);
}

Tensor Tensor::to(Device dev, DType dt, bool non_blocking, bool copy) const {
  if (dev.is_cuda() && dev.index < 0 && device().is_cuda()) dev = device();
  if (dev == device() && dt == dtype() && !copy) return *this;
  Tensor out = detail::make_output(sizes(), dt, dev, dev == device() ? *this : Tensor());
  out.copy_(*this, non_blocking);
  return out;
}

Tensor Tensor::to(const TensorOptions& o, bool non_blocking, bool copy) const {
  return to(o.device_, o.dtype_.value_or(dtype()), non_blocking, copy);
}

Tensor& Tensor::fill_(const Scalar& value) {
  OpCall c(OpId::Fill);
  c.out.push_back(*this);
  c.provided_out = true;
  c.inplace = true;
  c.attrs.s0 = value;
  c.attrs.has_s0 = true;
  KILN_CHECK(!(value.is_complex() && !is_complex()), "[fill_] cannot fill a ", dtype_name(dtype()),
             " tensor with a complex value");
  detail::run(c);
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

Scalar Tensor::item() const {
  KILN_CHECK(defined(), "[item] called on an undefined tensor");
  KILN_CHECK(numel() == 1, "[item] a Tensor with ", numel(),
             " elements cannot be converted to Scalar");
  Tensor t = is_cpu() ? *this : to(Device(kCPU));
  const void* p = t.data_ptr();
  switch (dtype()) {
#define KILN_ITEM_CASE(T, E, N) \
  case DType::E:                \
    return Scalar(*static_cast<const T*>(p));
    KILN_FORALL_DTYPES(KILN_ITEM_CASE)
#undef KILN_ITEM_CASE
  }
  return Scalar();
}

std::vector<Scalar> Tensor::tolist_flat() const {
  Tensor t = to(Device(kCPU)).contiguous();
  std::vector<Scalar> out;
  out.reserve(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const char* p = static_cast<const char*>(t.data_ptr()) + i * t.element_size();
    switch (dtype()) {
#define KILN_LIST_CASE(T, E, N)                       \
  case DType::E:                                      \
    out.emplace_back(*reinterpret_cast<const T*>(p)); \
    break;
      KILN_FORALL_DTYPES(KILN_LIST_CASE)
#undef KILN_LIST_CASE
    }
  }
  return out;
}

}  // namespace kiln
