// Stream compaction on the GPU for masked_select, masked_scatter and nonzero: per-tile counts,
// a device prefix sum over the tiles (scan_tiles_int64), one copy of the total to the host, then
// a write pass that places every selected element at its row-major rank. Portable (no CUB).
#pragma once

#include "kernels/gpu/index_util.cuh"

namespace kiln::gpu::idx {

// Note [GPU compaction]
// Elements are taken in row-major order of the logical shape, in tiles of kCompactTile (256
// threads x 8 consecutive elements). Pass 1 counts each tile's selected elements into
// buf[1 + tile]; an in-place inclusive scan of buf[1..nt] (a recursive block scan, exact in
// int64) turns buf[t] into the first output position of tile t and buf[nt] into the total, which
// is the one value copied to the host (the op's one synchronization, as PyTorch). Pass 2 recounts
// per thread, scans the 256 thread counts in shared memory, and writes each selected element at
// buf[t] + its rank in the tile: the CPU's order, whatever the number of threads.
inline constexpr int kCompactThreads = 256;
inline constexpr int kCompactItems = 8;
inline constexpr int64_t kCompactTile = kCompactThreads * kCompactItems;

// Inclusive scan of v (one value per thread) over the block; returns the thread's inclusive sum
// and sets *total. `sh` holds blockDim.x values.
__device__ __forceinline__ int64_t block_inclusive_scan(int64_t v, int64_t* sh, int64_t* total) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int s = 1; s < static_cast<int>(blockDim.x); s <<= 1) {
    int64_t add = t >= s ? sh[t - s] : 0;
    __syncthreads();
    sh[t] += add;
    __syncthreads();
  }
  const int64_t r = sh[t];
  *total = sh[blockDim.x - 1];
  __syncthreads();
  return r;
}

// In-place inclusive scan of tiles of kCompactTile int64; tile sums to sums[tile].
template <int = 0>  // a template: one definition per program without `inline`
__global__ void scan_tiles_int64_dev(int64_t* data, int64_t n, int64_t* sums) {
  __shared__ int64_t sh[kCompactThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kCompactTile +
                       static_cast<int64_t>(threadIdx.x) * kCompactItems;
  int64_t v[kCompactItems];
  int64_t acc = 0;
#pragma unroll
  for (int q = 0; q < kCompactItems; ++q) {
    v[q] = base + q < n ? data[base + q] : 0;
    acc += v[q];
  }
  int64_t total = 0;
  int64_t incl = block_inclusive_scan(acc, sh, &total);
  int64_t run = incl - acc;
#pragma unroll
  for (int q = 0; q < kCompactItems; ++q) {
    run += v[q];
    if (base + q < n) data[base + q] = run;
  }
  if (threadIdx.x == 0 && sums != nullptr) sums[blockIdx.x] = total;
}

template <int = 0>  // a template: one definition per program without `inline`
__global__ void add_tile_offsets_dev(int64_t* data, int64_t n, const int64_t* sums) {
  if (blockIdx.x == 0) return;
  const int64_t add = sums[blockIdx.x - 1];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kCompactTile;
  for (int64_t i = base + threadIdx.x; i < base + kCompactTile && i < n; i += blockDim.x)
    data[i] += add;
}

// In-place inclusive scan of n int64 on the device (on `dev`'s current stream).
inline void scan_int64(int64_t* data, int64_t n, const Device& dev, gpuStream_t st) {
  if (n <= 0) return;
  const int64_t tiles = (n + kCompactTile - 1) / kCompactTile;
  if (tiles == 1) {
    scan_tiles_int64_dev<><<<1, kCompactThreads, 0, st>>>(data, n, nullptr);
    return;
  }
  Tensor sums = ::kiln::detail::empty_impl({tiles}, DType::Int64, dev);
  auto* s = static_cast<int64_t*>(sums.data_ptr());
  scan_tiles_int64_dev<><<<static_cast<unsigned>(tiles), kCompactThreads, 0, st>>>(data, n, s);
  scan_int64(s, tiles, dev, st);
  add_tile_offsets_dev<><<<static_cast<unsigned>(tiles), kCompactThreads, 0, st>>>(data, n, s);
}

// Pass 1: buf[1 + tile] = number of e in the tile with flag(e).
template <class Flag>
__global__ void compact_count_dev(Flag flag, int64_t n, int64_t* buf) {
  __shared__ int64_t sh[kCompactThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kCompactTile +
                       static_cast<int64_t>(threadIdx.x) * kCompactItems;
  int64_t c = 0;
  for (int q = 0; q < kCompactItems; ++q)
    if (base + q < n && flag(base + q)) ++c;
  int64_t total = 0;
  block_inclusive_scan(c, sh, &total);
  if (threadIdx.x == 0) buf[1 + blockIdx.x] = total;
}

// Pass 2: write(e, position) for every selected e.
template <class Flag, class Write>
__global__ void compact_write_dev(Flag flag, Write write, int64_t n, const int64_t* starts) {
  __shared__ int64_t sh[kCompactThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kCompactTile +
                       static_cast<int64_t>(threadIdx.x) * kCompactItems;
  unsigned bits = 0;
  int64_t c = 0;
  for (int q = 0; q < kCompactItems; ++q)
    if (base + q < n && flag(base + q)) {
      bits |= 1u << q;
      ++c;
    }
  int64_t total = 0;
  int64_t pos = starts[blockIdx.x] + block_inclusive_scan(c, sh, &total) - c;
  for (int q = 0; q < kCompactItems; ++q)
    if (bits & (1u << q)) write(base + q, pos++);
}

// Counts (pass 1 + scan) and returns the total; `buf` receives the tile starts.
template <class Flag>
int64_t compact_count(const Flag& flag, int64_t n, const Device& dev, Tensor* buf, const char* op) {
  const int64_t tiles = (n + kCompactTile - 1) / kCompactTile;
  *buf = ::kiln::detail::empty_impl({tiles + 1}, DType::Int64, dev);
  auto* b = static_cast<int64_t*>(buf->data_ptr());
  StreamHandle sh = current_stream(device_of(*buf));
  gpuStream_t st = as_stream(sh);
  KILN_GPU_CHECK(op, gpuMemsetAsync(b, 0, sizeof(int64_t), st));
  if (tiles > 0) {
    compact_count_dev<Flag><<<static_cast<unsigned>(tiles), kCompactThreads, 0, st>>>(flag, n, b);
    scan_int64(b + 1, tiles, dev, st);
  }
  check_launch(op, sh);
  // The total, to the host: the op's one synchronization.
  Tensor total = ::kiln::detail::empty_impl({}, DType::Int64, Device(kCPU));
  gpu_copy(total, ::kiln::detail::make_view(*buf, {}, {}, buf->storage_offset() + tiles));
  return *static_cast<const int64_t*>(total.data_ptr());
}

template <class Flag, class Write>
void compact_write(const Flag& flag, const Write& write, int64_t n, const Tensor& buf,
                   const char* op) {
  const int64_t tiles = (n + kCompactTile - 1) / kCompactTile;
  if (tiles == 0) return;
  StreamHandle sh = current_stream(device_of(buf));
  compact_write_dev<Flag, Write>
      <<<static_cast<unsigned>(tiles), kCompactThreads, 0, as_stream(sh)>>>(
          flag, write, n, static_cast<const int64_t*>(buf.data_ptr()));
  check_launch(op, sh);
}

}  // namespace kiln::gpu::idx
