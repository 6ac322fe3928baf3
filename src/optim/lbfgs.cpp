// LBFGS (PyTorch's algorithm: two-loop recursion over a bounded history, fixed step or a
// strong-Wolfe line search with cubic interpolation).
#include "kiln/optim/lbfgs.h"

#include <algorithm>
#include <cmath>

#include "kiln/ops/linalg.h"
#include "kiln/ops/reduce.h"
#include "nn/flat.h"
#include "nn/grad_scope.h"

namespace kiln::optim {

namespace {

double dot_d(const Tensor& a, const Tensor& b) { return kiln::dot(a, b).item<double>(); }
double abs_max(const Tensor& a) { return a.abs().max().item<double>(); }

// Minimizer of the cubic through (x1, f1, g1), (x2, f2, g2), clamped to the bounds (default the
// interval between the points); the midpoint when the cubic has no real minimizer.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  double lo, hi;
  if (bounds) {
    lo = bounds->first;
    hi = bounds->second;
  } else {
    lo = std::min(x1, x2);
    hi = std::max(x1, x2);
  }
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    double min_pos;
    if (x1 <= x2)
      min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2));
    else
      min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2;
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions defaults)
    : Optimizer(std::vector<ParamGroup>{ParamGroup(std::move(params))}, std::move(defaults),
                "LBFGS") {}

Tensor LBFGS::gather_flat_grad() {
  const auto& params = param_groups()[0].params;
  std::vector<Tensor> grads, zeros;
  for (auto& p : params) {
    grads.push_back(p.grad());
    zeros.push_back(p);  // only its numel is used for undefined grads
  }
  return detail::flat_cat(grads, &zeros);
}

void LBFGS::add_grad(double step_size, const Tensor& direction) {
  int64_t off = 0;
  for (auto& p : param_groups()[0].params) {
    int64_t n = p.numel();
    p.add_(direction.narrow(0, off, n).view(p.sizes()), step_size);
    off += n;
  }
}

std::vector<Tensor> LBFGS::clone_params() {
  std::vector<Tensor> out;
  for (auto& p : param_groups()[0].params) out.push_back(p.detach().clone());
  return out;
}

void LBFGS::set_params(const std::vector<Tensor>& values) {
  auto& params = param_groups()[0].params;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
}

double LBFGS::directional_evaluate(const Closure& closure, const std::vector<Tensor>& x, double t,
                                   const Tensor& d, Tensor& flat_grad) {
  add_grad(t, d);
  double loss;
  {
    detail::EnableGradScope enable;
    loss = closure().item<double>();
  }
  flat_grad = gather_flat_grad();
  set_params(x);
  return loss;
}

