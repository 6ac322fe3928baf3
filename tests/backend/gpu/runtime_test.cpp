// Tests of the GPU runtime through kiln::cuda and tensors: devices, copies for every dtype pair,
// pinned non_blocking copies, streams, events, graphs, allocator stats and out-of-memory errors.
// They skip with a message where no GPU is present; the no-GPU build checks its stubs instead.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/caching_allocator.h"
#include "backend/gpu/gpu_allocator.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "ops/op.h"
#include "ops/run.h"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Tensor;
namespace cuda = kiln::cuda;

bool gpu_build() { return kiln::version::cuda[0] != 0 || kiln::version::hip[0] != 0; }

#define REQUIRE_GPU()                                                               \
  do {                                                                              \
    if (!cuda::is_available())                                                      \
      GTEST_SKIP() << (gpu_build() ? "no GPU: this GPU build found no device"       \
                                   : "no GPU: kiln was built without GPU support"); \
  } while (0)

const Device kGpu(kiln::kCUDA, 0);

const std::vector<DType> kAllDTypes = {
    DType::Bool,      DType::UInt8,      DType::Int8,          DType::Int16,      DType::Int32,
    DType::Int64,     DType::Float16,    DType::BFloat16,      DType::Float32,    DType::Float64,
    DType::Complex64, DType::Complex128, DType::Float8_e4m3fn, DType::Float8_e5m2};

// A CPU tensor of `dtype` filled with random bytes (0/1 for bool).
Tensor random_bytes(std::vector<int64_t> shape, DType dtype, uint32_t seed) {
  Tensor t = kiln::empty(shape, dtype);
  std::mt19937 gen(seed);
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.nbytes(); ++i)
    p[i] = dtype == DType::Bool ? static_cast<unsigned char>(gen() & 1)
                                : static_cast<unsigned char>(gen());
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

// copy_ with non_blocking set (the kernel sees it as attrs.flag).
void copy_non_blocking(Tensor& dst, const Tensor& src) { dst.copy_(src, /*non_blocking=*/true); }

// Keeps the current stream busy for a while (many fills of a large tensor).
void busy_work(Tensor& big, int rounds) {
  for (int i = 0; i < rounds; ++i) big.fill_(static_cast<double>(i));
}

// ---- builds without a GPU --------------------------------------------------------------------

TEST(GpuRuntime, StubsWithoutGpuSupport) {
  if (gpu_build()) GTEST_SKIP() << "GPU build: the stubs are not linked";
  EXPECT_FALSE(cuda::is_available());
  EXPECT_EQ(cuda::device_count(), 0);
  try {
    cuda::set_device(0);
    FAIL() << "set_device should throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[cuda.set_device] kiln was built without GPU support"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(cuda::Stream(), kiln::Error);
  EXPECT_THROW(kiln::ones({2}).to(kGpu), kiln::Error);
  EXPECT_FALSE(kiln::detail::is_pinned(kiln::ones({2})));
}

// ---- devices ---------------------------------------------------------------------------------

TEST(GpuRuntime, DevicesAndProperties) {
  REQUIRE_GPU();
  int n = cuda::device_count();
  ASSERT_GT(n, 0);
  EXPECT_TRUE(gpu_build());
  cuda::DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.total_memory, size_t{1} << 30);
  EXPECT_GT(p.multi_processor_count, 0);
  // NVIDIA parts (compute capability major >= 3, no gcnArchName) have 32-wide warps; AMD 32/64.
  if (p.gcn_arch_name.empty()) {
    EXPECT_EQ(p.warp_size, 32);
    EXPECT_EQ(p.arch_name, "sm_" + std::to_string(p.major) + std::to_string(p.minor));
    auto [maj, min] = cuda::get_device_capability(0);
    EXPECT_EQ(maj, p.major);
    EXPECT_EQ(min, p.minor);
  } else {
    EXPECT_TRUE(p.warp_size == 32 || p.warp_size == 64);
  }
  EXPECT_EQ(cuda::get_device_name(0), p.name);
  auto [free, total] = cuda::mem_get_info(0);
  EXPECT_EQ(total, p.total_memory);
  EXPECT_LE(free, total);
  std::cout << "[device] " << p.name << " " << p.arch_name << ", " << p.multi_processor_count
            << " SMs, " << (p.total_memory >> 20) << " MiB, toolkit " << kiln::version::cuda
            << kiln::version::hip << "\n";
}

