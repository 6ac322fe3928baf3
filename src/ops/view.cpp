// View ops: metadata-only tensors sharing storage (view, reshape, permute, expand, slicing, ...).
#include <algorithm>
#include <numeric>

#include "autograd/view_autograd.h"
#include "core/wrap_dim.h"
#include "kiln/ops/elementwise.h"
#include "kiln/tensor.h"
#include "ops/tensor_factory.h"

namespace kiln {

using detail::wrap_dim;

namespace {

// View ops build their views untracked and record autograd themselves (finish_view below).
Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return detail::alias_untracked(t, sizes, strides, offset);
}

// Autograd for views (src/autograd/view_autograd.h): under grad mode every view records its
// base, and a view of a tensor requiring grad gets a node whose backward is given here.
bool track() { return detail::grad_mode_enabled(); }

Tensor reshape_back(const Tensor& self, Tensor out, const char* name) {
  if (!track()) return out;
  DimVector sz(self.sizes());
  // (view_strides rejects a 0-dim source; its gradient has one element: expand it instead)
  return detail::finish_view(self, std::move(out), name, [sz](const Tensor& g) {
    return g.dim() == 0 ? g.expand(sz) : g.reshape(sz);
  });
}

// Slicing views: the backward writes g through the same view of a zeros tensor.
Tensor scatter_back(const Tensor& self, Tensor out, const char* name, detail::ViewFn fn) {
  if (!track()) return out;
  DimVector sz(self.sizes());
  DType dt = self.dtype();
  Device dev = self.device();
  return detail::finish_view(self, std::move(out), name, [sz, dt, dev, fn](const Tensor& g) {
    return detail::view_scatter_back(g, sz, dt, dev, fn);
  });
}

DimVector infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector out(shape);
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      KILN_CHECK(infer < 0, "[", op, "] only one dimension can be inferred, got shape ", shape);
      infer = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(shape[i] >= 0, "[", op, "] invalid shape dimension ", shape[i], " in ", shape);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0, "[", op, "] shape ", shape,
               " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    KILN_CHECK(known == numel, "[", op, "] shape ", shape, " is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without copying, if possible
// (the chunks of dims that are contiguous with each other can be re-split freely).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef shape) {
  DimVector out(shape.size());
  if (shape.empty()) return out;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  // numel 0, or a 0-dim source (one element, no dims to split): any strides work; use
  // contiguous ones.
  if (numel == 0 || sizes.empty()) {
    int64_t s = 1;
    for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
      out[i] = s;
      s *= std::max<int64_t>(shape[i], 1);
    }
    return out;
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

namespace detail {
std::optional<DimVector> reshape_strides(IntArrayRef sizes, IntArrayRef strides,
                                         IntArrayRef shape) {
  return view_strides(sizes, strides, shape);
}
}  // namespace detail

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

Tensor Tensor::view(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "view");
  auto st = view_strides(sizes(), strides(), sz);
  KILN_CHECK(st.has_value(), "[view] size ", shape, " is not compatible with input tensor's size ",
             sizes(), " and stride ", strides(),
             " (at least one dimension spans across two contiguous subspaces). Use .reshape(...) "
             "instead.");
  return reshape_back(*this, make_view(*this, sz, *st, storage_offset()), "ViewBackward0");
}

Tensor Tensor::view_as(const Tensor& other) const { return view(other.sizes()); }

Tensor Tensor::reshape(IntArrayRef shape) const {
  DimVector sz = infer_size(shape, numel(), "reshape");
  if (auto st = view_strides(sizes(), strides(), sz))
    return reshape_back(*this, make_view(*this, sz, *st, storage_offset()), "ViewBackward0");
  return contiguous().view(sz);
}

Tensor Tensor::reshape_as(const Tensor& other) const { return reshape(other.sizes()); }

