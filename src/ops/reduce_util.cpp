// Reduction front-end helpers: dims, output shapes and allocation, empty-dim checks.
#include "ops/reduce_util.h"

#include <algorithm>

#include "core/wrap_dim.h"
#include "ops/infer.h"

namespace kiln::detail {

void check_defined(const Tensor& x, const char* op) {
  KILN_CHECK(x.defined(), "[", op, "] called on an undefined tensor");
}

ReduceDims reduce_dims(const Tensor& x, IntArrayRef dim, bool keepdim, const char* op) {
  check_defined(x, op);
  ReduceDims r;
  const int64_t nd = x.dim();
  DimVector w = wrap_dims(dim, nd, op);
  if (nd == 0) return r;  // dims 0/-1 of a 0-dim tensor reduce its single element
  if (dim.empty())
    for (int64_t d = 0; d < nd; ++d) w.push_back(d);
  std::sort(w.begin(), w.end());
  r.dims = w;
  size_t j = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const bool red = j < w.size() && w[j] == d;
    if (red) ++j;
    if (!red)
      r.shape.push_back(x.sizes()[d]);
    else if (keepdim)
      r.shape.push_back(1);
  }
  return r;
}

void check_nonempty(const Tensor& x, IntArrayRef dims, const char* op) {
  for (int64_t d : dims)
    KILN_CHECK(x.sizes()[d] != 0, "[", op, "] Expected reduction dim ", d,
               " to have non-zero size.");
}

int64_t reduced_numel(const Tensor& x, IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.sizes()[d];
  return n;
}

void add_reduce_output(OpCall& c, Tensor* provided, IntArrayRef shape, DType natural,
                       DType final_dtype) {
  const Device dev = c.in[0].device();
  if (provided != nullptr) {
    KILN_CHECK(provided->defined(), "[", op_name(c.op), "] out= tensor is undefined");
    c.provided_out = true;
    c.out.push_back(check_provided_out(c, *provided, shape, natural, dev));
    return;
  }
  if (natural == final_dtype) {
    c.out.push_back(make_output(shape, natural, dev));
    return;
  }
  Tensor dst = make_output(shape, final_dtype, dev);
  Tensor tmp = make_output(shape, natural, dev);
  c.copy_back.emplace_back(tmp, dst);
  c.out.push_back(tmp);
}

OpCall reduce_call(OpId id, const Tensor& x, const ReduceDims& rd, bool keepdim) {
  OpCall c(id);
  c.in.push_back(x);
  c.attrs.ints = rd.dims;
  c.attrs.flag = keepdim;
  c.compute = x.dtype();
  return c;
}

}  // namespace kiln::detail
