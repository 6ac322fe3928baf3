// detail::NoGradScope / EnableGradScope: autograd's guards, named for nn/optim/data code (the
// optimizer updates and init run under no-grad, closures under enable-grad).
#pragma once

#if __has_include("kiln/autograd.h")
#include "kiln/autograd.h"
namespace kiln::detail {
using NoGradScope = ::kiln::NoGradGuard;
using EnableGradScope = ::kiln::EnableGradGuard;
}  // namespace kiln::detail
#else
namespace kiln::detail {
struct NoGradScope {};
struct EnableGradScope {};
}  // namespace kiln::detail
#endif