TEST(GpuRuntime, DeviceSelectionErrorsAndGuard) {
  REQUIRE_GPU();
  int n = cuda::device_count();
  int before = cuda::current_device();
  try {
    cuda::set_device(n);
    FAIL() << "set_device(device_count()) should throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[cuda.set_device] invalid device index"),
              std::string::npos)
        << e.what();
  }
  {
    cuda::DeviceGuard g(n - 1);
    EXPECT_EQ(cuda::current_device(), n - 1);
    EXPECT_EQ(g.original_device(), before);
  }
  EXPECT_EQ(cuda::current_device(), before);
}

TEST(GpuRuntime, TensorsMovedToCudaGetAnIndexedDevice) {
  REQUIRE_GPU();
  Tensor t = kiln::ones({3}).cuda();
  EXPECT_EQ(t.device(), Device(kiln::kCUDA, cuda::current_device()));
}

TEST(GpuRuntime, CudaWithoutAnIndexMeansTheCurrentDevice) {
  REQUIRE_GPU();
  const int cur = cuda::current_device();
  for (Tensor t : {kiln::empty({3}, kiln::TensorOptions().device(Device(kiln::kCUDA))),
                   kiln::zeros({2, 2}, kiln::TensorOptions().device(Device(kiln::kCUDA))),
                   kiln::ones({4}).to(Device(kiln::kCUDA)),
                   kiln::rand({5}, kiln::TensorOptions().device(Device(kiln::kCUDA)))})
    EXPECT_EQ(t.device(), Device(kiln::kCUDA, cur)) << t.device().str();
}

TEST(GpuRuntime, TensorsOnAnotherDeviceLiveThereAndCopyPeerToPeer) {
  REQUIRE_GPU();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs (this machine has one)";
  const Device d1(kiln::kCUDA, 1);
  cuda::DeviceGuard g(0);
  Tensor src = kiln::arange(0, 1 << 20, 1, kiln::TensorOptions(DType::Float32));
  Tensor a = src.to(d1);  // allocated on cuda:1 while cuda:0 is current
  EXPECT_EQ(a.device(), d1);
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_GT(cuda::memory_allocated(1), 0u);
  Tensor b = a.to(Device(kiln::kCUDA, 0));  // peer copy (direct where access is possible)
  Tensor c = a.t().contiguous().to(DType::Float64).to(kGpu);
  EXPECT_TRUE(same_bytes(b.cpu(), src));
  EXPECT_TRUE(same_bytes(c.cpu(), src.to(DType::Float64)));
  (void)cuda::can_device_access_peer(0, 1);
}

TEST(GpuRuntime, ComplexToBoolConsidersTheImaginaryPart) {
  // z != 0 as PyTorch: 1j is true although its real part is 0 (CPU always, GPU when present).
  std::vector<Device> devs = {Device(kiln::kCPU)};
  if (cuda::is_available()) devs.push_back(kGpu);
  const double re[5] = {0, 0, 2, 0, -1}, im[5] = {0, 1, 0, -0.5, 3};
  const bool want[5] = {false, true, true, true, true};
  Tensor z128 = kiln::empty({5}, kiln::TensorOptions(DType::Complex128));
  auto* q = static_cast<double*>(z128.data_ptr());
  for (int i = 0; i < 5; ++i) q[2 * i] = re[i], q[2 * i + 1] = im[i];
  for (DType ct : {DType::Complex64, DType::Complex128}) {
    Tensor z = z128.to(ct);
    for (const Device& d : devs) {
      Tensor b = z.to(d).to(DType::Bool).cpu();
      for (int i = 0; i < 5; ++i)
        EXPECT_EQ(b.data_ptr<bool>()[i], want[i]) << d.str() << " element " << i;
    }
  }
}

