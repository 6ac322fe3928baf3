// gradcheck / gradgradcheck: analytical vjps (backward) against central finite differences in
// float64 / complex128. Complex follows PyTorch's convention: for a real loss L with
// v = dL/dRe(s) + i dL/dIm(s), backward returns dL/dRe(z) + i dL/dIm(z).
#include <array>
#include <cmath>
#include <complex>
#include <sstream>

#include "autograd/node_state.h"
#include "kiln/ops.h"

namespace kiln::autograd {

namespace {

using C = std::complex<double>;

std::vector<C> to_cvec(const Tensor& t) {
  NoGradGuard ng;
  Tensor c = t.to(Device(kCPU)).to(DType::Complex128).contiguous();
  const double* p = static_cast<const double*>(c.data_ptr());
  std::vector<C> v(static_cast<size_t>(c.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = C(p[2 * i], p[2 * i + 1]);
  return v;
}

bool diff_dtype(const Tensor& t) {
  return t.defined() && (t.is_floating_point() || t.is_complex());
}

// Outputs as flat complex vectors (non-differentiable outputs: empty).
std::vector<std::vector<C>> eval_flat(const MultiFunc& f, const variable_list& xs) {
  NoGradGuard ng;
  variable_list outs = f(xs);
  std::vector<std::vector<C>> r;
  for (const Tensor& o : outs) r.push_back(diff_dtype(o) ? to_cvec(o) : std::vector<C>{});
  return r;
}

bool fail(const GradcheckOptions& o, const std::string& msg) {
  KILN_CHECK(!o.raise_exception, "[gradcheck] ", msg);
  return false;
}

// Element j (real or imaginary part) of a contiguous float64/complex128 CPU tensor.
double& element(Tensor& t, int64_t j, bool imag) {
  double* p = static_cast<double*>(t.data_ptr());
  return t.is_complex() ? p[2 * j + (imag ? 1 : 0)] : p[j];
}

}  // namespace

bool gradcheck(const MultiFunc& f, const variable_list& inputs, const GradcheckOptions& o) {
  // Working copies: contiguous CPU leaves, so elements can be perturbed in place.
  variable_list xs;
  std::vector<size_t> wrt;  // indices of inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (x.defined() && x.requires_grad()) {
      KILN_CHECK(x.dtype() == DType::Float64 || x.dtype() == DType::Complex128,
                 "[gradcheck] input ", i, " requires grad but has dtype ", dtype_name(x.dtype()),
                 "; gradcheck needs double precision (float64 / complex128) inputs");
      KILN_CHECK(x.is_cpu(), "[gradcheck] inputs must be on the cpu");
      NoGradGuard ng;
      Tensor c = x.detach().clone().contiguous();
      c.requires_grad_(true);
      xs.push_back(c);
      wrt.push_back(i);
    } else {
      xs.push_back(x);
    }
  }
  KILN_CHECK(!wrt.empty(), "[gradcheck] no input requires grad");
  // Numerical derivatives: d[w][j][part] = d outputs / d (Re|Im) x_w[j], per output, flattened.
  auto out0 = eval_flat(f, xs);
  const size_t n_out = out0.size();
  struct Column {
    std::vector<std::vector<C>> d;  // per output
  };
  std::vector<std::vector<std::array<Column, 2>>> num(wrt.size());
  for (size_t w = 0; w < wrt.size(); ++w) {
    Tensor& x = xs[wrt[w]];
    const int64_t n = x.numel();
    const int parts = x.is_complex() ? 2 : 1;
    num[w].resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      for (int part = 0; part < parts; ++part) {
        double& e = element(x, j, part == 1);
        const double orig = e;
        e = orig + o.eps;
        auto plus = eval_flat(f, xs);
        e = orig - o.eps;
        auto minus = eval_flat(f, xs);
        e = orig;
        auto& col = num[w][static_cast<size_t>(j)][part].d;
        col.resize(n_out);
        for (size_t k = 0; k < n_out; ++k) {
          col[k].resize(plus[k].size());
          for (size_t q = 0; q < plus[k].size(); ++q)
            col[k][q] = (plus[k][q] - minus[k][q]) / (2 * o.eps);
        }
      }
  }
  // Analytical: one backward per output element (and per real/imag probe of complex outputs).
  variable_list outs;
  {
    EnableGradGuard eg;
    outs = f(xs);
  }
  variable_list wrt_x;
  for (size_t w : wrt) wrt_x.push_back(xs[w]);
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& out = outs[k];
    if (!diff_dtype(out)) continue;
    const int probes = out.is_complex() ? 2 : 1;
    for (int64_t e = 0; e < out.numel(); ++e)
      for (int pr = 0; pr < probes; ++pr) {
        const C v = pr == 0 ? C(1, 0) : C(0, 1);
        variable_list g(wrt_x.size());
        if (out.requires_grad()) {
          Tensor go;
          {
            NoGradGuard ng;
            go = kiln::zeros(out.sizes(), TensorOptions(out.dtype()));
            Tensor flat = go.dim() == 0 ? go.unsqueeze(0) : go.view({-1});
            if (out.is_complex())
              flat.select(0, e).fill_(Scalar(complex<double>(v.real(), v.imag())));
            else
              flat.select(0, e).fill_(1.0);
          }
          g = autograd::grad({out}, wrt_x, {go}, true, false, true);
        }
        for (size_t w = 0; w < wrt_x.size(); ++w) {
          const Tensor& x = wrt_x[w];
          std::vector<C> a;
          if (g[w].defined()) {
            if (g[w].sizes() != x.sizes() || g[w].dtype() != x.dtype()) {
              std::ostringstream os;
              os << "gradient for input " << wrt[w] << " has shape " << g[w].sizes() << " / "
                 << dtype_name(g[w].dtype()) << " but the input has " << x.sizes() << " / "
                 << dtype_name(x.dtype());
              return fail(o, os.str());
            }
            a = to_cvec(g[w]);
          } else {
            a.assign(static_cast<size_t>(x.numel()), C(0, 0));
          }
          for (int64_t j = 0; j < x.numel(); ++j) {
            const auto& cols = num[w][static_cast<size_t>(j)];
            C expect(std::real(std::conj(v) * cols[0].d[k][static_cast<size_t>(e)]), 0);
            if (x.is_complex())
              expect += C(0, std::real(std::conj(v) * cols[1].d[k][static_cast<size_t>(e)]));
            const C got = a[static_cast<size_t>(j)];
            if (!(std::abs(got - expect) <= o.atol + o.rtol * std::abs(expect))) {
              std::ostringstream os;
              os << "Jacobian mismatch for output " << k << " element " << e
                 << (pr ? " (imaginary probe)" : "") << " with respect to input " << wrt[w]
                 << " element " << j << ": numerical " << expect << " analytical " << got;
              return fail(o, os.str());
            }
          }
        }
      }
  }
  return true;
}

