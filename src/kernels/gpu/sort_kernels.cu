// GPU kernels of sort, topk, kthvalue, median/nanmedian and mode: every line is sorted by the line
// sorts of sort_common.cuh (stable, NaN largest; Note [GPU sort keys]) and the results are read off
// the sorted lines, so values and indices equal the CPU kernels' (sort_kernels.cpp).
#include "backend/gpu/vendor.h"

#include <cstdint>

#include "dispatch/registry.h"
#include "kernels/gpu/sort_common.cuh"

namespace kiln::gpu {

namespace sortg {

namespace {

constexpr int kThreads = 256;

int64_t line_len(const Tensor& x, int64_t dim) { return x.dim() == 0 ? 1 : x.size(dim); }

// Ranks [0, k) of every sorted line: the values (read from x at the positions) and the positions.
// Operands of ln: (x, values, indices).
template <class E>
__global__ void write_sorted_kernel(const E* x, E* vo, int64_t* io, Lines<3> ln,
                                    const uint32_t* pos, int64_t pitch, int64_t k) {
  const int64_t total = ln.count * k, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t l = t / k, i = t - l * k;
    int64_t off[3];
    ln.batch.get(l, off);
    const int64_t p = pos[l * pitch + i];
    vo[off[1] + i * ln.stride[1]] = x[off[0] + p * ln.stride[0]];
    io[off[2] + i * ln.stride[2]] = p;
  }
}

void write_sorted(OpCall& c, const SortedLines& s, int64_t dim, int64_t k) {
  const char* op = op_name(c.op);
  const Tensor& x = c.in[0];
  const Launch l = launch_of(c.out[0]);
  const Tensor* ops[3] = {&x, &c.out[0], &c.out[1]};
  const Lines<3> ln = make_lines<3>(ops, dim, op);
  if (ln.count * k == 0) return;
  dispatch_elem(x.dtype(), op, [&]<class E>() {
    write_sorted_kernel<E><<<blocks_for(ln.count * k, kThreads), kThreads, 0, l.stream>>>(
        static_cast<const E*>(x.data_ptr()), static_cast<E*>(c.out[0].data_ptr()),
        static_cast<int64_t*>(c.out[1].data_ptr()), ln, s.pos_ptr(), s.pitch, k);
  });
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
}

// out = (values, indices): a stable sort of each line (NaN largest); flag = descending.
void sort_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  DeviceGuard guard(launch_of(c.out[0]).device);
  const int64_t dim = c.attrs.i0;
  SortedLines s = sort_tensor_lines(x, dim, c.attrs.flag, "sort");
  write_sorted(c, s, dim, line_len(x, dim));
}

// out = (values, indices) of the k largest (flag) or smallest per line, sorted: the first k ranks
// of the stable sort, which is the CPU's (key, index) order.
void topk_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (c.out[0].numel() == 0) return;
  DeviceGuard guard(launch_of(c.out[0]).device);
  const int64_t dim = c.attrs.i0, k = x.dim() == 0 ? 1 : c.attrs.i1;
  SortedLines s = sort_tensor_lines(x, dim, c.attrs.flag, "topk");
  write_sorted(c, s, dim, k);
}

enum PickMode : int { kPickKth = 0, kPickMedian = 1, kPickNanMedian = 2 };

// One thread per line: kthvalue's rank k - 1, or the median's rank among the non-NaN keys (the
// first NaN when a NaN counts). NaNs are the keys equal to `nan` at the end of a line.
template <class E, class K>
__global__ void pick_kernel(const E* x, E* vo, int64_t* io, Lines<3> ln, const K* keys,
                            const uint32_t* pos, int64_t pitch, int64_t n, int mode, int64_t k,
                            bool is_float, K nan) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; l < ln.count;
       l += step) {
    int64_t r = k - 1;
    if (mode != kPickKth) {
      const int64_t valid = is_float ? lower_bound(keys + l * pitch, n, nan) : n;
      if (valid < n && (mode == kPickMedian || valid == 0))
        r = valid;  // the first NaN (positions of equal keys ascend)
      else
        r = (valid - 1) / 2;
    }
    int64_t off[3];
    ln.batch.get(l, off);
    const int64_t p = pos[l * pitch + r];
    vo[off[1]] = x[off[0] + p * ln.stride[0]];
    io[off[2]] = p;
  }
}