TEST(GpuRuntime, OpsOnTwoDevicesNameBoth) {
  REQUIRE_GPU();
  Tensor a = kiln::ones({4}), b = kiln::ones({4}).to(kGpu);
  try {
    (void)kiln::add(a, b);
    FAIL() << "add of cpu and cuda tensors should throw";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda"), std::string::npos) << m;
  }
}

TEST(GpuRuntime, ZeroDimCpuTensorsAreScalarsForGpuOps) {
  REQUIRE_GPU();
  Tensor a = kiln::arange(0, 8, 1, kiln::TensorOptions(DType::Float32)).to(kGpu);
  Tensor two = kiln::full({}, 2.5, kiln::TensorOptions(DType::Float32));  // 0-dim, cpu
  Tensor r = kiln::add(a, two);
  EXPECT_EQ(r.device(), kGpu);
  Tensor h = r.cpu();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(h.data_ptr<float>()[i], static_cast<float>(i) + 2.5f);
  // A 1-element cpu tensor with a dimension is not a scalar: an error naming both devices.
  Tensor one = kiln::full({1}, 2.5, kiln::TensorOptions(DType::Float32));
  try {
    (void)kiln::add(a, one);
    FAIL() << "add of a cuda tensor and a 1-d cpu tensor should throw";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
    EXPECT_NE(m.find("cpu"), std::string::npos) << m;
  }
}

// ---- copies ----------------------------------------------------------------------------------

TEST(GpuCopy, RoundTripEveryDtypeBitExact) {
  REQUIRE_GPU();
  uint32_t seed = 1;
  for (DType d : kAllDTypes) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 1031}, {0}, {}, {1 << 20}}) {
      Tensor cpu = random_bytes(shape, d, seed++);
      Tensor g = cpu.to(kGpu);
      ASSERT_TRUE(g.is_cuda());
      Tensor back = g.cpu();
      EXPECT_TRUE(same_bytes(cpu, back)) << kiln::dtype_name(d) << " " << cpu.sizes();
      // device -> device, then back
      Tensor g2 = g.clone();
      if (g.numel() > 0) {
        EXPECT_NE(g2.data_ptr(), g.data_ptr());
      }
      EXPECT_TRUE(same_bytes(cpu, g2.cpu())) << kiln::dtype_name(d);
    }
  }
}

TEST(GpuCopy, NonContiguousAndBroadcast) {
  REQUIRE_GPU();
  uint32_t seed = 100;
  for (DType d : kAllDTypes) {
    Tensor cpu = random_bytes({64, 48}, d, seed++);
    // non-contiguous source on the host
    Tensor t = cpu.transpose(0, 1);
    EXPECT_TRUE(same_bytes(t.to(kGpu).cpu(), t)) << kiln::dtype_name(d);
    // strided copies on the device: transpose, and a strided window
    Tensor g = cpu.to(kGpu);
    EXPECT_TRUE(same_bytes(g.transpose(0, 1).contiguous().cpu(), t)) << kiln::dtype_name(d);
    Tensor win_g = g.as_strided({10, 12}, {96, 3}, 5).contiguous();
    Tensor win_c = cpu.as_strided({10, 12}, {96, 3}, 5).contiguous();
    EXPECT_TRUE(same_bytes(win_g.cpu(), win_c)) << kiln::dtype_name(d);
    // device -> non-contiguous host destination
    Tensor host_dst = kiln::empty({48, 64}, d).transpose(0, 1);
    host_dst.copy_(g);
    EXPECT_TRUE(same_bytes(host_dst, cpu)) << kiln::dtype_name(d);
    // non-contiguous device destination from the host
    Tensor dev_dst = kiln::empty({48, 64}, kiln::TensorOptions(d).device(kGpu)).transpose(0, 1);
    dev_dst.copy_(cpu);
    EXPECT_TRUE(same_bytes(dev_dst.cpu(), cpu)) << kiln::dtype_name(d);
    // broadcasting a [48] row into [5, 64, 48], from the host and on the device
    Tensor row = random_bytes({48}, d, seed++);
    Tensor big = kiln::empty({5, 64, 48}, kiln::TensorOptions(d).device(kGpu));
    big.copy_(row);
    Tensor expect = kiln::empty({5, 64, 48}, d);
    for (int64_t i = 0; i < 5 * 64; ++i)
      std::memcpy(static_cast<char*>(expect.data_ptr()) + i * row.nbytes(), row.data_ptr(),
                  static_cast<size_t>(row.nbytes()));
    EXPECT_TRUE(same_bytes(big.cpu(), expect)) << kiln::dtype_name(d);
    big.zero_();
    big.copy_(row.to(kGpu));
    EXPECT_TRUE(same_bytes(big.cpu(), expect)) << kiln::dtype_name(d);
  }
}

