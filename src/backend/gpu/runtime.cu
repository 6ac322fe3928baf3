// GPU runtime basics: device count and properties (cached), device selection, error checks,
// KILN_LAUNCH_BLOCKING and architecture-id parsing.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/gpu/kernel_error.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/vendor.h"

namespace kiln::gpu {

int parse_arch_id(const std::string& name) {
  auto digits = [](const std::string& s, int base) {
    if (s.empty()) return -1;
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, base);
    return (end && *end == 0) ? static_cast<int>(v) : -1;
  };
  if (name.rfind("sm_", 0) == 0) {
    std::string rest = name.substr(3);
    while (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) rest.pop_back();
    int v = digits(rest, 10);
    return v > 0 ? v : 0;
  }
  if (name.rfind("gfx", 0) == 0) {
    std::string rest = name.substr(
        3, name.find(':') == std::string::npos ? std::string::npos : name.find(':') - 3);
    int v = digits(rest, 16);
    return v > 0 ? kArchAmdBase + v : 0;
  }
  return 0;
}

const char* vendor_name() { return KILN_GPU_VENDOR_NAME; }

std::string runtime_version_string() {
  int v = 0;
  if (gpuRuntimeGetVersion(&v) != gpuSuccess) {
    (void)gpuGetLastError();
    return "";
  }
#if KILN_CUDA
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
#else
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100);
#endif
}

int device_count() {
  static const int count = [] {
    int n = 0;
    if (gpuGetDeviceCount(&n) != gpuSuccess) {
      (void)gpuGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

namespace {
[[noreturn]] void throw_no_gpu(const char* op) {
  int n = 0;
  gpuError_t e = gpuGetDeviceCount(&n);
  (void)gpuGetLastError();
  KILN_ERROR("[", op, "] no GPU is available for cuda devices (", vendor_name(),
             " reports: ", e == gpuSuccess ? "0 devices" : gpuGetErrorString(e), ")");
}
}  // namespace

int current_device() {
  if (KILN_UNLIKELY(device_count() == 0)) throw_no_gpu("cuda.current_device");
  int d = 0;
  KILN_GPU_CHECK("cuda.current_device", gpuGetDevice(&d));
  return d;
}

int resolve_device(int device, const char* op) {
  int n = device_count();
  if (KILN_UNLIKELY(n == 0)) throw_no_gpu(op);
  if (device < 0) return current_device();
  KILN_CHECK(device < n, "[", op, "] invalid device index ", device, ": there ",
             n == 1 ? "is " : "are ", n, n == 1 ? " device" : " devices");
  return device;
}

void set_device(int device) {
  int d = resolve_device(device, "cuda.set_device");
  KILN_GPU_CHECK("cuda.set_device", gpuSetDevice(d));
}

const DeviceInfo& device_info(int device) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<DeviceInfo>> cache;
  int d = resolve_device(device, "cuda.get_device_properties");
  std::lock_guard<std::mutex> lock(mu);
  if (cache.empty()) cache.resize(static_cast<size_t>(device_count()));
  auto& slot = cache[static_cast<size_t>(d)];
  if (!slot) {
    gpuDeviceProp p{};
    KILN_GPU_CHECK("cuda.get_device_properties", gpuGetDeviceProperties(&p, d));
    auto info = std::make_unique<DeviceInfo>();
    info->name = p.name;
    char arch[64];
    gpu_arch_name(p, arch, sizeof(arch));
    info->arch_name = arch;
#if KILN_HIP
    info->gcn_arch_name = p.gcnArchName;
#endif
    info->arch_id = parse_arch_id(info->arch_name);
    info->major = p.major;
    info->minor = p.minor;
    info->total_memory = p.totalGlobalMem;
    info->multi_processor_count = p.multiProcessorCount;
    info->warp_size = p.warpSize;
    info->max_threads_per_block = p.maxThreadsPerBlock;
    info->max_threads_per_multi_processor = p.maxThreadsPerMultiProcessor;
    info->shared_memory_per_block = p.sharedMemPerBlock;
#if KILN_CUDA || HIP_VERSION_MAJOR >= 6
    info->shared_memory_per_block_optin = p.sharedMemPerBlockOptin;
#else
    info->shared_memory_per_block_optin = p.sharedMemPerBlock;
#endif
    info->l2_cache_size = static_cast<size_t>(p.l2CacheSize);
    info->is_integrated = p.integrated != 0;
    info->pci_bus_id = p.pciBusID;
    slot = std::move(info);
  }
  return *slot;
}

bool can_access_peer(int device, int peer) {
  device = resolve_device(device, "cuda.can_device_access_peer");
  peer = resolve_device(peer, "cuda.can_device_access_peer");
  if (device == peer) return false;
  int ok = 0;
  KILN_GPU_CHECK("cuda.can_device_access_peer", gpuDeviceCanAccessPeer(&ok, device, peer));
  return ok != 0;
}

bool enable_peer_access(int device, int peer) {
  constexpr int kMax = 64;
  // 0 unknown, 1 enabled, 2 impossible; one entry per ordered pair.
  static std::atomic<unsigned char> state[kMax][kMax] = {};
  if (device == peer) return true;
  KILN_ASSERT(device >= 0 && device < kMax && peer >= 0 && peer < kMax, "peer pair");
  unsigned char s = state[device][peer].load(std::memory_order_acquire);
  if (s != 0) return s == 1;
  bool ok = can_access_peer(device, peer);
  if (ok) {
    DeviceGuard g(device);
    gpuError_t e = gpuDeviceEnablePeerAccess(peer, 0);
    if (e == gpuErrorPeerAccessAlreadyEnabled)
      (void)gpuGetLastError();
    else
      KILN_GPU_CHECK("copy_", e);
  }
  state[device][peer].store(ok ? 1 : 2, std::memory_order_release);
  return ok;
}

bool launch_blocking() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_LAUNCH_BLOCKING");
    return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void throw_gpu_error(int code, const char* op, const char* call) {
  auto e = static_cast<gpuError_t>(code);
  (void)gpuGetLastError();  // clear the non-sticky error so later calls start clean
  KILN_ERROR("[", op, "] ", vendor_name(), " error: ", gpuGetErrorString(e), " (",
             gpuGetErrorName(e), ") from ", call,
             launch_blocking() ? ""
                               : ". Kernel errors may be reported at a later call; set "
                                 "KILN_LAUNCH_BLOCKING=1 to see the op that caused it.");
}

void check_launch(const char* op, uintptr_t stream) {
  gpuError_t e = gpuGetLastError();
  if (KILN_UNLIKELY(e != gpuSuccess)) throw_gpu_error(static_cast<int>(e), op, "kernel launch");
  if (KILN_UNLIKELY(launch_blocking())) {
    KILN_GPU_CHECK(op, gpuStreamSynchronize(reinterpret_cast<gpuStream_t>(stream)));
    check_kernel_errors();  // Note [Kernel error channel]
  }
}

DeviceGuard::DeviceGuard(int device) {
  if (device < 0) return;
  KILN_GPU_CHECK("cuda.device_guard", gpuGetDevice(&prev_));
  cur_ = device;
  if (prev_ != device) KILN_GPU_CHECK("cuda.device_guard", gpuSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  if (cur_ >= 0 && prev_ >= 0 && prev_ != cur_) (void)gpuSetDevice(prev_);
}

}  // namespace kiln::gpu
