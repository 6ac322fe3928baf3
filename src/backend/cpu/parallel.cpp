// Thread-count setting for the CPU backend.
#include "backend/cpu/parallel.h"

#include <atomic>
#include <thread>

#include "kiln/error.h"

namespace kiln {

namespace {
int initial_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
std::atomic<int> g_threads{initial_threads()};
}  // namespace

void set_num_threads(int n) {
  KILN_CHECK(n > 0, "[set_num_threads] expected a positive number of threads, got ", n);
  g_threads.store(n);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

int get_num_threads() { return g_threads.load(std::memory_order_relaxed); }

namespace cpu {
bool in_parallel_region() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}
}  // namespace cpu

}  // namespace kiln
