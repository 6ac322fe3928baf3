// Shape ops written with views and other ops: split family, roll, rot90, repeat, tile, pad,
// broadcast_to/broadcast_tensors, meshgrid, block_diag, cartesian_prod, and their Tensor methods.
#include <algorithm>
#include <optional>

#include "autograd/view_autograd.h"
#include "core/wrap_dim.h"
#include "kiln/autograd.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/shape.h"
#include "kiln/type_promotion.h"
#include "ops/infer.h"
#include "ops/shape_util.h"

namespace kiln {

using detail::wrap_dim;

// ---- splitting ----
namespace {

// Note [Split backward]: the pieces of split / split_with_sizes / chunk / tensor_split / unbind
// share ONE backward node (PyTorch's SplitBackward0 / UnbindBackward0), so the input's gradient
// is one cat (stack) of the pieces' gradients, with zeros only for pieces that got none, instead
// of an input-sized zero fill + copy per piece summed up. When the pieces' gradients already sit
// in one buffer exactly as the pieces sit in the input (same storage and strides, offsets
// start_i * stride(dim) apart), that buffer viewed with the input's shape IS the input's gradient
// and nothing is copied: the fused attention's backward writes the gradients of q, k, v split
// from one packed projection that way (Note [Packed QKV gradients],
// src/nn/functional/attention.cpp). Gradients that require grad (create_graph) take the
// differentiable cat.

bool same_layout(const Tensor& g, const Tensor& g0, DType dt) {
  return g.defined() && g.dtype() == dt && g.device() == g0.device() && g.impl()->has_storage() &&
         g.impl()->storage() == g0.impl()->storage() && g.strides() == g0.strides() &&
         !(detail::grad_mode_enabled() && g.requires_grad());
}

// gs viewed as the whole input when they tile one buffer as the pieces tile the input, else
// undefined. `lengths` < 0: unbind (pieces are selects, dim removed).
Tensor tiled_gradient(const std::vector<Tensor>& gs, IntArrayRef in_sizes, DType dt, int64_t dim,
                      const std::vector<int64_t>& starts, const std::vector<int64_t>& lengths) {
  const Tensor& g0 = gs[0];
  if (!g0.defined() || !g0.impl()->has_storage()) return {};
  const bool unbind = lengths.empty();
  DimVector st(g0.strides());
  if (unbind) {
    const int64_t step =
        gs.size() > 1 && gs[1].defined() ? gs[1].storage_offset() - g0.storage_offset() : 0;
    st.insert(st.begin() + dim, step);
  }
  for (size_t i = 0; i < gs.size(); ++i) {
    if (!same_layout(gs[i], g0, dt)) return {};
    const int64_t want = g0.storage_offset() + (unbind ? static_cast<int64_t>(i) * st[dim]
                                                       : (starts[i] - starts[0]) * st[dim]);
    if (gs[i].storage_offset() != want) return {};
  }
  return detail::alias_untracked(g0, in_sizes, st, g0.storage_offset());
}

// The pieces x.narrow(dim, starts[i], lengths[i]) (x.select(dim, i) for unbind: lengths empty),
// under one node when they tile x along dim; individually tracked narrows otherwise
// (tensor_split with decreasing indices overlaps).
std::vector<Tensor> split_views(const Tensor& x, int64_t dim, const std::vector<int64_t>& starts,
                                const std::vector<int64_t>& lengths) {
  const bool unbind = lengths.empty();
  bool tiles = !unbind;
  for (size_t i = 0; i < lengths.size(); ++i)
    tiles &= starts[i] == (i == 0 ? 0 : starts[i - 1] + lengths[i - 1]);
  if (!unbind) tiles &= starts.back() + lengths.back() == x.size(dim);
  std::vector<Tensor> r;
  const bool track = detail::grad_mode_enabled() && (tiles || unbind);
  {
    std::optional<NoGradGuard> ng;
    if (track) ng.emplace();  // plain views: the shared node below records autograd
    const size_t n = unbind ? static_cast<size_t>(x.size(dim)) : lengths.size();
    for (size_t i = 0; i < n; ++i)
      r.push_back(unbind ? x.select(dim, static_cast<int64_t>(i))
                         : x.narrow(dim, starts[i], lengths[i]));
  }
  if (!track || r.empty()) return r;
  DimVector in_sizes(x.sizes());
  const DType dt = x.dtype();
  const Device dev = x.device();
  detail::finish_multi_view(
      x, r, unbind ? "UnbindBackward0" : "SplitBackward0",
      [in_sizes, dt, dev, dim, starts, lengths, unbind](std::vector<Tensor>& gs) {
        if (Tensor t = tiled_gradient(gs, in_sizes, dt, dim, starts, lengths); t.defined())
          return t;
        std::vector<Tensor> parts;
        for (size_t i = 0; i < gs.size(); ++i) {
          if (gs[i].defined()) {
            parts.push_back(gs[i]);
            continue;
          }
          DimVector sz(in_sizes);
          if (unbind)
            sz.erase(sz.begin() + dim);
          else
            sz[dim] = lengths[i];
          parts.push_back(kiln::zeros(sz, TensorOptions(dt).device(dev)));
        }
        if (unbind) return kiln::stack(parts, dim);
        return parts.size() == 1 ? parts[0] : kiln::cat(parts, dim);
      });
  return r;
}

}  // namespace

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  detail::check_defined(x, "split");
  KILN_CHECK(x.dim() > 0, "[split] expects at least a 1-dimensional tensor");
  KILN_CHECK(split_size >= 0,
             "[split] expects split_size be non-negative, but got split_size=", split_size);
  dim = wrap_dim(dim, x.dim(), "split");
  const int64_t n = x.size(dim);
  KILN_CHECK(split_size != 0 || n == 0,
             "[split] split_size can only be 0 if dimension size is 0, but got dimension size of ",
             n);
  const int64_t pieces =
      split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<int64_t> starts, lengths;
  for (int64_t i = 0; i < pieces; ++i) {
    starts.push_back(i * split_size);
    lengths.push_back(std::min(split_size, n - starts.back()));
  }
  return split_views(x, dim, starts, lengths);
}