Tensor Tensor::permute(IntArrayRef dims) const {
  int64_t n = dim();
  KILN_CHECK(static_cast<int64_t>(dims.size()) == n,
             "[permute] number of dims don't match: tensor has ", n, " dims but permutation ", dims,
             " has ", dims.size());
  DimVector wd = detail::wrap_dims(dims, n, "permute");
  DimVector sz(n), st(n);
  for (int64_t i = 0; i < n; ++i) {
    sz[i] = sizes()[wd[i]];
    st[i] = strides()[wd[i]];
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (!track()) return out;
  DimVector inv(n);
  for (int64_t i = 0; i < n; ++i) inv[wd[i]] = i;
  return detail::finish_view(*this, std::move(out), "PermuteBackward0",
                             [inv](const Tensor& g) { return g.permute(inv); });
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  int64_t n = dim();
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  DimVector sz(sizes()), st(strides());
  if (n > 0) {
    std::swap(sz[d0], sz[d1]);
    std::swap(st[d0], st[d1]);
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (!track()) return out;
  return detail::finish_view(
      *this, std::move(out), "TransposeBackward0",
      [d0, d1, n](const Tensor& g) { return n == 0 ? g : g.transpose(d0, d1); });
}

Tensor Tensor::t() const {
  KILN_CHECK(dim() <= 2, "[t] expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? transpose(0, 0) : transpose(0, 1);
}

Tensor Tensor::mT() const {
  KILN_CHECK(dim() >= 2,
             "[mT] tensor.mT is only supported on matrices or batches of matrices. Got ", dim(),
             "-D tensor.");
  return transpose(-2, -1);
}

Tensor Tensor::expand(IntArrayRef shape) const {
  int64_t n = static_cast<int64_t>(shape.size());
  KILN_CHECK(n >= dim(), "[expand] the number of sizes provided (", n,
             ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  DimVector sz(n), st(n);
  int64_t off = n - dim();
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t want = shape[i];
    if (i < off) {
      KILN_CHECK(want >= 0, "[expand] the expanded size ", want,
                 " is not allowed in a leading, non-existing dimension ", i);
      sz[i] = want;
      st[i] = 0;
      continue;
    }
    int64_t have = sizes()[i - off];
    if (want == -1) want = have;
    KILN_CHECK(have == want || have == 1, "[expand] the expanded size of the tensor (", want,
               ") must match the existing size (", have, ") at non-singleton dimension ", i,
               ".  Target sizes: ", shape, ".  Tensor sizes: ", sizes());
    sz[i] = want;
    st[i] = have == want ? strides()[i - off] : 0;
  }
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (!track()) return out;
  DimVector in_sz(sizes());
  return detail::finish_view(*this, std::move(out), "ExpandBackward0",
                             [in_sz](const Tensor& g) { return detail::sum_to(g, in_sz); });
}

Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.sizes()); }

Tensor Tensor::squeeze() const {
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i)
    if (sizes()[i] != 1) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  return reshape_back(*this, make_view(*this, sz, st, storage_offset()), "SqueezeBackward0");
}

Tensor Tensor::squeeze(int64_t d) const { return squeeze(IntArrayRef(d)); }

Tensor Tensor::squeeze(IntArrayRef dims) const {
  DimVector wd = detail::wrap_dims(dims, dim(), "squeeze");
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i) {
    bool drop = sizes()[i] == 1 && std::find(wd.begin(), wd.end(), i) != wd.end();
    if (!drop) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  }
  return reshape_back(*this, make_view(*this, sz, st, storage_offset()), "SqueezeBackward1");
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  DimVector sz(sizes()), st(strides());
  int64_t s = d < dim() ? sizes()[d] * strides()[d] : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, s);
  return reshape_back(*this, make_view(*this, sz, st, storage_offset()), "UnsqueezeBackward0");
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  KILN_CHECK(start <= end, "[flatten] start_dim (", start, ") cannot come after end_dim (", end,
             ")");
  if (dim() == 0) return reshape({1});
  if (start == end) return *this;
  DimVector sz;
  for (int64_t i = 0; i < start; ++i) sz.push_back(sizes()[i]);
  int64_t m = 1;
  for (int64_t i = start; i <= end; ++i) m *= sizes()[i];
  sz.push_back(m);
  for (int64_t i = end + 1; i < dim(); ++i) sz.push_back(sizes()[i]);
  return reshape(sz);
}

Tensor Tensor::unflatten(int64_t d, IntArrayRef shape) const {
  d = wrap_dim(d, dim(), "unflatten");
  KILN_CHECK(!shape.empty(), "[unflatten] sizes must be non-empty");
  DimVector inner = infer_size(shape, sizes()[d], "unflatten");
  DimVector sz;
  for (int64_t i = 0; i < d; ++i) sz.push_back(sizes()[i]);
  for (int64_t v : inner) sz.push_back(v);
  for (int64_t i = d + 1; i < dim(); ++i) sz.push_back(sizes()[i]);
  return view(sz);
}

