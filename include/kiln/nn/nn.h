// kiln::nn umbrella: Module and containers, layers, init, utils and functional.
#pragma once

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/module.h"
#include "kiln/nn/modules/activation.h"
#include "kiln/nn/modules/container.h"
#include "kiln/nn/modules/conv.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/nn/modules/embedding.h"
#include "kiln/nn/modules/linear.h"
#include "kiln/nn/modules/loss.h"
#include "kiln/nn/modules/normalization.h"
#include "kiln/nn/modules/pooling.h"
#include "kiln/nn/modules/rnn.h"
#include "kiln/nn/modules/transformer.h"
#include "kiln/nn/utils.h"