std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef sizes, int64_t dim) {
  detail::check_defined(x, "split_with_sizes");
  KILN_CHECK(x.dim() > 0, "[split_with_sizes] expects at least a 1-dimensional tensor");
  dim = wrap_dim(dim, x.dim(), "split_with_sizes");
  const int64_t n = x.size(dim);
  int64_t total = 0;
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0,
               "[split_with_sizes] expects split_sizes have only non-negative entries, "
               "but got split_sizes=",
               sizes);
    total += s;
  }
  KILN_CHECK(total == n, "[split_with_sizes] expects split_sizes to sum exactly to ", n,
             " (input tensor's size at dimension ", dim, "), but got split_sizes=", sizes);
  std::vector<int64_t> starts, lengths;
  int64_t start = 0;
  for (int64_t s : sizes) {
    starts.push_back(start);
    lengths.push_back(s);
    start += s;
  }
  if (lengths.empty()) return {};
  return split_views(x, dim, starts, lengths);
}

std::vector<Tensor> split(const Tensor& x, IntArrayRef sizes, int64_t dim) {
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim) {
  detail::check_defined(x, "tensor_split");
  KILN_CHECK(x.dim() > 0,
             "[tensor_split] expected at least a 1-dimensional tensor, but got a "
             "tensor with 0 dims");
  KILN_CHECK(sections > 0, "[tensor_split] number of sections must be larger than 0, got ",
             sections);
  dim = wrap_dim(dim, x.dim(), "tensor_split");
  const int64_t n = x.size(dim), base = n / sections, extra = n % sections;
  std::vector<int64_t> starts, lengths;
  int64_t start = 0;
  for (int64_t i = 0; i < sections; ++i) {
    starts.push_back(start);
    lengths.push_back(base + (i < extra ? 1 : 0));
    start += lengths.back();
  }
  return split_views(x, dim, starts, lengths);
}

