// The GPU reduction engine: geometry (kept/reduced dims as two OffsetCalcs), one kernel per op
// with a block-per-output ("inner") and a thread-per-output ("outer") mode, split reductions with
// a deterministic second pass (Note [GPU reduction order]). The per-op math is in reduce_ops.cuh.
#pragma once

#include "backend/gpu/vendor.h"

#include <type_traits>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "kernels/gpu/offset_calc.cuh"
#include "ops/op.h"

namespace kiln::gpu::red {

// Note [GPU reduction order]
// Each output's reduced range [0, R) is cut into `splits` chunks (blockIdx.y). Inner mode: the
// threads of a block walk a chunk with a stride of the block size and the block combines their
// accumulators with a fixed shared-memory tree; outer mode: each thread owns one output (adjacent
// outputs are adjacent in memory, so loads coalesce) and walks the chunk in order. With more than
// one chunk, the chunks' accumulators go to a workspace and a second kernel combines them in a
// fixed tree. No atomics: results are deterministic and do not depend on timing. The tree needs
// no warp shuffles (accumulators are structs), so it is independent of the warp width.
inline constexpr int kRedBlock = 256;

template <class T, int V>
struct alignas(sizeof(T) * V) VecN {
  T v[V];
};

struct RedGeom {
  int64_t O = 1, R = 1;
  OffsetCalc<1> kept;  // output linear index -> input element offset
  OffsetCalc<1> red;   // reduced linear index -> offset from the output's base
  bool inner = true;
  bool red_contig = false;  // reduced range is one run of stride 1
  int64_t splits = 1, chunk = 1;
};

template <class Op>
__device__ __forceinline__ typename Op::Acc block_combine(const Op& op, typename Op::Acc acc,
                                                          typename Op::Acc* sm) {
  sm[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kRedBlock / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w)
      sm[threadIdx.x] = op.combine(sm[threadIdx.x], sm[threadIdx.x + w]);
    __syncthreads();
  }
  acc = sm[0];
  __syncthreads();
  return acc;
}

template <class Op>
__global__ void __launch_bounds__(kRedBlock)
    reduce_kernel(Op op, const typename Op::In* x, RedGeom g, typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  const int64_t s = blockIdx.y;
  const int64_t r0 = s * g.chunk;
  const int64_t r1 = r0 + g.chunk < g.R ? r0 + g.chunk : g.R;
  if (g.inner) {
    alignas(16) __shared__ unsigned char smem[kRedBlock * sizeof(Acc)];
    Acc* sm = reinterpret_cast<Acc*>(smem);
    for (int64_t o = blockIdx.x; o < g.O; o += gridDim.x) {
      int64_t base[1];
      g.kept.get(o, base);
      Acc acc = op.identity();
      int64_t r = r0 + threadIdx.x;
      constexpr int V = sizeof(In) >= 16 ? 1 : (sizeof(In) >= 8 ? 2 : 4);
      const In* p = x + base[0];
      if (g.red_contig && V > 1 && reinterpret_cast<uintptr_t>(p + r0) % (V * sizeof(In)) == 0) {
        // 16-byte (or 8-byte) loads, two in flight per thread; the index order of each thread's
        // steps is increasing, as arg-reductions need.
        constexpr int B = kRedBlock;
        const auto* pv = reinterpret_cast<const VecN<In, V>*>(p + r0);
        const int64_t nvec = (r1 - r0) / V;
        int64_t j = threadIdx.x;
        for (; j + B < nvec; j += 2 * B) {
          VecN<In, V> a0 = pv[j], a1 = pv[j + B];
#pragma unroll
          for (int k = 0; k < V; ++k) acc = op.step(acc, a0.v[k], r0 + j * V + k);
#pragma unroll
          for (int k = 0; k < V; ++k) acc = op.step(acc, a1.v[k], r0 + (j + B) * V + k);
        }
        for (; j < nvec; j += B) {
          VecN<In, V> a0 = pv[j];
#pragma unroll
          for (int k = 0; k < V; ++k) acc = op.step(acc, a0.v[k], r0 + j * V + k);
        }
        for (r = r0 + nvec * V + threadIdx.x; r < r1; r += B) acc = op.step(acc, p[r], r);
      } else if (g.red_contig) {
        constexpr int B = kRedBlock;
        for (; r + 3 * B < r1; r += 4 * B) {  // four loads in flight
          In v0 = p[r], v1 = p[r + B], v2 = p[r + 2 * B], v3 = p[r + 3 * B];
          acc = op.step(acc, v0, r);
          acc = op.step(acc, v1, r + B);
          acc = op.step(acc, v2, r + 2 * B);
          acc = op.step(acc, v3, r + 3 * B);
        }
        for (; r < r1; r += B) acc = op.step(acc, p[r], r);
      } else {
        for (; r < r1; r += kRedBlock) {
          int64_t off[1];
          g.red.get(r, off);
          acc = op.step(acc, x[base[0] + off[0]], r);
        }
      }
      acc = block_combine(op, acc, sm);
      if (threadIdx.x == 0) {
        if (partial)
          partial[o * g.splits + s] = acc;
        else
          op.write(acc, o);
      }
    }
    return;
  }
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kRedBlock + threadIdx.x;
  if (o >= g.O) return;
  int64_t base[1];
  g.kept.get(o, base);
  Acc acc = op.identity();
  if (g.red.ndim == 1) {
    const int64_t st = g.red.strides[0][0];
    for (int64_t r = r0; r < r1; ++r) acc = op.step(acc, x[base[0] + r * st], r);
  } else {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off[1];
      g.red.get(r, off);
      acc = op.step(acc, x[base[0] + off[0]], r);
    }
  }
  if (partial)
    partial[o * g.splits + s] = acc;
  else
    op.write(acc, o);
}

