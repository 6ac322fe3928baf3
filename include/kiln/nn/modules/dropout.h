// Dropout modules: Dropout, Dropout1d/2d/3d (whole channels), AlphaDropout. Active only in
// training mode.
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

#define KILN_DROPOUT_MODULE(Name)                              \
  class Name##Impl : public Module {                           \
   public:                                                     \
    explicit Name##Impl(double p = 0.5, bool inplace = false); \
    Tensor forward(const Tensor& x);                           \
    std::string extra_repr() const override;                   \
    double p;                                                  \
    bool inplace;                                              \
  };                                                           \
  KILN_MODULE(Name)

KILN_DROPOUT_MODULE(Dropout);
KILN_DROPOUT_MODULE(Dropout1d);
KILN_DROPOUT_MODULE(Dropout2d);
KILN_DROPOUT_MODULE(Dropout3d);
KILN_DROPOUT_MODULE(AlphaDropout);
#undef KILN_DROPOUT_MODULE

}  // namespace kiln::nn