bool is_unsigned_or_bool(DType d) { return d == DType::UInt8 || d == DType::Bool; }

// Small integers are exact in every dtype (float8_e5m2 holds 0..8 exactly), so a cast of them
// has one right answer, computed here with integer arithmetic.
TEST(GpuCopy, CastsBetweenEveryDtypePair) {
  REQUIRE_GPU();
  const int64_t n = 32;
  int checked = 0;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      bool negatives = !is_unsigned_or_bool(from) && !is_unsigned_or_bool(to);
      bool complex_src = kiln::is_complex(from);
      // kiln casts complex -> bool from the real part (see the report); keep imag 0 there.
      double imag = complex_src && to != DType::Bool ? 2.0 : 0.0;
      std::vector<double> v(n);
      for (int64_t i = 0; i < n; ++i)
        v[i] = from == DType::Bool ? static_cast<double>(i % 2)
                                   : static_cast<double>(i % 8) - (negatives ? 3.0 : 0.0);
      Tensor src128 = kiln::empty({n}, DType::Complex128);
      auto* p = static_cast<kiln::complex<double>*>(src128.data_ptr());
      for (int64_t i = 0; i < n; ++i) p[i] = kiln::complex<double>(v[i], imag);
      Tensor src = src128.to(from);  // exact on the host: small integers
      Tensor g = src.to(kGpu);
      std::vector<Tensor> results = {
          g.to(to).cpu(),  // contiguous cast on the device
          g.view({4, 8}).transpose(0, 1).to(to).transpose(0, 1).reshape({n}).cpu(),  // strided
          src.to(kGpu, to).cpu(),        // host -> device with a cast
          g.to(Device(kiln::kCPU), to),  // device -> host with a cast
      };
      for (size_t r = 0; r < results.size(); ++r) {
        ASSERT_EQ(results[r].dtype(), to);
        std::vector<kiln::Scalar> got = results[r].tolist_flat();
        for (int64_t i = 0; i < n; ++i) {
          double re = to == DType::Bool ? (v[i] != 0.0 || imag != 0.0 ? 1.0 : 0.0) : v[i];
          double im = kiln::is_complex(to) ? imag : 0.0;
          auto c = got[i].to<kiln::complex<double>>();
          ASSERT_EQ(c.real(), re) << kiln::dtype_name(from) << " -> " << kiln::dtype_name(to)
                                  << " path " << r << " element " << i;
          ASSERT_EQ(c.imag(), im) << kiln::dtype_name(from) << " -> " << kiln::dtype_name(to);
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 14 * 14 * 4);
}

TEST(GpuCopy, FillArangeLinspace) {
  REQUIRE_GPU();
  for (DType d : kAllDTypes) {
    Tensor t = kiln::full({257}, 3, kiln::TensorOptions(d).device(kGpu));
    for (const kiln::Scalar& s : t.cpu().tolist_flat())
      ASSERT_EQ(s.to<kiln::complex<double>>().real(), d == DType::Bool ? 1.0 : 3.0)
          << kiln::dtype_name(d);
  }
  // fill_ of a strided view touches only the view
  Tensor m = kiln::zeros({6, 8}, kiln::TensorOptions(DType::Int32).device(kGpu));
  m.transpose(0, 1).narrow(0, 2, 3).fill_(5);
  Tensor mc = m.cpu();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 8; ++j)
      ASSERT_EQ(mc.data_ptr<int32_t>()[i * 8 + j], (j >= 2 && j < 5) ? 5 : 0);
  Tensor a = kiln::arange(-7, 300001, 3, kiln::TensorOptions(DType::Int64).device(kGpu)).cpu();
  ASSERT_EQ(a.numel(), (300001 + 7 + 2) / 3);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.data_ptr<int64_t>()[i], -7 + 3 * i);
  Tensor f = kiln::arange(0.0, 1000.0, 0.5, kiln::TensorOptions(DType::Float32).device(kGpu)).cpu();
  for (int64_t i = 0; i < f.numel(); ++i) ASSERT_EQ(f.data_ptr<float>()[i], 0.5f * i);
  const int64_t steps = 1001;
  Tensor l =
      kiln::linspace(-1.0, 3.0, steps, kiln::TensorOptions(DType::Float64).device(kGpu)).cpu();
  for (int64_t i = 0; i < steps; ++i)
    ASSERT_NEAR(l.data_ptr<double>()[i], -1.0 + 4.0 * static_cast<double>(i) / (steps - 1), 1e-14);
  EXPECT_EQ(l.data_ptr<double>()[0], -1.0);
  EXPECT_EQ(l.data_ptr<double>()[steps - 1], 3.0);
}

