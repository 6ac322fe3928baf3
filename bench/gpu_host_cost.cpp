// Host cost of a small eager GPU op (kiln::add on 1-element float32 cuda tensors, 20,000 calls)
// and the pieces that explain it: dispatch without a launch, the output allocation, the raw
// caching allocator, empty kernel launches with the elementwise kernel's parameter size and with
// a small one. bench/libtorch_host_cost.cpp measures the same in libtorch; built and run by
// bench/run_host_cost_bench.sh (compiled with nvcc, which the empty kernels need).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/small_ops.h"
#include "backend/gpu/stream.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

#if defined(__CUDACC__)
#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/gpu/elementwise.cuh"
#endif

namespace {

constexpr int kCalls = 20000;

// Median over 5 batches of kCalls calls of f: host wall time per call in µs (the GPU work queued
// by each call is tiny; the queue absorbs it). The device is synchronized between batches.
double host_us(const std::function<void()>& f) {
  for (int i = 0; i < 1000; ++i) f();
  kiln::cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    kiln::cuda::synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void emit(const char* name, double us) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"kiln\", \"us\": %.3f}\n", name, us);
  std::fflush(stdout);
}

#if defined(__CUDACC__)
template <class A>
__global__ void empty_kernel(A) {}

struct SmallArgs {  // what a contiguous-only kernel needs: pointers and a count
  float* out;
  const float* a;
  const float* b;
  int64_t n;
};
struct ElemSized {  // the parameter size of the generic binary elementwise kernel
  unsigned char b[sizeof(kiln::gpu::ElemArgs<2>)];
};
#endif

}  // namespace

int main() {
  if (!kiln::cuda::is_available()) {
    std::printf("{\"error\": \"no GPU\"}\n");
    return 0;
  }
  const kiln::Device dev(kiln::kCUDA, 0);
  auto opts = kiln::TensorOptions().dtype(kiln::DType::Float32).device(dev);
  kiln::Tensor a = kiln::randn({1}).to(dev), b = kiln::randn({1}).to(dev);
  kiln::Tensor out = kiln::empty({1}, opts);
  kiln::Tensor a0 = kiln::empty({0}, opts), b0 = kiln::empty({0}, opts);

  // The whole op, as bench/gpu_ops.cpp times it.
  emit("add_1elem_host_us", host_us([&] { (void)kiln::add(a, b); }));
  // The same with one launch per op (Note [Deferred small launches] off).
  {
    const bool was = kiln::gpu::set_small_ops_enabled(false);
    emit("add_1elem_unbatched_host_us", host_us([&] { (void)kiln::add(a, b); }));
    kiln::gpu::set_small_ops_enabled(was);
  }
  // The op into a preallocated output: no allocation, still a launch.
  emit("add_out_1elem_host_us", host_us([&] { (void)kiln::add_out(out, a, b); }));
  // Dispatch and output creation without a launch (0 elements: nothing to allocate or launch).
  emit("add_0elem_host_us", host_us([&] { (void)kiln::add(a0, b0); }));
  // A 1-element cuda tensor made and dropped: TensorImpl + the caching allocator.
  emit("empty_1elem_host_us", host_us([&] { (void)kiln::empty({1}, opts); }));
  // The raw caching allocator round trip (4 bytes on the current stream).
  {
    kiln::gpu::CachingAllocator& alloc = kiln::gpu::device_allocator(0);
    const kiln::gpu::StreamHandle s = kiln::gpu::current_stream(0);
    emit("alloc_roundtrip_host_us", host_us([&] { alloc.free(alloc.malloc(4, s)); }));
  }
#if defined(__CUDACC__)
  {
    auto s = reinterpret_cast<cudaStream_t>(kiln::gpu::current_stream(0));
    SmallArgs sa{static_cast<float*>(out.data_ptr()), static_cast<const float*>(a.data_ptr()),
                 static_cast<const float*>(b.data_ptr()), 1};
    ElemSized big{};
    std::printf("{\"note\": \"ElemArgs<2> is %zu bytes, SmallArgs %zu bytes\"}\n", sizeof(big),
                sizeof(sa));
    emit("launch_empty_small_host_us", host_us([&] { empty_kernel<<<1, 128, 0, s>>>(sa); }));
    emit("launch_empty_elemargs_host_us", host_us([&] { empty_kernel<<<1, 128, 0, s>>>(big); }));
    emit("launch_empty_elemargs_check_host_us", host_us([&] {
           empty_kernel<<<1, 128, 0, s>>>(big);
           (void)cudaGetLastError();
         }));
    // The same empty kernel through the driver API (cuLaunchKernel), skipping the runtime layer.
    cudaFunction_t fn = nullptr;
    if (cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&empty_kernel<SmallArgs>)) ==
        cudaSuccess) {
      void* params[] = {&sa};
      emit("launch_empty_small_driver_host_us", host_us([&] {
             (void)cuLaunchKernel(reinterpret_cast<CUfunction>(fn), 1, 1, 1, 128, 1, 1, 0,
                                  reinterpret_cast<CUstream>(s), params, nullptr);
           }));
    }
    // On a non-blocking stream of kiln's pool instead of the legacy default stream.
    {
      auto ps = reinterpret_cast<cudaStream_t>(kiln::gpu::pool_stream(0, false));
      emit("launch_empty_small_pool_stream_host_us",
           host_us([&] { empty_kernel<<<1, 128, 0, ps>>>(sa); }));
      cudaStreamSynchronize(ps);
    }
    int d = 0;
    emit("cuda_get_device_host_us", host_us([&] { (void)cudaGetDevice(&d); }));
  }
#endif
  return 0;
}
