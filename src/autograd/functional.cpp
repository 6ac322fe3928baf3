// The functional API (torch.autograd.functional): vjp, jvp (double-vjp trick), jacobian,
// hessian, hvp, built on autograd::grad.
#include "autograd/node_state.h"
#include "kiln/ops.h"

namespace kiln::autograd {

namespace {

// Inputs for differentiation: connected to the caller's graph under create_graph (a view), a
// fresh leaf otherwise (PyTorch's _grad_preprocess).
variable_list prepare(const variable_list& inputs, bool create_graph) {
  variable_list out;
  for (const Tensor& x : inputs) {
    KILN_CHECK(x.defined() && (x.is_floating_point() || x.is_complex()),
               "[autograd.functional] inputs must be defined floating point or complex tensors");
    if (create_graph && x.requires_grad())
      out.push_back(x.view_as(x));
    else
      out.push_back(x.detach().requires_grad_(true));
  }
  return out;
}

Tensor zeros_if_undefined(const Tensor& g, const Tensor& like) {
  return g.defined() ? g : kiln::zeros_like(like);
}

Tensor finish(const Tensor& t, bool create_graph) { return create_graph ? t : t.detach(); }

// 1-D view of t (0-dim tensors too; kiln's view({-1}) rejects 0-dim inputs).
Tensor flat1d(const Tensor& t) { return t.dim() == 0 ? t.unsqueeze(0) : t.reshape({-1}); }

// d(out)/d(xs[j]) as a tensor of shape out.sizes() + xs[j].sizes(), one backward per element.
variable_list jacobian_of(const Tensor& out, const variable_list& xs, bool create_graph) {
  const int64_t n = out.numel();
  variable_list result;
  for (const Tensor& x : xs) {
    result.push_back(kiln::zeros({n, x.numel()}, TensorOptions(x.dtype()).device(x.device())));
  }
  Tensor flat = flat1d(out);
  for (int64_t k = 0; k < n; ++k) {
    variable_list g;
    if (out.requires_grad())
      g = autograd::grad({flat.select(0, k)}, xs, {}, true, create_graph, true);
    else
      g.resize(xs.size());
    for (size_t j = 0; j < xs.size(); ++j)
      if (g[j].defined()) {
        AutoGradMode mode(create_graph);
        result[j].select(0, k).copy_(flat1d(g[j]));
      }
  }
  for (size_t j = 0; j < xs.size(); ++j) {
    DimVector shape(out.sizes());
    for (int64_t s : xs[j].sizes()) shape.push_back(s);
    result[j] = finish(result[j].reshape(shape), create_graph);
  }
  return result;
}

}  // namespace

std::pair<Tensor, variable_list> vjp(const Func& f, const variable_list& inputs, const Tensor& v,
                                     bool create_graph) {
  EnableGradGuard eg;
  variable_list xs = prepare(inputs, create_graph);
  Tensor out = f(xs);
  variable_list g(xs.size());
  if (out.requires_grad()) g = autograd::grad({out}, xs, {v}, create_graph, create_graph, true);
  for (size_t i = 0; i < xs.size(); ++i)
    g[i] = finish(zeros_if_undefined(g[i], xs[i]), create_graph);
  return {finish(out, create_graph), g};
}

std::pair<Tensor, Tensor> jvp(const Func& f, const variable_list& inputs, const variable_list& v,
                              bool create_graph) {
  EnableGradGuard eg;
  variable_list xs = prepare(inputs, create_graph);
  Tensor out = f(xs);
  variable_list tangents = v;
  if (tangents.empty())
    for (const Tensor& x : xs) {
      KILN_CHECK(x.numel() == 1, "[autograd.jvp] v may be omitted only for one-element inputs");
      tangents.push_back(kiln::ones_like(x));
    }
  KILN_CHECK(tangents.size() == xs.size(), "[autograd.jvp] expected ", xs.size(), " tangents, got ",
             tangents.size());
  if (!out.requires_grad()) return {finish(out, create_graph), kiln::zeros_like(out)};
  // Double-vjp: g(u) = J^T u is linear in u; the vjp of g at v is J v.
  Tensor u = kiln::zeros_like(out).requires_grad_(true);
  variable_list g = autograd::grad({out}, xs, {u}, true, true, true);
  variable_list roots, gos;
  for (size_t i = 0; i < xs.size(); ++i)
    if (g[i].defined() && g[i].requires_grad()) {
      roots.push_back(g[i]);
      gos.push_back(tangents[i]);
    }
  if (roots.empty()) return {finish(out, create_graph), kiln::zeros_like(out)};
  variable_list jv = autograd::grad(roots, {u}, gos, create_graph, create_graph, true);
  return {finish(out, create_graph), finish(zeros_if_undefined(jv[0], out), create_graph)};
}

variable_list jacobian(const Func& f, const variable_list& inputs, bool create_graph) {
  EnableGradGuard eg;
  variable_list xs = prepare(inputs, create_graph);
  Tensor out = f(xs);
  return jacobian_of(out, xs, create_graph);
}

Tensor jacobian(const std::function<Tensor(const Tensor&)>& f, const Tensor& input,
                bool create_graph) {
  return jacobian([&f](const variable_list& xs) { return f(xs[0]); }, variable_list{input},
                  create_graph)[0];
}

std::vector<variable_list> hessian(const Func& f, const variable_list& inputs, bool create_graph) {
  EnableGradGuard eg;
  variable_list xs = prepare(inputs, create_graph);
  Tensor out = f(xs);
  KILN_CHECK(out.numel() == 1,
             "[autograd.hessian] the function must return a one-element tensor, "
             "got shape ",
             out.sizes());
  std::vector<variable_list> h;
  variable_list g(xs.size());
  if (out.requires_grad()) g = autograd::grad({out}, xs, {}, true, true, true);
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor gi = zeros_if_undefined(g[i], xs[i]);
    h.push_back(jacobian_of(gi, xs, create_graph));
  }
  return h;
}

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& input,
               bool create_graph) {
  return hessian([&f](const variable_list& xs) { return f(xs[0]); }, variable_list{input},
                 create_graph)[0][0];
}

std::pair<Tensor, variable_list> hvp(const Func& f, const variable_list& inputs,
                                     const variable_list& v, bool create_graph) {
  EnableGradGuard eg;
  variable_list xs = prepare(inputs, create_graph);
  KILN_CHECK(v.size() == xs.size(), "[autograd.hvp] expected ", xs.size(), " vectors, got ",
             v.size());
  Tensor out = f(xs);
  KILN_CHECK(out.numel() == 1, "[autograd.hvp] the function must return a one-element tensor");
  variable_list hv(xs.size());
  if (out.requires_grad()) {
    variable_list g = autograd::grad({out}, xs, {}, true, true, true);
    variable_list roots, gos;
    for (size_t i = 0; i < xs.size(); ++i)
      if (g[i].defined() && g[i].requires_grad()) {
        roots.push_back(g[i]);
        gos.push_back(v[i]);
      }
    if (!roots.empty()) hv = autograd::grad(roots, xs, gos, create_graph, create_graph, true);
  }
  for (size_t i = 0; i < xs.size(); ++i)
    hv[i] = finish(zeros_if_undefined(hv[i], xs[i]), create_graph);
  return {finish(out, create_graph), hv};
}

}  // namespace kiln::autograd