std::vector<Tensor> tensor_split(const Tensor& x, IntArrayRef indices, int64_t dim) {
  detail::check_defined(x, "tensor_split");
  KILN_CHECK(x.dim() > 0,
             "[tensor_split] expected at least a 1-dimensional tensor, but got a "
             "tensor with 0 dims");
  dim = wrap_dim(dim, x.dim(), "tensor_split");
  std::vector<int64_t> starts, lengths;
  int64_t start = 0;
  const int64_t n = x.size(dim);
  // Python slice bounds: negative indices count from the end, then clamp to [0, n].
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  for (int64_t idx : indices) {
    const int64_t s = clamp(start), e = std::max(clamp(idx), s);
    starts.push_back(s);
    lengths.push_back(e - s);
    start = idx;
  }
  starts.push_back(clamp(start));
  lengths.push_back(n - starts.back());
  return split_views(x, dim, starts, lengths);
}

std::vector<Tensor> tensor_split(const Tensor& x, const Tensor& ios, int64_t dim) {
  detail::check_defined(ios, "tensor_split");
  KILN_CHECK(ios.dtype() == DType::Int64,
             "[tensor_split] expected tensor_indices_or_sections to have dtype of long, but got ",
             dtype_name(ios.dtype()));
  KILN_CHECK(ios.dim() <= 1,
             "[tensor_split] expected tensor_indices_or_sections to be a "
             "zero-dimensional or one-dimensional tensor, but got a tensor with ",
             ios.dim(), " dims");
  Tensor c = ios.to(Device(kCPU)).contiguous();
  if (c.dim() == 0) return tensor_split(x, c.item<int64_t>(), dim);
  std::vector<int64_t> idx(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  return tensor_split(x, IntArrayRef(idx), dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  detail::check_defined(x, "chunk");
  KILN_CHECK(x.dim() > 0, "[chunk] expects at least a 1-dimensional tensor");
  KILN_CHECK(chunks > 0, "[chunk] expects `chunks` to be greater than 0, got: ", chunks);
  dim = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.size(dim);
  const int64_t split_size = (n + chunks - 1) / chunks;
  if (split_size == 0 && n == 0) {  // keep the number of (empty) chunks, as PyTorch
    std::vector<int64_t> sizes(chunks, 0);
    return split_with_sizes(x, sizes, dim);
  }
  return split(x, split_size, dim);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  detail::check_defined(x, "unbind");
  dim = wrap_dim(dim, x.dim(), "unbind");
  return split_views(x, dim, {}, {});
}

// ---- roll / rot90 ----
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims) {
  detail::check_defined(x, "roll");
  KILN_CHECK(!shifts.empty(), "[roll] `shifts` required");
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1,
               "[roll] shifts and dimensions must align. shifts: ", shifts.size(), ", dims: 0");
    return x.dim() == 0 ? x.clone() : roll(x.reshape({-1}), shifts, {0}).view(x.sizes());
  }
  KILN_CHECK(shifts.size() == dims.size(),
             "[roll] shifts and dimensions must align. shifts: ", shifts.size(),
             ", dims: ", dims.size());
  Tensor y = x;
  bool copied = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], x.dim(), "roll");
    const int64_t n = y.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    y = cat({y.narrow(d, n - s, s), y.narrow(d, 0, n - s)}, d);
    copied = true;
  }
  return copied ? y : x.clone();
}

Tensor rot90(const Tensor& x, int64_t k, IntArrayRef dims) {
  detail::check_defined(x, "rot90");
  KILN_CHECK(dims.size() == 2,
             "[rot90] expected total rotation dims == 2, but got dims = ", dims.size());
  KILN_CHECK(x.dim() >= 2, "[rot90] expected total dims >= 2, but got total dims = ", x.dim());
  const int64_t d0 = wrap_dim(dims[0], x.dim(), "rot90"), d1 = wrap_dim(dims[1], x.dim(), "rot90");
  KILN_CHECK(d0 != d1, "[rot90] expected rotation dims to be different, but got dim0 = ", dims[0],
             " and dim1 = ", dims[1]);
  switch (((k % 4) + 4) % 4) {
    case 1:
      return flip(x, {d1}).transpose(d0, d1);
    case 2:
      return flip(x, {d0, d1});
    case 3:
      return flip(x, {d0}).transpose(d0, d1);
    default:
      return x.clone();
  }
}

