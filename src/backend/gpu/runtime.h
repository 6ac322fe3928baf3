// GPU runtime basics behind kiln::cuda: device count, selection and properties, error checks
// that name the op and the failing call, KILN_LAUNCH_BLOCKING, and architecture ids.
// Vendor-neutral: .cu files include backend/gpu/vendor.h themselves for the gpu* names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/error.h"

namespace kiln::gpu {

// Note [Architecture ids]
// Kernel code and host code compare architectures through one integer space, never through
// vendor strings or __CUDA_ARCH__ directly:
// - NVIDIA sm_XY is XY (sm_80 -> 80, sm_90 -> 90), so "Hopper or newer" is id >= 90;
// - AMD gfxNNN is 100000 + NNN read as hexadecimal (gfx90a -> 100000 + 0x90a, gfx1100 ->
//   100000 + 0x1100), so CDNA (gfx9xx) and RDNA (gfx10xx+) are ranges.
// KILN_DEVICE_ARCH_ID (vendor/*.h) is the id of the code being compiled for the device; the
// named predicates below are the only place where the numbers appear.
inline constexpr int kArchAmdBase = 100000;
constexpr bool arch_is_nvidia(int id) { return id > 0 && id < kArchAmdBase; }
constexpr bool arch_is_amd(int id) { return id >= kArchAmdBase; }
constexpr bool arch_is_ampere_or_newer(int id) { return arch_is_nvidia(id) && id >= 80; }
constexpr bool arch_is_hopper_or_newer(int id) { return arch_is_nvidia(id) && id >= 90; }
constexpr bool arch_is_cdna(int id) {
  return arch_is_amd(id) && id - kArchAmdBase >= 0x908 && id - kArchAmdBase < 0xa00;
}
constexpr bool arch_is_rdna(int id) { return arch_is_amd(id) && id - kArchAmdBase >= 0x1000; }
// Native bfloat16 arithmetic (sm_80+, CDNA2+).
constexpr bool arch_has_bf16(int id) {
  return arch_is_ampere_or_newer(id) || (arch_is_cdna(id) && id - kArchAmdBase >= 0x90a);
}
// "sm_90" -> 90, "gfx90a" -> 100000 + 0x90a, "gfx90a:sramecc+:xnack-" -> the same; 0 otherwise.
int parse_arch_id(const std::string& name);

struct DeviceInfo {
  std::string name;
  std::string arch_name;      // "sm_90", "gfx90a"
  std::string gcn_arch_name;  // AMD's full gcnArchName; empty on NVIDIA
  int arch_id = 0;
  int major = 0, minor = 0;
  size_t total_memory = 0;
  int multi_processor_count = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int max_threads_per_multi_processor = 0;
  size_t shared_memory_per_block = 0;
  size_t shared_memory_per_block_optin = 0;
  size_t l2_cache_size = 0;
  bool is_integrated = false;
  int pci_bus_id = 0;
};

// Number of visible GPUs; 0 when there is no driver or no device (never throws).
int device_count();
// The calling thread's current device; throws kiln::Error when there is no GPU.
int current_device();
void set_device(int device);
// -1 -> the current device; otherwise checks 0 <= device < device_count(), naming `op`.
int resolve_device(int device, const char* op);
// Properties, read once per device.
const DeviceInfo& device_info(int device);
// The vendor's runtime version as "13.0" (CUDA) or "5.2" (HIP).
std::string runtime_version_string();
// "CUDA" or "HIP".
const char* vendor_name();

// Lets kernels and copies on `device` reach `peer`'s memory directly (cudaDeviceEnablePeerAccess),
// once per pair; false where the hardware cannot (copies then go through the host).
bool enable_peer_access(int device, int peer);
bool can_access_peer(int device, int peer);

// KILN_LAUNCH_BLOCKING=1: every kernel launch and copy waits for completion, so errors surface at
// the op that caused them (like CUDA_LAUNCH_BLOCKING=1).
bool launch_blocking();

// Throws kiln::Error "[op] CUDA error: <text> (<name>) from <call>". `code` is the vendor's
// error code; the sticky last error is cleared first.
[[noreturn]] void throw_gpu_error(int code, const char* op, const char* call);
// After a kernel launch: raises the launch error, if any; under KILN_LAUNCH_BLOCKING also waits
// for `stream` and raises what the kernel raised.
void check_launch(const char* op, uintptr_t stream);

// Switches the calling thread's current device and restores it at scope exit. -1 keeps it.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  int original_device() const { return prev_; }
  int current() const { return cur_; }

 private:
  int prev_ = -1;
  int cur_ = -1;
};

}  // namespace kiln::gpu

// KILN_GPU_CHECK("op", gpuCall(...)): throws kiln::Error naming the op and the call on failure.
// Needs backend/gpu/vendor.h.
#define KILN_GPU_CHECK(op, call)                                                \
  do {                                                                          \
    gpuError_t kiln_gpu_err_ = (call);                                          \
    if (KILN_UNLIKELY(kiln_gpu_err_ != gpuSuccess))                             \
      ::kiln::gpu::throw_gpu_error(static_cast<int>(kiln_gpu_err_), op, #call); \
  } while (0)