// ---- pinned memory and non_blocking copies ---------------------------------------------------

TEST(GpuPinned, PinMemoryAndNonBlockingRoundTrip) {
  REQUIRE_GPU();
  const int64_t n = 1 << 22;
  Tensor src = random_bytes({n}, DType::Float32, 7);
  EXPECT_FALSE(kiln::detail::is_pinned(src));
  Tensor pinned = kiln::detail::pin_memory(src);
  EXPECT_TRUE(kiln::detail::is_pinned(pinned));
  EXPECT_TRUE(same_bytes(pinned, src));
  EXPECT_TRUE(kiln::detail::pin_memory(pinned).is_same(pinned));
  EXPECT_GE(cuda::host_memory_allocated(), static_cast<size_t>(n * 4));

  Tensor busy = kiln::empty({1 << 26}, kiln::TensorOptions(DType::Float32).device(kGpu));
  Tensor g = kiln::empty({n}, kiln::TensorOptions(DType::Float32).device(kGpu));
  Tensor out = kiln::detail::pin_memory(kiln::zeros({n}));
  busy_work(busy, 200);  // ~50 GB of writes: the copies below queue behind it
  copy_non_blocking(g, pinned);
  copy_non_blocking(out, g);
  // Both copies returned without waiting: the stream still has work.
  EXPECT_FALSE(cuda::current_stream().query());
  cuda::current_stream().synchronize();
  EXPECT_TRUE(same_bytes(out, src));
}

TEST(GpuPinned, FreedPinnedBlockIsNotReusedBeforeItsCopyRan) {
  REQUIRE_GPU();
  const int64_t n = 1 << 22;
  Tensor src = random_bytes({n}, DType::Float32, 8);
  Tensor busy = kiln::empty({1 << 26}, kiln::TensorOptions(DType::Float32).device(kGpu));
  Tensor g = kiln::empty({n}, kiln::TensorOptions(DType::Float32).device(kGpu));
  busy_work(busy, 200);
  {
    Tensor a = kiln::detail::pin_memory(src);
    copy_non_blocking(g, a);
  }  // a's block goes back to the cache while the copy still waits on the stream
  // A same-size pinned tensor, overwritten at once: if it got a's block, g would see zeros.
  Tensor b = kiln::detail::pin_memory(kiln::zeros({n}));
  cuda::current_stream().synchronize();
  EXPECT_TRUE(same_bytes(g.cpu(), src));
}

TEST(GpuPinned, PinningAGpuTensorFails) {
  REQUIRE_GPU();
  EXPECT_THROW(kiln::detail::pin_memory(kiln::ones({2}).to(kGpu)), kiln::Error);
}

// ---- streams and events ----------------------------------------------------------------------