// ---- repeat / tile ----
Tensor repeat(const Tensor& x, IntArrayRef repeats) {
  detail::check_defined(x, "repeat");
  const int64_t n = static_cast<int64_t>(repeats.size());
  KILN_CHECK(n >= x.dim(), "[repeat] number of dimensions of repeat dims (", n,
             ") can not be smaller than number of dimensions of tensor (", x.dim(), ")");
  for (int64_t r : repeats)
    KILN_CHECK(r >= 0, "[repeat] trying to create tensor with negative dimension ", r, ": repeats ",
               repeats);
  DimVector padded(n - x.dim(), 1);
  for (int64_t s : x.sizes()) padded.push_back(s);
  // [s0, s1, ...] -> [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...] -> [r0*s0, ...].
  DimVector inter, expanded, shape;
  for (int64_t i = 0; i < n; ++i) {
    inter.push_back(1);
    inter.push_back(padded[i]);
    expanded.push_back(repeats[i]);
    expanded.push_back(padded[i]);
    shape.push_back(repeats[i] * padded[i]);
  }
  return detail::reshape_any(x, inter).expand(expanded).contiguous().view(shape);
}

Tensor tile(const Tensor& x, IntArrayRef dims) {
  detail::check_defined(x, "tile");
  DimVector r(dims);
  while (static_cast<int64_t>(r.size()) < x.dim()) r.insert(r.begin(), 1);
  return repeat(x, r);
}

// ---- padding ----
namespace {
enum class PadMode { Constant, Reflect, Replicate, Circular };

Tensor pad_dim(const Tensor& y, int64_t d, int64_t l, int64_t r, PadMode mode, const Scalar& v,
               int64_t orig) {
  const int64_t n = y.size(d);
  std::vector<Tensor> parts;
  auto shape_with = [&](int64_t len) {
    DimVector s(y.sizes());
    s[d] = len;
    return s;
  };
  switch (mode) {
    case PadMode::Constant:
      if (l > 0) parts.push_back(full(shape_with(l), v, y.options()));
      parts.push_back(y);
      if (r > 0) parts.push_back(full(shape_with(r), v, y.options()));
      break;
    case PadMode::Reflect:
      KILN_CHECK(l < orig && r < orig,
                 "[pad] padding size should be less than the corresponding "
                 "input dimension, but got: padding (",
                 l, ", ", r, ") at dimension ", d, " of input ", y.sizes());
      if (l > 0) parts.push_back(y.narrow(d, 1, l).flip({d}));
      parts.push_back(y);
      if (r > 0) parts.push_back(y.narrow(d, n - 1 - r, r).flip({d}));
      break;
    case PadMode::Replicate: {
      KILN_CHECK(n > 0, "[pad] replicate padding needs a non-empty dimension ", d, " of input ",
                 y.sizes());
      if (l > 0) parts.push_back(y.narrow(d, 0, 1).expand(shape_with(l)));
      parts.push_back(y);
      if (r > 0) parts.push_back(y.narrow(d, n - 1, 1).expand(shape_with(r)));
      break;
    }
    case PadMode::Circular:
      KILN_CHECK(l <= n && r <= n,
                 "[pad] padding value causes wrapping around more than once: "
                 "padding (",
                 l, ", ", r, ") at dimension ", d, " of input ", y.sizes());
      if (l > 0) parts.push_back(y.narrow(d, n - l, l));
      parts.push_back(y);
      if (r > 0) parts.push_back(y.narrow(d, 0, r));
      break;
  }
  if (parts.size() == 1) return y;
  // Keep shape-[0] 1-D pieces (cat would skip them; here they are real operands).
  if (y.dim() == 1 && n == 0) {
    std::vector<Tensor> ne;
    for (auto& p : parts)
      if (p.numel() > 0) ne.push_back(p);
    return ne.empty() ? y : cat(ne, 0);
  }
  return cat(parts, d);
}
}  // namespace

