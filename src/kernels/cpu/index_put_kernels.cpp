// CPU kernels of advanced indexing: index (x[idx...]) and index_put (x[idx...] = v, accumulate).
// Both first turn the index tensors into one int64 element offset per index position (checking
// bounds before anything is written), then walk the result shape with x restrided over it.
#include <vector>

#include "kernels/cpu/index_kernels_util.h"
#include "kernels/cpu/iter.h"
#include "ops/tensor_factory.h"

namespace kiln::cpu {

namespace {

// Element offsets into x of every position of the broadcast index shape B: the sum over k of
// wrap(idx_k) * x.stride(first + k). Indices are in[begin..] of c (all of shape B).
Tensor index_offsets(const OpCall& c, size_t begin, const Tensor& x, int64_t first,
                     const char* op) {
  const int64_t m = static_cast<int64_t>(c.in.size() - begin);
  IntArrayRef bshape = c.in[begin].sizes();
  Tensor off = detail::empty_impl(bshape, DType::Int64, Device(kCPU));
  int64_t* o = static_cast<int64_t*>(off.data_ptr());
  const int64_t nb = off.numel();
  for (int64_t i = 0; i < nb; ++i) o[i] = 0;
  for (int64_t k = 0; k < m; ++k) {
    const Tensor& idx = c.in[begin + k];
    const int64_t n = x.size(first + k), xs = x.stride(first + k);
    check_index_bounds(idx, n, first + k, op);
    dispatch_index_type(idx.dtype(), [&]<class IT>() {
      StridedIter it;
      it.add(off);
      it.add(idx);
      it.build(bshape);
      it.for_each([&](char** d, const int64_t* s, int64_t len) {
        for (int64_t i = 0; i < len; ++i)
          *reinterpret_cast<int64_t*>(d[0] + i * s[0]) +=
              wrap_index(*reinterpret_cast<const IT*>(d[1] + i * s[1]), n) * xs;
      });
    });
  }
  return off;
}

// x restrided over the result shape R = x.shape[:first] + B + x.shape[first+m:] (stride 0 over
// B), and the offsets over R (stride 0 outside B).
struct Restrided {
  Tensor xv, ov;
};
Restrided restride(const Tensor& x, const Tensor& off, int64_t first, int64_t m) {
  IntArrayRef b = off.sizes();
  const int64_t nb = static_cast<int64_t>(b.size());
  DimVector shape, xs, os;
  for (int64_t d = 0; d < first; ++d) shape.push_back(x.size(d)), xs.push_back(x.stride(d));
  for (int64_t d = 0; d < nb; ++d) shape.push_back(b[d]), xs.push_back(0);
  for (int64_t d = first + m; d < x.dim(); ++d)
    shape.push_back(x.size(d)), xs.push_back(x.stride(d));
  for (int64_t d = 0; d < first; ++d) os.push_back(0);
  for (int64_t d = 0; d < nb; ++d) os.push_back(off.stride(d));
  for (int64_t d = first + m; d < x.dim(); ++d) os.push_back(0);
  return {detail::make_view(x, shape, xs, x.storage_offset()),
          detail::make_view(off, shape, os, 0)};
}

void index_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t first = c.attrs.i0, m = static_cast<int64_t>(c.in.size()) - 1;
  Tensor off = index_offsets(c, 1, x, first, "index");
  if (out.numel() == 0) return;
  Restrided r = restride(x, off, first, m);
  StridedIter it;
  it.add(out);
  it.add(r.xv);
  it.add(r.ov);
  it.build(out.sizes());
  dispatch_element_size(x.element_size(), [&]<class U>() {
    it.for_each([&](char** d, const int64_t* s, int64_t len) {
      for (int64_t i = 0; i < len; ++i) {
        int64_t e = *reinterpret_cast<const int64_t*>(d[2] + i * s[2]);
        *reinterpret_cast<U*>(d[0] + i * s[0]) = reinterpret_cast<const U*>(d[1] + i * s[1])[e];
      }
    });
  });
}

// Serial, in row-major order of the indexing result: with repeated offsets the last write wins
// (accumulate adds them all in that order), whatever the number of threads.
void index_put_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &values = c.in[1];
  const Tensor& out = c.out[0];
  const int64_t first = c.attrs.i0, m = static_cast<int64_t>(c.in.size()) - 2;
  const bool accumulate = c.attrs.flag;
  Tensor off = index_offsets(c, 2, out, first, "index_put");  // out has x's sizes
  copy_raw(out, x);
  if (values.numel() == 0) return;
  Restrided r = restride(out, off, first, m);
  RowMajorWalk w(values.sizes(),
                 {{static_cast<char*>(r.xv.data_ptr()), r.xv.strides()},
                  {static_cast<char*>(values.data_ptr()), values.strides()},
                  {static_cast<char*>(r.ov.data_ptr()), r.ov.strides()}},
                 {x.element_size(), values.element_size(), 8});
  if (!accumulate) {
    dispatch_element_size(x.element_size(), [&]<class U>() {
      w.run(0, values.numel(), [&](char** p) {
        reinterpret_cast<U*>(p[0])[*reinterpret_cast<const int64_t*>(p[2])] =
            *reinterpret_cast<const U*>(p[1]);
      });
    });
    return;
  }
  detail::dispatch_types<detail::kNumericMask>(x.dtype(), "index_put", [&]<class T>() {
    using O = detail::opmath_t<T>;
    w.run(0, values.numel(), [&](char** p) {
      T* dst = reinterpret_cast<T*>(p[0]) + *reinterpret_cast<const int64_t*>(p[2]);
      T v = *reinterpret_cast<const T*>(p[1]);
      if constexpr (std::is_same_v<T, bool>)
        *dst = *dst || v;
      else
        *dst = detail::convert<T>(static_cast<O>(detail::convert<O>(*dst) + detail::convert<O>(v)));
    });
  });
}

}  // namespace

void register_index_put_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Index, kCPU, &index_kernel);
  r.set(OpId::IndexPut, kCPU, &index_put_kernel);
}

}  // namespace kiln::cpu