TEST(GpuStreams, CurrentStreamGuardAndPriorities) {
  REQUIRE_GPU();
  cuda::Stream def = cuda::default_stream();
  EXPECT_EQ(cuda::current_stream(), def);
  EXPECT_EQ(def.handle(), 0u);
  cuda::Stream s;
  EXPECT_NE(s, def);
  EXPECT_EQ(s.device_index(), cuda::current_device());
  {
    cuda::StreamGuard g(s);
    EXPECT_EQ(cuda::current_stream(), s);
  }
  EXPECT_EQ(cuda::current_stream(), def);
  cuda::Stream hi(-1, -1), lo(-1, 0);
  EXPECT_LE(hi.priority(), lo.priority());
  EXPECT_EQ(lo.priority(), 0);
  EXPECT_TRUE(s.query());
}

TEST(GpuStreams, EventTimingIsBoundedByMemoryBandwidth) {
  REQUIRE_GPU();
  cuda::Stream s;
  cuda::StreamGuard guard(s);
  Tensor big = kiln::empty({1 << 26}, kiln::TensorOptions(DType::Float32).device(kGpu));
  cuda::Event start(true), end(true);
  start.record();
  const int rounds = 50;
  busy_work(big, rounds);
  end.record();
  float ms = start.elapsed_time(end);
  EXPECT_TRUE(end.query());
  EXPECT_TRUE(s.query());
  // Writing rounds * 256 MiB cannot take less than it takes at 10 TB/s (above any GPU's HBM).
  double bytes = rounds * 256.0 * (1 << 20);
  EXPECT_GT(ms, bytes / 10e12 * 1e3);
  EXPECT_LT(ms, 10000.0);
  std::cout << "[events] fill bandwidth " << bytes / (ms * 1e-3) / 1e9 << " GB/s\n";
  cuda::Event untimed;
  untimed.record();
  EXPECT_THROW(untimed.elapsed_time(end), kiln::Error);
}

// The child half of InterprocessEventHandles: runs only in the process that test spawns.
TEST(GpuStreams, InterprocessEventChild) {
  const char* hex = std::getenv("KILN_TEST_IPC_EVENT");
  if (hex == nullptr) GTEST_SKIP() << "runs as the child of InterprocessEventHandles";
  std::string h;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
    h.push_back(static_cast<char>(std::stoi(std::string(hex + i, 2), nullptr, 16)));
  cuda::Event e = cuda::Event::from_ipc_handle(0, h);
  e.synchronize();  // waits for the parent's work
  EXPECT_TRUE(e.query());
}

TEST(GpuStreams, InterprocessEventHandles) {
  REQUIRE_GPU();
  if (std::getenv("KILN_TEST_IPC_EVENT") != nullptr) GTEST_SKIP() << "child process";
  EXPECT_THROW(cuda::Event(true, false, true), kiln::Error);  // timing + interprocess
  EXPECT_THROW(cuda::Event().ipc_handle(), kiln::Error);      // not interprocess
  Tensor big = kiln::empty({int64_t{1} << 26}, kiln::TensorOptions(DType::Float32).device(kGpu));
  cuda::Event e(false, false, true);
  busy_work(big, 20);
  e.record();
  std::string h = e.ipc_handle();
  ASSERT_EQ(h.size(), 64u);
  std::string hex;
  char buf[3];
  for (char c : h) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<unsigned char>(c));
    hex += buf;
  }
  // Another process opens the handle and waits on the event.
  std::string env = "KILN_TEST_IPC_EVENT=" + hex;
  std::string filter = "--gtest_filter=GpuStreams.InterprocessEventChild";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  char* argv[] = {exe, filter.data(), nullptr};
  std::vector<char*> envp = {env.data()};
  for (char** v = environ; *v; ++v)
    if (std::strncmp(*v, "GTEST_", 6) != 0) envp.push_back(*v);  // no sharding in the child
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  e.synchronize();
}

