// The floor under the host cost of an eager GPU op: CUDA-runtime launches of an empty kernel
// (20,000 back to back, and in batches of 50 so the launch queue never fills), the host CPU time
// they take, the GPU time per kernel, and the per-kernel cost of the same kernels replayed as a
// CUDA graph. Not part of the build: nvcc -O2 -arch=sm_90 -cudart static -o /tmp/launch_cost
// bench/gpu_launch_cost.cu, then run it on the GPU machine next to bench/run_host_cost_bench.sh.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <ctime>
__global__ void empty_kernel() {}
__global__ void add1(const float* a, const float* b, float* c) { c[0] = a[0] + b[0]; }
static double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
static double cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
int main() {
  float* d;
  cudaMalloc(&d, 16);
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = now_us(), c0 = cpu_us();
    for (int i = 0; i < 20000; ++i) empty_kernel<<<1, 1>>>();
    double t1 = now_us(), c1 = cpu_us();
    cudaDeviceSynchronize();
    double t2 = now_us();
    printf("empty x20000: host wall %.3f us/launch, host cpu %.3f us/launch, incl sync %.3f\n",
           (t1 - t0) / 20000, (c1 - c0) / 20000, (t2 - t0) / 20000);
  }
  for (int rep = 0; rep < 3; ++rep) {
    double acc = 0, cacc = 0;
    for (int b = 0; b < 400; ++b) {
      double t0 = now_us(), c0 = cpu_us();
      for (int i = 0; i < 50; ++i) empty_kernel<<<1, 1>>>();
      acc += now_us() - t0;
      cacc += cpu_us() - c0;
      cudaDeviceSynchronize();
    }
    printf("empty 50-batches: host wall %.3f us/launch, cpu %.3f\n", acc / 20000, cacc / 20000);
  }
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = now_us();
    for (int i = 0; i < 20000; ++i) add1<<<1, 1>>>(d, d + 1, d + 2);
    double t1 = now_us();
    cudaDeviceSynchronize();
    printf("add1 x20000: host %.3f us/launch\n", (t1 - t0) / 20000);
  }
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < 20000; ++i) empty_kernel<<<1, 1>>>();
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  printf("GPU time per empty kernel (events over 20000): %.3f us\n", ms * 1000 / 20000);
  // Graph of 50 empty kernels: per-kernel cost when launched as a graph.
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < 50; ++i) empty_kernel<<<1, 1, 0, s>>>();
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&ge, g, 0);
  for (int i = 0; i < 10; ++i) cudaGraphLaunch(ge, s);
  cudaStreamSynchronize(s);
  double t0 = now_us();
  for (int i = 0; i < 400; ++i) cudaGraphLaunch(ge, s);
  double t1 = now_us();
  cudaStreamSynchronize(s);
  double t2 = now_us();
  printf("graph of 50: host %.3f us/graph launch, total per kernel incl GPU %.3f us\n",
         (t1 - t0) / 400, (t2 - t0) / 20000);
}
