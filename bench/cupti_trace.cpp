// Kernel timeline of any CUDA program, kiln's or PyTorch's alike: a CUPTI activity tracer loaded by
// the CUDA driver (CUDA_INJECTION64_PATH=libkiln_cupti_trace.so). At exit it writes one CSV line
// per kernel (start and end in ns, stream, grid, name) to $KILN_TRACE_OUT (default stderr).
//
//   g++ -std=c++20 -O2 -shared -fPIC -I<cuda>/include bench/cupti_trace.cpp -L<cuda>/lib -lcupti \
//     -o libkiln_cupti_trace.so
//   CUDA_INJECTION64_PATH=$PWD/libkiln_cupti_trace.so KILN_TRACE_OUT=k.csv <program>
//
// Concurrent-kernel records keep the program's kernel overlap (programmatic dependent launches
// included), unlike ncu, which runs kernels one at a time.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Rec {
  uint64_t start, end;
  uint32_t stream, grid, block;
  std::string name;
};

std::mutex g_mu;
std::vector<Rec> g_recs;
constexpr size_t kBufBytes = 8u << 20;

void CUPTIAPI on_request(uint8_t** buf, size_t* size, size_t* max_records) {
  *buf = static_cast<uint8_t*>(std::aligned_alloc(8, kBufBytes));
  *size = kBufBytes;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> lk(g_mu);
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && r->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
    g_recs.push_back(
        Rec{k->start, k->end, k->streamId, static_cast<uint32_t>(k->gridX) * k->gridY * k->gridZ,
            static_cast<uint32_t>(k->blockX) * k->blockY * k->blockZ, k->name ? k->name : "?"});
  }
  std::free(buf);
}

void write_out() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("KILN_TRACE_OUT");
  FILE* f = path ? std::fopen(path, "w") : stderr;
  if (!f) return;
  std::lock_guard<std::mutex> lk(g_mu);
  std::fprintf(f, "start_ns,end_ns,stream,grid,block,name\n");
  for (const Rec& r : g_recs)
    std::fprintf(f, "%llu,%llu,%u,%u,%u,%s\n", static_cast<unsigned long long>(r.start),
                 static_cast<unsigned long long>(r.end), r.stream, r.grid, r.block, r.name.c_str());
  if (f != stderr) std::fclose(f);
}

}  // namespace

extern "C" int InitializeInjection() {
  if (cuptiActivityRegisterCallbacks(on_request, on_complete) != CUPTI_SUCCESS) return 0;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) return 0;
  std::atexit(write_out);
  return 1;
}