TEST(GpuStreams, WaitStreamAndWaitEventOrderWork) {
  REQUIRE_GPU();
  cuda::Stream s1, s2;
  Tensor x = kiln::zeros({1 << 24}, kiln::TensorOptions(DType::Float32).device(kGpu));
  cuda::current_stream().synchronize();
  {
    cuda::StreamGuard g(s1);
    for (int k = 1; k <= 40; ++k) x.fill_(k);
  }
  s2.wait_stream(s1);
  Tensor got;
  {
    cuda::StreamGuard g(s2);
    got = x.cpu();  // the copy runs on s2, after s1's fills
  }
  std::vector<kiln::Scalar> v = got.narrow(0, 0, 8).tolist_flat();
  for (auto& e : v) EXPECT_EQ(e.to<double>(), 40.0);
  EXPECT_EQ(got.data_ptr<float>()[got.numel() - 1], 40.0f);
  {
    cuda::StreamGuard g(s1);
    for (int k = 1; k <= 30; ++k) x.fill_(-k);
  }
  cuda::Event e = s1.record_event();
  s2.wait_event(e);
  {
    cuda::StreamGuard g(s2);
    got = x.cpu();
  }
  EXPECT_EQ(got.data_ptr<float>()[0], -30.0f);
  EXPECT_EQ(got.data_ptr<float>()[got.numel() - 1], -30.0f);
}

// ---- graphs ----------------------------------------------------------------------------------

TEST(GpuGraphs, CaptureAndReplayFillAndCopyKernels) {
  REQUIRE_GPU();
  const int64_t n = 1 << 20;
  auto f32 = kiln::TensorOptions(DType::Float32).device(kGpu);
  Tensor x = kiln::zeros({n}, f32);
  Tensor y = kiln::empty({n}, kiln::TensorOptions(DType::Float64).device(kGpu));
  Tensor z = kiln::empty({1000}, kiln::TensorOptions(DType::Int32).device(kGpu));
  cuda::CUDAGraph g;
  cuda::graph(g, [&] {
    Tensor t = x.to(DType::Float64);  // allocated in the graph's private pool
    y.copy_(t);
    z.fill_(7);
  });
  EXPECT_GE(g.num_nodes(), 3u);
  EXPECT_NE(g.pool(), (cuda::MempoolId{0, 0}));
  for (int round = 0; round < 3; ++round) {
    Tensor in = random_bytes({n}, DType::Int16, 20 + round).to(DType::Float32);
    x.copy_(in);
    z.fill_(0);
    g.replay();
    cuda::synchronize();
    EXPECT_TRUE(same_bytes(y.cpu(), in.to(DType::Float64))) << "round " << round;
    for (auto& e : z.cpu().tolist_flat()) ASSERT_EQ(e.to<int64_t>(), 7);
  }
  // A second graph sharing the first one's pool.
  cuda::CUDAGraph g2;
  cuda::graph(
      g2, [&] { z.fill_(-2); }, g.pool());
  g2.replay();
  EXPECT_EQ(z.cpu().data_ptr<int32_t>()[999], -2);
  g.replay();
  EXPECT_EQ(z.cpu().data_ptr<int32_t>()[999], 7);
  size_t reserved = cuda::memory_reserved();
  g.reset();
  g2.reset();
  cuda::empty_cache();
  EXPECT_LT(cuda::memory_reserved(), reserved);  // the private pool's segment is gone
}

