// Programmatic dependent launch (CUDA, compute capability 9.0): a kernel launched by pdl_launch
// with the attribute on may start its blocks while the previous kernel of the stream ends; it calls
// pdl_wait before it touches that kernel's results. CUDA only; the device calls are no-ops below
// sm_90 and in kernels launched without the attribute.
#pragma once

#include <cstdlib>

#include "backend/gpu/vendor.h"

namespace kiln::gpu::flash {

// Lets the stream's next kernel (when a programmatic launch) start its blocks once every block
// of this grid has called this or finished.
__device__ inline void pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
// Waits until the previous kernel has finished and its memory is visible.
__device__ inline void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// A launch configuration for cudaLaunchKernelEx, programmatic when `on`.
struct PdlConfig {
  cudaLaunchAttribute attr{};
  cudaLaunchConfig_t cfg{};
  PdlConfig(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool on) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = on ? 1 : 0;
  }
  PdlConfig(const PdlConfig&) = delete;  // cfg points at attr
  PdlConfig& operator=(const PdlConfig&) = delete;
};

// Whether the programmatic launches a switch `name` governs are on: they are unless the environment
// sets it to 0 (read once by the caller).
inline bool pdl_env_on(const char* name) {
  const char* e = std::getenv(name);
  return !(e && e[0] == '0' && e[1] == 0);
}

// cudaLaunchKernelEx(&c.cfg, kernel, args...); where the programmatic attribute is refused, that
// error is cleared and the kernel launched plainly. Returns the launch's error.
template <class... P, class... A>
cudaError_t pdl_launch(const PdlConfig& c, void (*kernel)(P...), const A&... args) {
  cudaError_t e = cudaLaunchKernelEx(&c.cfg, kernel, args...);
  if (e != cudaSuccess && c.cfg.numAttrs > 0) {
    (void)cudaGetLastError();
    cudaLaunchConfig_t plain = c.cfg;
    plain.numAttrs = 0;
    e = cudaLaunchKernelEx(&plain, kernel, args...);
  }
  return e;
}

}  // namespace kiln::gpu::flash
