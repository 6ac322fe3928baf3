// kiln umbrella header: everything a user needs.
#pragma once

#include "kiln/autograd.h"
#include "kiln/data/data.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/nn.h"
#include "kiln/ops.h"
#include "kiln/ops/gpu_settings.h"
#include "kiln/optim/optim.h"
#include "kiln/parallel.h"
#include "kiln/print.h"
#include "kiln/scalar.h"
#include "kiln/serialize.h"
#include "kiln/tensor.h"
#include "kiln/type_promotion.h"
