// All op free functions (one header per family under kiln/ops/).
#pragma once

#include "kiln/ops/elementwise.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/indexing.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/scan.h"
#include "kiln/ops/shape.h"
