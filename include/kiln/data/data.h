// kiln::data umbrella: datasets, collation, DataLoader.
#pragma once

#include "kiln/data/dataloader.h"
#include "kiln/data/dataset.h"
