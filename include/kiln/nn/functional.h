// kiln::nn::functional: activations, norms, losses, convolution, pooling, attention
// (torch.nn.functional). Split by family into kiln/nn/functional/*.h; this header includes them
// all.
#pragma once

#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/conv.h"
#include "kiln/nn/functional/fused.h"
#include "kiln/nn/functional/loss.h"
#include "kiln/nn/functional/misc.h"
#include "kiln/nn/functional/norm.h"
