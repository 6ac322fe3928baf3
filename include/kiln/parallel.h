// CPU intra-op parallelism: the number of threads kiln's CPU kernels use.
#pragma once

namespace kiln {

// Threads used by CPU kernels (default: the number of cores, or OMP_NUM_THREADS).
void set_num_threads(int n);
int get_num_threads();

}  // namespace kiln
