// KILN_OPTIM_OPTION(Class, name): a fluent setter and a getter for one numeric option of a
// typed options class (Note [Optimizer options are named numbers] in kiln/optim/optimizer.h).
#pragma once

#define KILN_OPTIM_OPTION(Class, name) \
  Class& name(double v) {              \
    set(#name, v);                     \
    return *this;                      \
  }                                    \
  double name() const { return get(#name); }

// PyTorch's betas tuple, stored as "beta1" and "beta2".
#define KILN_OPTIM_BETAS(Class)               \
  Class& betas(std::pair<double, double> b) { \
    set("beta1", b.first);                    \
    set("beta2", b.second);                   \
    return *this;                             \
  }                                           \
  std::pair<double, double> betas() const { return {get("beta1"), get("beta2")}; }