Tensor Tensor::movedim(IntArrayRef src, IntArrayRef dst) const {
  KILN_CHECK(src.size() == dst.size(), "[movedim] invalid source or destination dims: source (",
             src, " dims) should contain the same number of dims as destination (", dst, " dims)");
  int64_t n = dim();
  DimVector s = detail::wrap_dims(src, n, "movedim"), d = detail::wrap_dims(dst, n, "movedim");
  DimVector order(n, -1);
  std::vector<bool> used(n, false);
  for (size_t i = 0; i < s.size(); ++i) {
    order[d[i]] = s[i];
    used[s[i]] = true;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (order[i] != -1) continue;
    while (used[next]) ++next;
    order[i] = next++;
  }
  return permute(order);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  KILN_CHECK(dim() > 0, "[narrow] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  int64_t sz = sizes()[d];
  KILN_CHECK(start >= -sz && start <= sz, "[narrow] start (", start, ") is out of bounds for dim ",
             d, " of size ", sz);
  if (start < 0) start += sz;
  KILN_CHECK(length >= 0 && start + length <= sz, "[narrow] start (", start, ") + length (", length,
             ") exceeds dimension size (", sz, ")");
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  KILN_CHECK(dim() > 0, "[select] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  int64_t sz = sizes()[d];
  KILN_CHECK(index >= -sz && index < sz, "[select] index ", index,
             " is out of bounds for dimension ", d, " with size ", sz);
  if (index < 0) index += sz;
  DimVector nsz(sizes()), nst(strides());
  nsz.erase(nsz.begin() + d);
  nst.erase(nst.begin() + d);
  return scatter_back(*this, make_view(*this, nsz, nst, storage_offset() + index * strides()[d]),
                      "SelectBackward0",
                      [d, index](const Tensor& t) { return t.select(d, index); });
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  KILN_CHECK(dim() > 0, "[slice] cannot be applied to a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  KILN_CHECK(step > 0, "[slice] step must be positive, got ", step);
  int64_t sz = sizes()[d];
  int64_t b = start.value_or(0), e = end.value_or(sz);
  if (b < 0) b += sz;
  if (e < 0) e += sz;
  b = std::clamp<int64_t>(b, 0, sz);
  e = std::clamp<int64_t>(e, b, sz);
  DimVector nsz(sizes()), nst(strides());
  nsz[d] = (e - b + step - 1) / step;
  nst[d] = strides()[d] * step;
  return scatter_back(*this, make_view(*this, nsz, nst, storage_offset() + b * strides()[d]),
                      "SliceBackward0",
                      [d, b, e, step](const Tensor& t) { return t.slice(d, b, e, step); });
}

Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const {
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  KILN_CHECK(d1 != d2, "[diagonal] dimensions cannot be identical ", d1, ", ", d2);
  int64_t off = storage_offset();
  int64_t len;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(sizes()[d1], sizes()[d2] - offset), 0);
    if (len > 0) off += offset * strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(sizes()[d1] + offset, sizes()[d2]), 0);
    if (len > 0) off -= offset * strides()[d1];
  }
  DimVector sz, st;
  for (int64_t i = 0; i < dim(); ++i)
    if (i != d1 && i != d2) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  sz.push_back(len);
  st.push_back(strides()[d1] + strides()[d2]);
  return scatter_back(*this, make_view(*this, sz, st, off), "DiagonalBackward0",
                      [offset, d1, d2](const Tensor& t) { return t.diagonal(offset, d1, d2); });
}