bool gradcheck(const Func& f, const variable_list& inputs, const GradcheckOptions& o) {
  return gradcheck(MultiFunc([f](const variable_list& xs) { return variable_list{f(xs)}; }), inputs,
                   o);
}

bool gradgradcheck(const MultiFunc& f, const variable_list& inputs,
                   const variable_list& grad_outputs, const GradcheckOptions& o) {
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) wrt.push_back(i);
  KILN_CHECK(!wrt.empty(), "[gradgradcheck] no input requires grad");
  variable_list gos = grad_outputs;
  if (gos.empty()) {
    // Deterministic, non-trivial grad_outputs (PyTorch draws random ones).
    NoGradGuard ng;
    variable_list outs = f(inputs);
    for (const Tensor& out : outs) {
      if (!diff_dtype(out)) {
        gos.push_back(Tensor());
        continue;
      }
      Tensor idx = kiln::arange(out.numel(), TensorOptions(DType::Float64)).view(out.sizes());
      Tensor go = kiln::cos(idx * 0.7 + 0.3);
      if (out.is_complex())
        go = go.to(out.dtype()) + kiln::sin(idx * 1.3 + 0.1) * Scalar(complex<double>(0, 1));
      gos.push_back(go.to(out.dtype()));
    }
  }
  variable_list all = inputs;
  const size_t n_in = inputs.size();
  for (Tensor g : gos) {
    if (g.defined()) {
      NoGradGuard ng;
      g = g.detach().clone();
      g.requires_grad_(true);
    }
    all.push_back(g);
  }
  MultiFunc gf = [f, n_in, wrt](const variable_list& xs) {
    const bool outer = is_grad_enabled();
    EnableGradGuard eg;  // the first derivative needs a graph even when evaluated under no_grad
    variable_list ins(xs.begin(), xs.begin() + static_cast<int64_t>(n_in));
    variable_list outs = f(ins);
    variable_list roots, go, wrt_x;
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k].defined() && outs[k].requires_grad() && xs[n_in + k].defined()) {
        roots.push_back(outs[k]);
        go.push_back(xs[n_in + k]);
      }
    for (size_t w : wrt) wrt_x.push_back(ins[w]);
    variable_list r(wrt_x.size());
    if (!roots.empty()) r = autograd::grad(roots, wrt_x, go, outer, outer, true);
    for (size_t i = 0; i < r.size(); ++i)
      if (!r[i].defined()) r[i] = kiln::zeros_like(wrt_x[i]);
    return r;
  };
  return gradcheck(gf, all, o);
}

bool gradgradcheck(const Func& f, const variable_list& inputs, const variable_list& grad_outputs,
                   const GradcheckOptions& o) {
  return gradgradcheck(MultiFunc([f](const variable_list& xs) { return variable_list{f(xs)}; }),
                       inputs, grad_outputs, o);
}

}  // namespace kiln::autograd