Tensor pad(const Tensor& x, IntArrayRef pads, std::string_view mode, const Scalar& value) {
  detail::check_defined(x, "pad");
  KILN_CHECK(pads.size() % 2 == 0, "[pad] padding length must be divisible by 2, got ",
             pads.size());
  const int64_t np = static_cast<int64_t>(pads.size()) / 2;
  KILN_CHECK(np <= x.dim(),
             "[pad] padding length should be less than or equal to two times the "
             "input dimension but got padding length ",
             pads.size(), " and input of dimension ", x.dim());
  PadMode m;
  if (mode == "constant")
    m = PadMode::Constant;
  else if (mode == "reflect")
    m = PadMode::Reflect;
  else if (mode == "replicate")
    m = PadMode::Replicate;
  else if (mode == "circular")
    m = PadMode::Circular;
  else
    KILN_ERROR("[pad] unrecognised padding mode '", mode,
               "' (expected constant, reflect, replicate or circular)");
  if (m != PadMode::Constant) {
    KILN_CHECK(np >= 1 && np <= 3 && (x.dim() == np + 1 || x.dim() == np + 2), "[pad] ", mode,
               " padding of ", np, " dims needs a ", np + 1, "-D or ", np + 2,
               "-D input (batch optional), got a ", x.dim(), "-D input of shape ", x.sizes());
  }
  Tensor y = x;
  for (int64_t i = 0; i < np; ++i) {
    const int64_t d = x.dim() - 1 - i, l = pads[2 * i], r = pads[2 * i + 1];
    const int64_t n = x.size(d);
    KILN_CHECK(n + l + r >= 0, "[pad] the input size ", n, ", plus negative padding ", l, " and ",
               r, " resulted in a negative output size, which is invalid. Check dimension ", d,
               " of your input.");
    // Negative pads crop first (reflections about the far edge are unaffected by the crop).
    const int64_t cl = l < 0 ? -l : 0, cr = r < 0 ? -r : 0;
    if (cl + cr > 0) y = y.narrow(d, cl, std::max<int64_t>(n - cl - cr, 0));
    y = pad_dim(y, d, std::max<int64_t>(l, 0), std::max<int64_t>(r, 0), m, value, n);
  }
  return y.is_same(x) ? x.clone() : y.contiguous();
}

// ---- broadcasting ----
Tensor broadcast_to(const Tensor& x, IntArrayRef size) {
  detail::check_defined(x, "broadcast_to");
  const int64_t n = static_cast<int64_t>(size.size());
  KILN_CHECK(n >= x.dim(), "[broadcast_to] the number of sizes provided (", n,
             ") must be greater or equal to the number of dimensions in the tensor (", x.dim(),
             ")");
  for (int64_t i = 0; i < x.dim(); ++i) {
    const int64_t have = x.size(i), want = size[n - x.dim() + i];
    KILN_CHECK(want == -1 || want == have || have == 1, "[broadcast_to] cannot broadcast shape ",
               x.sizes(), " to ", size, ": size ", have, " at dim ", i, " must be 1 or ", want);
  }
  return x.expand(size);
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  detail::check_defined_list(tensors, "broadcast_tensors");
  DimVector shape;
  for (const Tensor& t : tensors)
    shape = detail::broadcast_shapes("broadcast_tensors", shape, t.sizes());
  std::vector<Tensor> r;
  for (const Tensor& t : tensors) r.push_back(t.expand(shape));
  return r;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  KILN_CHECK(!tensors.empty(), "[meshgrid] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "meshgrid");
  KILN_CHECK(indexing == "ij" || indexing == "xy",
             "[meshgrid] indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].dim() <= 1,
               "[meshgrid] expected 0D or 1D tensor in the tensor list but "
               "got a ",
               tensors[i].dim(), "-D tensor at position ", i);
    KILN_CHECK(tensors[i].dtype() == tensors[0].dtype(),
               "[meshgrid] expected all tensors to have "
               "the same dtype, got ",
               dtype_name(tensors[0].dtype()), " and ", dtype_name(tensors[i].dtype()));
  }
  detail::check_same_device(tensors, "meshgrid");
  std::vector<Tensor> ts = tensors;
  const bool swap = indexing == "xy" && ts.size() >= 2;
  if (swap) std::swap(ts[0], ts[1]);
  DimVector shape;
  for (const Tensor& t : ts) shape.push_back(t.numel());
  std::vector<Tensor> r;
  for (size_t i = 0; i < ts.size(); ++i) {
    DimVector v(ts.size(), 1);
    v[i] = -1;
    Tensor g = detail::reshape_any(ts[i], v).expand(shape);
    r.push_back(g);
  }
  if (swap) std::swap(r[0], r[1]);
  return r;
}