Tensor Tensor::as_strided(IntArrayRef sz, IntArrayRef st, std::optional<int64_t> offset) const {
  KILN_CHECK(sz.size() == st.size(), "[as_strided] mismatch in length of strides ", st,
             " and shape ", sz);
  int64_t off = offset.value_or(storage_offset());
  KILN_CHECK(off >= 0, "[as_strided] negative storage offset ", off);
  for (int64_t s : sz) KILN_CHECK(s >= 0, "[as_strided] negative size in ", sz);
  for (int64_t s : st) KILN_CHECK(s >= 0, "[as_strided] negative stride in ", st);
  if (impl()->has_storage()) {
    int64_t need = detail::storage_elements_needed(sz, st) + off;
    int64_t have = static_cast<int64_t>(impl()->storage()->nbytes) / element_size();
    KILN_CHECK(detail::storage_elements_needed(sz, st) == 0 || need <= have,
               "[as_strided] setStorage: sizes ", sz, ", strides ", st, ", storage offset ", off,
               " require ", need * element_size(), " bytes, but the storage has ",
               have * element_size());
  }
  Tensor out = make_view(*this, sz, st, off);
  if (!track()) return out;
  // Backward in storage terms relative to self, which must then be contiguous; elements that
  // a stride 0 repeats are summed first.
  DimVector osz(sz), ost(st), isz(sizes());
  const int64_t rel = off - storage_offset();
  const bool contiguous_self = is_contiguous();
  DType dt = dtype();
  Device dev = device();
  return detail::finish_view(
      *this, std::move(out), "AsStridedBackward0",
      [osz, ost, isz, rel, contiguous_self, dt, dev](const Tensor& g) {
        KILN_CHECK(contiguous_self,
                   "[as_strided] backward through as_strided of a "
                   "non-contiguous tensor is not supported by kiln's autograd");
        auto view = [osz, ost, rel](const Tensor& t) {
          return t.as_strided(osz, ost, t.storage_offset() + rel);
        };
        return detail::view_scatter_back(
            g, isz, dt, dev, view, [osz, ost, rel](Tensor& z, const Tensor& gg) {
              DimVector zero_dims, vsz(osz);
              for (size_t i = 0; i < osz.size(); ++i)
                if (ost[i] == 0 && osz[i] > 1) {
                  zero_dims.push_back(static_cast<int64_t>(i));
                  vsz[i] = 1;
                }
              Tensor src = zero_dims.empty() ? gg : gg.sum(zero_dims, true);
              z.as_strided(vsz, ost, z.storage_offset() + rel).copy_(src);
            });
      });
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  int64_t n = dim();
  d = wrap_dim(d, n, "unfold");
  int64_t len = n == 0 ? 1 : sizes()[d];
  KILN_CHECK(size >= 0 && size <= len, "[unfold] maximum size for tensor at dimension ", d, " is ",
             len, " but size is ", size);
  KILN_CHECK(step > 0, "[unfold] step is ", step, " but must be > 0");
  DimVector sz(sizes()), st(strides());
  if (n == 0) {
    sz.push_back(size);
    st.push_back(1);
    return reshape_back(*this, make_view(*this, sz, st, storage_offset()), "UnfoldBackward0");
  }
  sz[d] = (len - size) / step + 1;
  int64_t old = st[d];
  st[d] = old * step;
  sz.push_back(size);
  st.push_back(old);
  Tensor out = make_view(*this, sz, st, storage_offset());
  if (!track()) return out;
  auto view = [d, size, step](const Tensor& t) { return t.unfold(d, size, step); };
  DimVector isz(sizes());
  DType dt = dtype();
  Device dev = device();
  const int64_t windows = sz[d];
  return detail::finish_view(
      *this, std::move(out), "UnfoldBackward0",
      [view, isz, dt, dev, d, size, step, windows](const Tensor& g) {
        if (step >= size) return detail::view_scatter_back(g, isz, dt, dev, view);
        // Overlapping windows: element k of every window is a strided slice of the input.
        return detail::view_scatter_back(
            g, isz, dt, dev, view, [d, size, step, windows](Tensor& z, const Tensor& gg) {
              for (int64_t k = 0; k < size; ++k)
                z.slice(d, k, k + (windows - 1) * step + 1, step).add_(gg.select(-1, k));
            });
      });
}

namespace {
Tensor complex_part(const Tensor& t, int64_t which, const char* op) {
  KILN_CHECK(t.is_complex(), "[", op, "] is only supported for complex tensors, got ",
             dtype_name(t.dtype()));
  DimVector st(t.strides());
  for (auto& s : st) s *= 2;
  auto impl =
      detail::Ref<detail::TensorImpl>::make(t.impl()->storage(), to_real(t.dtype()), t.device());
  impl->set_sizes_and_strides(t.sizes(), st, t.storage_offset() * 2 + which);
  return Tensor(std::move(impl));
}
}  // namespace

Tensor Tensor::real() const {
  if (!is_complex())
    return track()
               ? detail::finish_view(*this, make_view(*this, sizes(), strides(), storage_offset()),
                                     "AliasBackward0", [](const Tensor& g) { return g; })
               : make_view(*this, sizes(), strides(), storage_offset());
  Tensor out = complex_part(*this, 0, "real");
  if (!track()) return out;
  DType dt = dtype();
  return detail::finish_view(
      *this, std::move(out), "RealBackward0", [dt](const Tensor& g) { return g.to(dt); }, true);
}

Tensor Tensor::imag() const {
  Tensor out = complex_part(*this, 1, "imag");
  if (!track()) return out;
  DType dt = dtype();
  return detail::finish_view(
      *this, std::move(out), "ImagBackward0",
      [dt](const Tensor& g) { return g.to(dt) * Scalar(complex<double>(0, 1)); }, true);
}

Tensor Tensor::view(DType dt) const {
  KILN_CHECK(kiln::element_size(dt) == element_size(), "[view] viewing a ", dtype_name(dtype()),
             " tensor as ", dtype_name(dt),
             " needs equal element sizes (kiln supports only same-size dtype views)");
  auto impl = detail::Ref<detail::TensorImpl>::make(impl_->storage(), dt, device());
  impl->set_sizes_and_strides(sizes(), strides(), storage_offset());
  return Tensor(std::move(impl));
}

Tensor Tensor::detach() const { return make_view(*this, sizes(), strides(), storage_offset()); }

}  // namespace kiln
