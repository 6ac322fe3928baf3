// Shared helpers of the CPU elementwise kernels.
#include "kernels/cpu/loops.h"

namespace kiln::cpu {

fn::Params make_params(const OpAttrs& a) {
  fn::Params p;
  if (a.has_s0) {
    complex<double> v = a.s0.to_complex();
    p.a = v.real();
    p.a_imag = v.imag();
    p.i = a.s0.is_floating_point() || a.s0.is_complex() ? static_cast<int64_t>(v.real())
                                                        : a.s0.to_int();
  }
  if (a.has_s1) {
    complex<double> v = a.s1.to_complex();
    p.b = v.real();
    p.b_imag = v.imag();
    p.j = a.s1.is_floating_point() || a.s1.is_complex() ? static_cast<int64_t>(v.real())
                                                        : a.s1.to_int();
  }
  return p;
}

void cast_inputs(OpCall& c) {
  for (size_t i = c.promote_from; i < c.in.size(); ++i)
    if (c.in[i].dtype() != c.compute) c.in[i] = c.in[i].to(c.compute);
}

}  // namespace kiln::cpu
