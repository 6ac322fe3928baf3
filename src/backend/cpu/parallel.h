// parallel_for: splits [begin, end) into per-thread chunks above a grain size (OpenMP).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kiln/parallel.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kiln::cpu {

// Elements below which a loop stays on the calling thread (a parallel region costs microseconds).
constexpr int64_t kGrainSize = 32768;

bool in_parallel_region();

// f(chunk_begin, chunk_end) over [begin, end); chunks are contiguous and at least `grain` long.
// Results must not depend on the number of threads (each index is handled exactly once).
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
#ifdef _OPENMP
  int threads = get_num_threads();
  if (n > grain && threads > 1 && !in_parallel_region()) {
    int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
#pragma omp parallel num_threads(static_cast <int>(chunks))
    {
      int64_t t = omp_get_thread_num();
      int64_t per = (n + chunks - 1) / chunks;
      int64_t b = begin + t * per, e = std::min(end, b + per);
      if (b < e) f(b, e);
    }
    return;
  }
#endif
  (void)grain;
  f(begin, end);
}

}  // namespace kiln::cpu