TEST(GpuGraphs, CapturingTheDefaultStreamIsAnError) {
  REQUIRE_GPU();
  cuda::CUDAGraph g;
  try {
    g.capture_begin();
    FAIL() << "capture on the default stream should throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("default stream"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.replay(), kiln::Error);
}

// ---- the caching allocator through the public API --------------------------------------------

TEST(GpuMemory, StatsFollowAllocations) {
  REQUIRE_GPU();
  cuda::synchronize();
  cuda::empty_cache();
  cuda::reset_peak_memory_stats();
  size_t a0 = cuda::memory_allocated();
  {
    Tensor t = kiln::empty({1000}, kiln::TensorOptions(DType::Float32).device(kGpu));
    EXPECT_EQ(cuda::memory_allocated() - a0, (4000u + 511u) / 512u * 512u);  // 512-byte rounding
    auto stats = cuda::memory_stats();
    EXPECT_EQ(static_cast<size_t>(stats.at("allocated_bytes.all.current")),
              cuda::memory_allocated());
    EXPECT_EQ(static_cast<size_t>(stats.at("reserved_bytes.all.current")), cuda::memory_reserved());
    EXPECT_GE(cuda::memory_reserved(), cuda::memory_allocated());
    Tensor big = kiln::empty({16 << 20}, kiln::TensorOptions(DType::Float32).device(kGpu));
    EXPECT_GE(cuda::memory_reserved(), size_t{64} << 20);
    EXPECT_GE(cuda::max_memory_allocated(), (size_t{64} << 20) + 4096);
    std::string snap = cuda::memory_snapshot();
    EXPECT_NE(snap.find("\"segments\""), std::string::npos);
  }
  EXPECT_EQ(cuda::memory_allocated(), a0);
  size_t reserved = cuda::memory_reserved();
  cuda::empty_cache();
  EXPECT_LE(cuda::memory_reserved() + (size_t{64} << 20), reserved);
  EXPECT_GE(cuda::max_memory_reserved(), reserved);
}

TEST(GpuMemory, OutOfMemoryIsAClearErrorAndRecoverable) {
  REQUIRE_GPU();
  auto [free, total] = cuda::mem_get_info();
  int64_t ooms = cuda::memory_stats().at("num_ooms");
  try {
    Tensor t = kiln::empty({static_cast<int64_t>(total / 2)},
                           kiln::TensorOptions(DType::Float32).device(kGpu));  // 2x the device
    FAIL() << "allocating twice the device memory should throw";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
    EXPECT_NE(m.find("tried to allocate"), std::string::npos) << m;
  }
  EXPECT_EQ(cuda::memory_stats().at("num_ooms"), ooms + 1);
  Tensor ok = kiln::ones({1024}, kiln::TensorOptions(DType::Float32).device(kGpu));
  EXPECT_EQ(ok.cpu().data_ptr<float>()[1023], 1.0f);
}

TEST(GpuMemory, EnvironmentConfiguresTheDeviceAllocator) {
  REQUIRE_GPU();
  const size_t mib = size_t{1} << 20;
  // KILN_NO_CUDA_MEMORY_CACHING=1: every free returns the memory to the driver at once.
  ASSERT_EQ(setenv("KILN_NO_CUDA_MEMORY_CACHING", "1", 1), 0);
  ASSERT_EQ(setenv("KILN_CUDA_ALLOC_CONF", "max_split_size_mb:64", 1), 0);
  {
    auto api = kiln::gpu::make_cuda_device_api(0);
    kiln::gpu::CachingAllocator a(*api);  // its config comes from the environment
    EXPECT_FALSE(a.config().caching_enabled);
    EXPECT_EQ(a.config().max_split_size, 64 * mib);
    void* p = a.malloc(3 * mib);
    EXPECT_GE(a.memory_reserved(), 3 * mib);
    a.free(p);
    EXPECT_EQ(a.memory_reserved(), 0u);
  }
  unsetenv("KILN_NO_CUDA_MEMORY_CACHING");
  // expandable_segments:True maps physical memory into one growing virtual range.
  ASSERT_EQ(setenv("KILN_CUDA_ALLOC_CONF", "expandable_segments:True", 1), 0);
  {
    auto api = kiln::gpu::make_cuda_device_api(0);
    kiln::gpu::CachingAllocator a(*api);
    EXPECT_TRUE(a.config().caching_enabled);
    EXPECT_TRUE(a.config().expandable_segments);
    void* p = a.malloc(30 * mib);
    void* q = a.malloc(30 * mib);
    kiln::gpu::Snapshot s = a.memory_snapshot();
    ASSERT_FALSE(s.segments.empty());
    EXPECT_TRUE(s.segments[0].is_expandable);
    a.free(p);
    a.free(q);
    EXPECT_GE(a.memory_reserved(), 60 * mib);  // cached
    a.empty_cache();
    EXPECT_EQ(a.memory_reserved(), 0u);
  }
  unsetenv("KILN_CUDA_ALLOC_CONF");
}

TEST(GpuMemory, ListGpuProcesses) {
  REQUIRE_GPU();
  std::string s = cuda::list_gpu_processes();
  EXPECT_EQ(s.rfind("GPU:" + std::to_string(cuda::current_device()), 0), 0u) << s;
  std::cout << s << "\n";
}

}  // namespace