Tensor LBFGS::step(const Closure& closure) {
  KILN_CHECK(closure, "[LBFGS] step() requires a closure that recomputes the loss");
  KILN_CHECK(param_groups().size() == 1, "[LBFGS] doesn't support per-parameter options");
  const auto& o = param_groups()[0].options;
  const double lr = o.lr(), tol_grad = o.get("tolerance_grad");
  const double tol_change = o.get("tolerance_change");
  const int64_t max_iter = static_cast<int64_t>(o.get("max_iter"));
  const int64_t max_eval = static_cast<int64_t>(o.get("max_eval"));
  const size_t history = static_cast<size_t>(o.get("history_size"));
  const bool wolfe = o.get("strong_wolfe") != 0;

  Tensor orig_loss;
  {
    detail::EnableGradScope enable;
    orig_loss = closure();
  }
  detail::NoGradScope no_grad;
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  func_evals_ += 1;
  Tensor flat_grad = gather_flat_grad();
  if (abs_max(flat_grad) <= tol_grad) return orig_loss;

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++n_iter_;
    if (n_iter_ == 1) {
      d_ = flat_grad.neg();
      old_dirs_.clear();
      old_stps_.clear();
      ro_.clear();
      h_diag_ = Tensor();
    } else {
      Tensor y = flat_grad.sub(t_prev_flat_grad_);
      Tensor s = d_.mul(t_);
      const double ys = dot_d(y, s);
      if (ys > 1e-10) {
        if (old_dirs_.size() == history) {
          old_dirs_.erase(old_dirs_.begin());
          old_stps_.erase(old_stps_.begin());
          ro_.erase(ro_.begin());
        }
        old_dirs_.push_back(y);
        old_stps_.push_back(s);
        ro_.push_back(1.0 / ys);
        h_diag_ = kiln::full({}, ys / dot_d(y, y), TensorOptions(kFloat64));
      }
      const size_t num_old = old_dirs_.size();
      std::vector<double> al(num_old);
      Tensor q = flat_grad.neg();
      for (size_t k = num_old; k-- > 0;) {
        al[k] = dot_d(old_stps_[k], q) * ro_[k];
        q.add_(old_dirs_[k], -al[k]);
      }
      const double h = h_diag_.defined() ? h_diag_.item<double>() : 1.0;
      Tensor r = q.mul(h);
      for (size_t k = 0; k < num_old; ++k) {
        const double be = dot_d(old_dirs_[k], r) * ro_[k];
        r.add_(old_stps_[k], al[k] - be);
      }
      d_ = r;
    }
    t_prev_flat_grad_ = flat_grad.clone();
    prev_loss_ = loss;

    if (n_iter_ == 1)
      t_ = std::min(1.0, 1.0 / flat_grad.abs().sum().item<double>()) * lr;
    else
      t_ = lr;

    const double gtd = dot_d(flat_grad, d_);
    if (gtd > -tol_change) break;

    int64_t ls_evals = 0;
    bool opt_cond = false;
    if (wolfe) {
      std::vector<Tensor> x_init = clone_params();
      // Strong-Wolfe line search (c1 = 1e-4, c2 = 0.9, at most 25 evaluations).
      const double c1 = 1e-4, c2 = 0.9;
      const int64_t max_ls = 25;
      const double d_norm = abs_max(d_);
      const double f0 = loss;
      Tensor g0 = flat_grad.clone();
      double t = t_;
      Tensor g_new;
      double f_new = directional_evaluate(closure, x_init, t, d_, g_new);
      ls_evals = 1;
      double gtd_new = dot_d(g_new, d_);
      double t_prev = 0, f_prev = f0, gtd_prev = gtd;
      Tensor g_prev = g0;
      bool done = false;
      int64_t ls_iter = 0;
      std::vector<double> br, br_f, br_gtd;
      std::vector<Tensor> br_g;
      while (ls_iter < max_ls) {
        const bool wolfe_ok = std::abs(gtd_new) <= -c2 * gtd;
        const bool sufficient = !(f_new > f0 + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev));
        if (!sufficient || (!wolfe_ok && gtd_new >= 0)) {
          br = {t_prev, t};
          br_f = {f_prev, f_new};
          br_g = {g_prev, g_new.clone()};
          br_gtd = {gtd_prev, gtd_new};
          break;
        }
        if (wolfe_ok) {
          br = {t};
          br_f = {f_new};
          br_g = {g_new};
          br_gtd = {gtd_new};
          done = true;
          break;
        }
        const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10;
        const double tmp = t;
        t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                              std::make_pair(min_step, max_step));
        t_prev = tmp;
        f_prev = f_new;
        g_prev = g_new.clone();
        gtd_prev = gtd_new;
        f_new = directional_evaluate(closure, x_init, t, d_, g_new);
        ++ls_evals;
        gtd_new = dot_d(g_new, d_);
        ++ls_iter;
      }
      if (ls_iter == max_ls) {
        br = {0, t};
        br_f = {f0, f_new};
        br_g = {g0, g_new};
        br_gtd = {gtd, gtd_new};
      }
      // Zoom.
      bool insuf_progress = false;
      size_t low = br_f.front() <= br_f.back() ? 0 : 1, high = 1 - low;
      if (br.size() == 1) low = 0;
      while (!done && ls_iter < max_ls) {
        if (std::abs(br[1] - br[0]) * d_norm < tol_change) break;
        t = cubic_interpolate(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1]);
        const double bmax = std::max(br[0], br[1]), bmin = std::min(br[0], br[1]);
        const double eps = 0.1 * (bmax - bmin);
        if (std::min(bmax - t, t - bmin) < eps) {
          if (insuf_progress || t >= bmax || t <= bmin) {
            t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
            insuf_progress = false;
          } else {
            insuf_progress = true;
          }
        } else {
          insuf_progress = false;
        }
        f_new = directional_evaluate(closure, x_init, t, d_, g_new);
        ++ls_evals;
        gtd_new = dot_d(g_new, d_);
        ++ls_iter;
        if (f_new > f0 + c1 * t * gtd || f_new >= br_f[low]) {
          br[high] = t;
          br_f[high] = f_new;
          br_g[high] = g_new.clone();
          br_gtd[high] = gtd_new;
          low = br_f[0] <= br_f[1] ? 0 : 1;
          high = 1 - low;
        } else {
          if (std::abs(gtd_new) <= -c2 * gtd) {
            done = true;
          } else if (gtd_new * (br[high] - br[low]) >= 0) {
            br[high] = br[low];
            br_f[high] = br_f[low];
            br_g[high] = br_g[low];
            br_gtd[high] = br_gtd[low];
          }
          br[low] = t;
          br_f[low] = f_new;
          br_g[low] = g_new.clone();
          br_gtd[low] = gtd_new;
        }
      }
      t_ = br[low];
      loss = br_f[low];
      flat_grad = br_g[low];
      add_grad(t_, d_);
      opt_cond = abs_max(flat_grad) <= tol_grad;
    } else {
      add_grad(t_, d_);
      if (n_iter != max_iter) {
        {
          detail::EnableGradScope enable;
          loss = closure().item<double>();
        }
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tol_grad;
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    func_evals_ += ls_evals;

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(d_.mul(t_)) <= tol_change) break;
    if (std::abs(loss - prev_loss_) < tol_change) break;
  }
  return orig_loss;
}

}  // namespace kiln::optim