// ---- block_diag / cartesian_prod ----
Tensor block_diag(const std::vector<Tensor>& tensors) {
  detail::check_defined_list(tensors, "block_diag");
  if (tensors.empty()) return empty({1, 0});
  detail::check_same_device(tensors, "block_diag");
  detail::ResultTypeState rs;
  std::vector<Tensor> blocks;
  int64_t cols = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    KILN_CHECK(t.dim() <= 2, "[block_diag] input tensors must have 2 or fewer dimensions. Input ",
               i, " has ", t.dim(), " dimensions");
    rs.add(t);
    blocks.push_back(t.dim() == 2 ? t : detail::reshape_any(t, {1, t.numel()}));
    cols += blocks.back().size(1);
  }
  const DType dt = rs.result();
  const TensorOptions opt = TensorOptions(dt).device(tensors[0].device());
  std::vector<Tensor> rows;
  int64_t c0 = 0;
  for (const Tensor& b : blocks) {
    const int64_t r = b.size(0), c = b.size(1);
    rows.push_back(cat({zeros({r, c0}, opt), b.to(dt), zeros({r, cols - c0 - c}, opt)}, 1));
    c0 += c;
  }
  return cat(rows, 0);
}

Tensor cartesian_prod(const std::vector<Tensor>& tensors) {
  KILN_CHECK(!tensors.empty(), "[cartesian_prod] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "cartesian_prod");
  for (const Tensor& t : tensors)
    KILN_CHECK(t.dim() == 1, "[cartesian_prod] expect a 1D vector, but got shape ", t.sizes());
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> g = meshgrid(tensors, "ij");
  for (auto& t : g) t = t.reshape({-1});
  return stack(g, 1);
}

// ---- Tensor methods ----
std::vector<Tensor> Tensor::split(int64_t s, int64_t dim) const {
  return kiln::split(*this, s, dim);
}
std::vector<Tensor> Tensor::split(IntArrayRef s, int64_t dim) const {
  return kiln::split_with_sizes(*this, s, dim);
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef s, int64_t dim) const {
  return kiln::split_with_sizes(*this, s, dim);
}
std::vector<Tensor> Tensor::tensor_split(int64_t sections, int64_t dim) const {
  return kiln::tensor_split(*this, sections, dim);
}
std::vector<Tensor> Tensor::tensor_split(IntArrayRef indices, int64_t dim) const {
  return kiln::tensor_split(*this, indices, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return kiln::chunk(*this, chunks, dim);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return kiln::unbind(*this, dim); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return kiln::roll(*this, shifts, dims);
}
Tensor Tensor::rot90(int64_t k, IntArrayRef dims) const { return kiln::rot90(*this, k, dims); }
Tensor Tensor::repeat(IntArrayRef repeats) const { return kiln::repeat(*this, repeats); }
Tensor Tensor::tile(IntArrayRef dims) const { return kiln::tile(*this, dims); }
Tensor Tensor::broadcast_to(IntArrayRef size) const { return kiln::broadcast_to(*this, size); }

}  // namespace kiln
