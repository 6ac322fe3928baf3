// CPU kernels of the mask ops (masked_fill, masked_select, masked_scatter) and nonzero. The
// compacting ones count per fixed chunk, then write, so results never depend on thread count.
#include "kernels/cpu/index_kernels_util.h"
#include "kernels/cpu/iter.h"
#include "ops/tensor_factory.h"

namespace kiln::cpu {

namespace {

// in {x, mask} (expanded to out's shape): out = mask ? value : x.
void masked_fill_kernel(OpCall& c) {
  const Tensor& out = c.out[0];
  if (out.numel() == 0) return;
  Tensor v = value_tensor(c.attrs.s0, out.dtype(), out.sizes());
  StridedIter it;
  it.add(out);
  it.add(c.in[0]);
  it.add(c.in[1]);
  it.add(v);
  it.build(out.sizes());
  dispatch_element_size(out.element_size(), [&]<class U>() {
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<U*>(d[0] + i * s[0]) = *reinterpret_cast<const bool*>(d[2] + i * s[2])
                                                     ? *reinterpret_cast<const U*>(d[3])
                                                     : *reinterpret_cast<const U*>(d[1] + i * s[1]);
    });
  });
}

int64_t count_true(const RowMajorWalk& w, int64_t b, int64_t e, int which) {
  int64_t k = 0;
  w.run(b, e, [&](char** p) { k += *reinterpret_cast<const bool*>(p[which]) ? 1 : 0; });
  return k;
}

// in {x, mask} of one shape; out (1-D) is resized to the number of true elements.
void masked_select_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &mask = c.in[1];
  Tensor& out = c.out[0];
  const int64_t n = x.numel();
  RowMajorWalk w(x.sizes(),
                 {{static_cast<char*>(x.data_ptr()), x.strides()},
                  {static_cast<char*>(mask.data_ptr()), mask.strides()}},
                 {x.element_size(), 1});
  auto start = compact_count(n, [&](int64_t b, int64_t e) { return count_true(w, b, e, 1); });
  detail::resize_impl(out, {start.back()});
  if (start.back() == 0) return;
  const int64_t os = out.stride(0) * out.element_size();
  char* o = static_cast<char*>(out.data_ptr());
  dispatch_element_size(x.element_size(), [&]<class U>() {
    compact_write(n, start, [&](int64_t b, int64_t e, int64_t k) {
      w.run(b, e, [&](char** p) {
        if (*reinterpret_cast<const bool*>(p[1]))
          *reinterpret_cast<U*>(o + (k++) * os) = *reinterpret_cast<const U*>(p[0]);
      });
    });
  });
}

// in {x, mask (x's shape), source (contiguous)}: out = x with the true positions, in row-major
// order, taking source's elements one after another.
void masked_scatter_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &mask = c.in[1], &source = c.in[2];
  const Tensor& out = c.out[0];
  const int64_t n = out.numel();
  RowMajorWalk cw(mask.sizes(), {{static_cast<char*>(mask.data_ptr()), mask.strides()}}, {1});
  auto start = compact_count(n, [&](int64_t b, int64_t e) { return count_true(cw, b, e, 0); });
  KILN_CHECK(start.back() <= source.numel(), "[masked_scatter] the mask has ", start.back(),
             " true elements but source has only ", source.numel(), " elements");
  copy_raw(out, x);
  if (start.back() == 0) return;
  RowMajorWalk w(out.sizes(),
                 {{static_cast<char*>(out.data_ptr()), out.strides()},
                  {static_cast<char*>(mask.data_ptr()), mask.strides()}},
                 {out.element_size(), 1});
  const char* src = static_cast<const char*>(source.data_ptr());
  dispatch_element_size(out.element_size(), [&]<class U>() {
    compact_write(n, start, [&](int64_t b, int64_t e, int64_t k) {
      const U* s = reinterpret_cast<const U*>(src);
      w.run(b, e, [&](char** p) {
        if (*reinterpret_cast<const bool*>(p[1])) *reinterpret_cast<U*>(p[0]) = s[k++];
      });
    });
  });
}

template <class T>
inline bool is_nonzero(const T& v) {
  if constexpr (detail::is_complex_v<T>)
    return v.real() != decltype(v.real())(0) || v.imag() != decltype(v.real())(0);
  else if constexpr (std::is_same_v<T, bool>)
    return v;
  else
    return detail::convert<double>(v) != 0.0;
}

// in {x}; out int64 [n, x.dim()] resized to the nonzero count.
void nonzero_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  Tensor& out = c.out[0];
  const int64_t n = x.numel(), nd = x.dim();
  RowMajorWalk w(x.sizes(), {{static_cast<char*>(x.data_ptr()), x.strides()}}, {x.element_size()});
  detail::dispatch_types<detail::kAllMask>(x.dtype(), "nonzero", [&]<class T>() {
    auto start = compact_count(n, [&](int64_t b, int64_t e) {
      int64_t k = 0;
      w.run(b, e, [&](char** p) { k += is_nonzero(*reinterpret_cast<const T*>(p[0])) ? 1 : 0; });
      return k;
    });
    detail::resize_impl(out, {start.back(), nd});
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    if (start.back() == 0 || nd == 0) return;
    compact_write(n, start, [&](int64_t b, int64_t e, int64_t k) {
      w.run(b, e, [&](char** p, const int64_t* idx) {
        if (!is_nonzero(*reinterpret_cast<const T*>(p[0]))) return;
        for (int64_t d = 0; d < nd; ++d) o[k * nd + d] = idx[d];
        ++k;
      });
    });
  });
}

}  // namespace

void register_index_masked_kernels(detail::KernelRegistry& r) {
  r.set(OpId::MaskedFill, kCPU, &masked_fill_kernel);
  r.set(OpId::MaskedSelect, kCPU, &masked_select_kernel);
  r.set(OpId::MaskedScatter, kCPU, &masked_scatter_kernel);
  r.set(OpId::Nonzero, kCPU, &nonzero_kernel);
}

}  // namespace kiln::cpu
