// libtorch's side of bench/gpu_host_cost.cpp: the host cost of torch::add on 1-element float32
// CUDA tensors (20,000 calls) and the same pieces (add_out, 0 elements, empty, the raw caching
// allocator). Built on the GPU machine against PyTorch's bundled headers and libraries by
// bench/run_host_cost_bench.sh --run.
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

constexpr int kCalls = 20000;

double host_us(const std::function<void()>& f) {
  for (int i = 0; i < 1000; ++i) f();
  torch::cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    torch::cuda::synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void emit(const char* name, double us) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"libtorch\", \"us\": %.3f}\n", name, us);
  std::fflush(stdout);
}

}  // namespace

int main() {
  torch::NoGradGuard no_grad;  // kiln's bench records no graph either
  auto o = torch::TensorOptions().device(torch::kCUDA);
  auto a = torch::randn({1}, o), b = torch::randn({1}, o), out = torch::empty({1}, o);
  auto a0 = torch::empty({0}, o), b0 = torch::empty({0}, o);
  emit("add_1elem_host_us", host_us([&] { (void)torch::add(a, b); }));
  emit("add_out_1elem_host_us", host_us([&] { (void)torch::add_out(out, a, b); }));
  emit("add_0elem_host_us", host_us([&] { (void)torch::add(a0, b0); }));
  emit("empty_1elem_host_us", host_us([&] { (void)torch::empty({1}, o); }));
  emit("alloc_roundtrip_host_us", host_us([&] {
         c10::cuda::CUDACachingAllocator::raw_delete(c10::cuda::CUDACachingAllocator::raw_alloc(4));
       }));
  return 0;
}