// One block per line: the longest run of equal keys (the first, i.e. smallest value, among equally
// long runs; each NaN its own run) and the position of its last element, as the CPU's mode.
template <class E, class K>
__global__ void __launch_bounds__(kThreads)
    mode_kernel(const E* x, E* vo, int64_t* io, Lines<3> ln, const K* keys, const uint32_t* pos,
                int64_t pitch, int64_t n, bool is_float, K nan) {
  __shared__ int64_t s_len[kThreads], s_start[kThreads], s_end[kThreads];
  const int tid = threadIdx.x;
  for (int64_t l = blockIdx.x; l < ln.count; l += gridDim.x) {
    const K* kk = keys + l * pitch;
    int64_t bl = 0, bs = INT64_MAX, be = -1;
    for (int64_t i = tid; i < n; i += blockDim.x) {
      const K key = kk[i];
      const bool is_nan = is_float && key == nan;
      if (!is_nan && i + 1 < n && kk[i + 1] == key) continue;  // not the end of a run
      const int64_t start = is_nan ? i : lower_bound(kk, i, key);
      const int64_t len = i - start + 1;
      if (len > bl || (len == bl && start < bs)) bl = len, bs = start, be = i;
    }
    s_len[tid] = bl;
    s_start[tid] = bs;
    s_end[tid] = be;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
      if (tid < w) {
        const int o = tid + w;
        if (s_len[o] > s_len[tid] || (s_len[o] == s_len[tid] && s_start[o] < s_start[tid])) {
          s_len[tid] = s_len[o];
          s_start[tid] = s_start[o];
          s_end[tid] = s_end[o];
        }
      }
      __syncthreads();
    }
    if (tid == 0) {
      int64_t off[3];
      ln.batch.get(l, off);
      const int64_t p = pos[l * pitch + s_end[0]];
      vo[off[1]] = x[off[0] + p * ln.stride[0]];
      io[off[2]] = p;
    }
    __syncthreads();
  }
}

// One (value, index) per line: kthvalue (i1 = k, 1-based), median (flag = ignore NaN), mode.
template <int kMode>  // PickMode, or -1 for mode()
void pick_op_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const char* op = op_name(c.op);
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const int64_t dim = c.attrs.i0, n = line_len(x, dim);
  const SortedLines s = sort_tensor_lines(x, dim, false, op);
  const Tensor* ops[3] = {&x, &c.out[0], &c.out[1]};
  const Lines<3> ln = make_lines<3>(ops, dim, op);
  const bool is_float = is_float_key(key_spec(x.dtype(), false));
  const int mode = kMode == kPickMedian && c.attrs.flag ? kPickNanMedian : kMode;
  dispatch_elem(x.dtype(), op, [&]<class E>() {
    using K = key_of_t<E>;
    const E* xp = static_cast<const E*>(x.data_ptr());
    E* vo = static_cast<E*>(c.out[0].data_ptr());
    auto* io = static_cast<int64_t*>(c.out[1].data_ptr());
    const K nan = nan_key<K>(static_cast<int>(sizeof(E)));
    if constexpr (kMode < 0) {
      const unsigned grid = static_cast<unsigned>(ln.count < (1 << 20) ? ln.count : 1 << 20);
      mode_kernel<E, K><<<grid, kThreads, 0, l.stream>>>(xp, vo, io, ln, s.key_ptr<K>(),
                                                         s.pos_ptr(), s.pitch, n, is_float, nan);
    } else {
      pick_kernel<E, K><<<blocks_for(ln.count, kThreads), kThreads, 0, l.stream>>>(
          xp, vo, io, ln, s.key_ptr<K>(), s.pos_ptr(), s.pitch, n, mode, c.attrs.i1, is_float, nan);
    }
  });
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
}

}  // namespace

}  // namespace sortg

void register_sort_kernels(detail::KernelRegistry& r) {
  using namespace sortg;
  r.set(OpId::Sort, kCUDA, &sort_kernel);
  r.set(OpId::TopK, kCUDA, &topk_kernel);
  r.set(OpId::KthValue, kCUDA, &pick_op_kernel<kPickKth>);
  r.set(OpId::Median, kCUDA, &pick_op_kernel<kPickMedian>);
  r.set(OpId::Mode, kCUDA, &pick_op_kernel<-1>);
  register_sort_stats_kernels(r);
}

}  // namespace kiln::gpu
