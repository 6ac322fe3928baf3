// kiln umbrella header: everything a user needs.
#pragma once

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "kiln/parallel.h"
#include "kiln/print.h"
#include "kiln/scalar.h"
#include "kiln/tensor.h"
#include "kiln/type_promotion.h"
