// CPU reduction kernels, one register function per kernel file; register_reduce_kernels (in
// reduce_kernels.cpp) calls them all.
#pragma once

#include "dispatch/registry.h"

namespace kiln::cpu {

void register_reduce_sum_kernels(detail::KernelRegistry& r);     // reduce_sum_kernels.cpp
void register_reduce_minmax_kernels(detail::KernelRegistry& r);  // reduce_minmax_kernels.cpp
void register_reduce_stats_kernels(detail::KernelRegistry& r);   // reduce_stats_kernels.cpp

// Elements reduced per output: the product of the reduced sizes in c.attrs.ints.
int64_t reduced_count(const OpCall& c);

}  // namespace kiln::cpu