// Second pass: one block per output combines its `splits` accumulators.
template <class Op>
__global__ void __launch_bounds__(kRedBlock)
    reduce_finish_kernel(Op op, const typename Op::Acc* partial, int64_t O, int64_t splits) {
  using Acc = typename Op::Acc;
  alignas(16) __shared__ unsigned char smem[kRedBlock * sizeof(Acc)];
  Acc* sm = reinterpret_cast<Acc*>(smem);
  for (int64_t o = blockIdx.x; o < O; o += gridDim.x) {
    Acc acc = op.identity();
    for (int64_t s = threadIdx.x; s < splits; s += kRedBlock)
      acc = op.combine(acc, partial[o * splits + s]);
    acc = block_combine(op, acc, sm);
    if (threadIdx.x == 0) op.write(acc, o);
  }
}

// ---- host side (reduce.cu) ---------------------------------------------------------------------

// Geometry of reducing x over c.attrs.ints into outputs with O elements. `ordered` keeps the
// reduced dims in logical order (ops that return indices); otherwise they go in memory order.
RedGeom make_geom(const Tensor& x, IntArrayRef dims, bool ordered, int device);

// A workspace on `device` of `bytes` bytes (from the caching allocator; freed with the tensor).
Tensor workspace(int64_t bytes, int device);

struct RedLaunch {
  int device;
  uintptr_t stream;
};
RedLaunch red_begin(const OpCall& c);

template <class Op>
void launch_reduce(const OpCall& c, const Op& op, const Tensor& x, bool ordered = false) {
  RedLaunch l = red_begin(c);
  DeviceGuard guard(l.device);
  RedGeom g = make_geom(x, c.attrs.ints, ordered, l.device);
  if (g.O == 0) return;
  auto stream = reinterpret_cast<gpuStream_t>(l.stream);
  using Acc = typename Op::Acc;
  const auto* in = static_cast<const typename Op::In*>(x.data_ptr());
  unsigned gx = g.inner ? static_cast<unsigned>(g.O < 65535 * 16 ? g.O : 65535 * 16)
                        : static_cast<unsigned>((g.O + kRedBlock - 1) / kRedBlock);
  dim3 grid(gx, static_cast<unsigned>(g.splits));
  if (g.splits == 1) {
    reduce_kernel<Op><<<grid, kRedBlock, 0, stream>>>(op, in, g, nullptr);
  } else {
    Tensor ws = workspace(g.O * g.splits * static_cast<int64_t>(sizeof(Acc)), l.device);
    Acc* partial = static_cast<Acc*>(ws.data_ptr());
    reduce_kernel<Op><<<grid, kRedBlock, 0, stream>>>(op, in, g, partial);
    unsigned fx = static_cast<unsigned>(g.O < 65535 * 16 ? g.O : 65535 * 16);
    reduce_finish_kernel<Op><<<fx, kRedBlock, 0, stream>>>(op, partial, g.O, g.splits);
  }
  check_launch(op_name(c.op), l.stream);
}

}  // namespace kiln::gpu::red
