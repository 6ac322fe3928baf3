// kiln::optim umbrella: optimizers (SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adagrad, RMSprop,
// LBFGS) and learning-rate schedulers.
#pragma once

#include "kiln/optim/adagrad.h"
#include "kiln/optim/adam.h"
#include "kiln/optim/lbfgs.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/sgd.h"
