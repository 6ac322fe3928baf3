// Registration of the CPU sort-family kernels (sort_kernels.cpp, sort_stats_kernels.cpp), called
// from register_scan_kernels.
#pragma once

#include "dispatch/registry.h"

namespace kiln::cpu {

void register_sort_kernels(detail::KernelRegistry& r);        // sort topk kthvalue median mode
void register_sort_stats_kernels(detail::KernelRegistry& r);  // quantile unique searchsorted ...

}  // namespace kiln::cpu
