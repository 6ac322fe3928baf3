// GPU kernels of the scans (cumsum, cumprod, cummax, cummin, logcumsumexp) along one dim of any
// strides. Semantics: src/kernels/cpu/scan_kernels.cpp; order: Note [GPU scans].
#include "backend/gpu/vendor.h"

#include <cmath>
#include <limits>

#include "kernels/gpu/index_util.cuh"

namespace kiln::gpu {

using namespace ::kiln::gpu::idx;
using ::kiln::detail::convert;

namespace {

// Note [GPU scans]
// Each line along the scanned dim is scanned either by one thread, in order (many lines, or
// short ones: kThreadLineMax), or by one block that walks the line in tiles of 2048 elements
// (256 threads x 8 consecutive elements): every thread scans its 8 elements in registers, the
// 256 thread totals are scanned in shared memory, and a running carry joins the tiles in order.
// So a block-scanned element is carry (tiles before, in order) + (threads before in the tile, as
// a tree) + (its thread's elements, in order). Accumulators are the CPU's: double for every
// floating type (float32 included: scans are memory-bound, so the wider adds cost nothing
// measurable on the GPUs kiln targets, and float32 results then match the CPU's to rounding of
// the output), complex<double> for complex, int64 for integers and bool.
// Few long lines (fewer than kChunkedLinesMax, longer than two chunks) take a two-level scan:
// blocks reduce chunks of kChunkLen elements to totals, one thread per line turns the totals
// into carries in order, and blocks rescan their chunk from its carry (the input is read twice).
// cummax/cummin combine (value, index) pairs with the CPU's rule, which is associative: the
// right pair takes over when its value is NaN, or when the left is not NaN and right >= left
// (cummax; <= for cummin), so ties take the latest index and a NaN sticks with its last index.
constexpr int kScanThreads = 256;
constexpr int kScanItems = 8;
constexpr int64_t kScanTile = kScanThreads * kScanItems;
constexpr int64_t kThreadLineMax = 64;
constexpr int64_t kChunkLen = 16 * kScanTile;  // elements per block in the two-level mode
constexpr int64_t kChunkedLinesMax = 512;      // fewer lines than this: cut long ones in chunks

struct ScanGeom {
  OffsetCalc<3> oc;  // over the lines: out0, out1 (indices, or out0 again), x
  int64_t n = 1, lines = 1;
  int64_t s0 = 0, s1 = 0, sx = 0;  // strides along the scanned dim
  bool block_mode = false;
  int64_t chunk_len = 0, chunks = 1;  // two-level mode when chunks > 1
};

// The CPU's accumulators (Note [GPU scans]).
template <class T>
using SumAcc = std::conditional_t<
    std::is_integral_v<T>, int64_t,
    std::conditional_t<::kiln::detail::is_complex_v<T>, complex<double>, double>>;

template <class T, bool kProd>
struct CumOp {
  using Acc = SumAcc<T>;
  T* out;
  const T* x;
  __device__ Acc ident() const { return kProd ? Acc(1) : Acc(0); }
  __device__ Acc load(int64_t off, int64_t) const { return convert<Acc>(x[off]); }
  __device__ Acc comb(Acc a, Acc b) const {
    if constexpr (kProd)
      return a * b;
    else
      return a + b;
  }
  __device__ void store(int64_t o0, int64_t, Acc a) const { out[o0] = convert<T>(a); }
};

__device__ inline double log_add_exp_dev(double a, double b) {
  if (a != a || b != b) return ::nan("");
  const double m = a > b ? a : b, s = a > b ? b : a;
  if (::isinf(m)) return m;
  return m + ::log1p(::exp(s - m));
}

template <class T>
struct LogCumOp {
  using Acc = double;
  T* out;
  const T* x;
  __device__ Acc ident() const { return -::kiln::detail::FloatConsts<double>::inf(); }
  __device__ Acc load(int64_t off, int64_t) const { return convert<double>(x[off]); }
  __device__ Acc comb(Acc a, Acc b) const { return log_add_exp_dev(a, b); }
  __device__ void store(int64_t o0, int64_t, Acc a) const { out[o0] = convert<T>(a); }
};

struct CplxAcc {
  complex<double> z;
  bool set;
};

template <class T>
struct LogCumComplexOp {
  using Acc = CplxAcc;
  T* out;
  const T* x;
  __device__ Acc ident() const { return {complex<double>(0, 0), false}; }
  __device__ Acc load(int64_t off, int64_t) const {
    return {convert<complex<double>>(x[off]), true};
  }
  __device__ Acc comb(Acc a, Acc b) const {
    if (!a.set) return b;
    if (!b.set) return a;
    complex<double> p = a.z, q = b.z;
    const double nan = ::nan("");
    if (p.real() != p.real() || q.real() != q.real() || p.imag() != p.imag() ||
        q.imag() != q.imag())
      return {complex<double>(nan, nan), true};
    if (p.real() < q.real()) {
      complex<double> t = p;
      p = q;
      q = t;
    }
    if (::isinf(p.real())) return {p, true};
    return {p + ::kiln::log(complex<double>(1, 0) + ::kiln::exp(q - p)), true};
  }
  __device__ void store(int64_t o0, int64_t, Acc a) const { out[o0] = convert<T>(a.z); }
};

template <class T>
struct ExtAcc {
  T v;
  double d;
  int64_t i;  // -1: empty
};

template <class T, bool kMax>
struct CumExtremeOp {
  using Acc = ExtAcc<T>;
  T* vals;
  int64_t* idx;
  const T* x;
  __device__ Acc ident() const { return {T(), 0.0, -1}; }
  __device__ Acc load(int64_t off, int64_t e) const {
    const T v = x[off];
    return {v, convert<double>(v), e};
  }
  __device__ Acc comb(Acc a, Acc b) const {
    if (b.i < 0) return a;
    if (a.i < 0) return b;
    const bool b_nan = b.d != b.d, a_nan = a.d != a.d;
    const bool take = b_nan || (!a_nan && (kMax ? b.d >= a.d : b.d <= a.d));
    return take ? b : a;
  }
  __device__ void store(int64_t o0, int64_t o1, Acc a) const {
    vals[o0] = a.v;
    idx[o1] = a.i;
  }
};

// Scans [begin, end) of the line at `off` in tiles, starting from `carry`; stores the results
// when `store`; returns the carry after the range. All threads of the block call it.
template <class Op>
__device__ typename Op::Acc block_scan_range(const Op& op, const ScanGeom& g, const int64_t* off,
                                             int64_t begin, int64_t end, typename Op::Acc carry,
                                             bool store, typename Op::Acc* sh) {
  using Acc = typename Op::Acc;
  const int t = threadIdx.x;
  for (int64_t tile = begin; tile < end; tile += kScanTile) {
    const int64_t first = tile + static_cast<int64_t>(t) * kScanItems;
    Acc a[kScanItems];
#pragma unroll
    for (int q = 0; q < kScanItems; ++q) {
      const int64_t e = first + q;
      a[q] = e < end ? op.load(off[2] + e * g.sx, e) : op.ident();
      if (q > 0) a[q] = op.comb(a[q - 1], a[q]);
    }
    // Inclusive scan of the thread totals (Hillis-Steele, in order: left operand first).
    sh[t] = a[kScanItems - 1];
    __syncthreads();
    for (int s = 1; s < kScanThreads; s <<= 1) {
      Acc left = t >= s ? sh[t - s] : op.ident();
      __syncthreads();
      if (t >= s) sh[t] = op.comb(left, sh[t]);
      __syncthreads();
    }
    const Acc before = op.comb(carry, t > 0 ? sh[t - 1] : op.ident());
    const Acc tile_total = sh[kScanThreads - 1];
    if (store) {
#pragma unroll
      for (int q = 0; q < kScanItems; ++q) {
        const int64_t e = first + q;
        if (e < end) op.store(off[0] + e * g.s0, off[1] + e * g.s1, op.comb(before, a[q]));
      }
    }
    carry = op.comb(carry, tile_total);
    __syncthreads();  // sh is rewritten by the next tile
  }
  return carry;
}

// Modes of scan_dev (Note [GPU scans]).
enum ScanPhase : int {
  kThreadLines = 0,   // one thread per line
  kBlockLines = 1,    // one block per line
  kChunkTotals = 2,   // one block per (line, chunk): the chunk's total into acc[]
  kChunkCarries = 3,  // one thread per line: acc[] becomes each chunk's carry-in
  kChunkScan = 4,     // one block per (line, chunk): scan from the carry-in, store
};

template <class Op>
__global__ void __launch_bounds__(kScanThreads)
    scan_dev(Op op, ScanGeom g, typename Op::Acc* acc, int phase) {
  using Acc = typename Op::Acc;
  if (phase == kThreadLines || phase == kChunkCarries) {
    KILN_GRID_LOOP(line, g.lines) {
      if (phase == kChunkCarries) {
        Acc run = op.ident();
        for (int64_t c = 0; c < g.chunks; ++c) {
          const Acc t = acc[line * g.chunks + c];
          acc[line * g.chunks + c] = run;
          run = op.comb(run, t);
        }
        continue;
      }
      int64_t off[3];
      g.oc.get(line, off);
      Acc r = op.ident();
      for (int64_t e = 0; e < g.n; ++e) {
        r = op.comb(r, op.load(off[2] + e * g.sx, e));
        op.store(off[0] + e * g.s0, off[1] + e * g.s1, r);
      }
    }
    return;
  }
  __shared__ Raw16 sh_raw[(kScanThreads * sizeof(Acc) + 15) / 16];  // 16-byte aligned
  Acc* sh = reinterpret_cast<Acc*>(sh_raw);
  if (phase == kBlockLines) {
    for (int64_t line = blockIdx.x; line < g.lines; line += gridDim.x) {
      int64_t off[3];
      g.oc.get(line, off);
      block_scan_range(op, g, off, 0, g.n, op.ident(), true, sh);
    }
    return;
  }
  for (int64_t b = blockIdx.x; b < g.lines * g.chunks; b += gridDim.x) {
    const int64_t line = b / g.chunks, c = b - line * g.chunks;
    int64_t off[3];
    g.oc.get(line, off);
    const int64_t begin = c * g.chunk_len;
    const int64_t end = begin + g.chunk_len < g.n ? begin + g.chunk_len : g.n;
    if (phase == kChunkTotals) {
      const Acc total = block_scan_range(op, g, off, begin, end, op.ident(), false, sh);
      if (threadIdx.x == 0) acc[b] = total;
    } else {
      block_scan_range(op, g, off, begin, end, acc[b], true, sh);
    }
  }
}

// The geometry of a scan of x along dim into out0 (and out1).
ScanGeom make_geom(const Tensor& out0, const Tensor& out1, const Tensor& x, int64_t dim,
                   const char* op) {
  ScanGeom g;
  const int64_t nd = x.dim();
  g.n = nd == 0 ? 1 : x.size(dim);
  DimVector rest(x.sizes().begin(), x.sizes().end());
  if (nd > 0) rest[dim] = 1;
  auto view = [&](const Tensor& t) {
    return ::kiln::detail::make_view(t, rest, t.strides(), t.storage_offset());
  };
  Tensor v0 = view(out0), v1 = view(out1), vx = view(x);
  const Tensor* ops[3] = {&v0, &v1, &vx};
  g.oc = make_offset_calc<3>(ops, op);
  g.lines = g.n == 0 ? 0 : x.numel() / g.n;
  if (nd > 0) {
    g.s0 = out0.stride(dim);
    g.s1 = out1.stride(dim);
    g.sx = x.stride(dim);
  }
  // Block per line when the lines are long and too few to fill the GPU with threads; long lines
  // that are also few are cut into chunks (two-level scan).
  g.block_mode = g.n > kThreadLineMax && g.lines < 8192;
  if (g.block_mode && g.lines < kChunkedLinesMax && g.n > 2 * kChunkLen) {
    g.chunk_len = kChunkLen;
    g.chunks = (g.n + kChunkLen - 1) / kChunkLen;
  }
  return g;
}

unsigned grid_of(int64_t blocks) {
  return static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
}

template <class Op>
void launch_scan(const Op& op, const ScanGeom& g, const Tensor& out, const char* name) {
  using Acc = typename Op::Acc;
  const int dev = device_of(out);
  StreamHandle st = current_stream(dev);
  gpuStream_t s = as_stream(st);
  if (!g.block_mode) {
    scan_dev<Op>
        <<<blocks_for(g.lines, kScanThreads), kScanThreads, 0, s>>>(op, g, nullptr, kThreadLines);
  } else if (g.chunks <= 1) {
    scan_dev<Op><<<grid_of(g.lines), kScanThreads, 0, s>>>(op, g, nullptr, kBlockLines);
  } else {
    const int64_t pairs = g.lines * g.chunks;
    Tensor buf = ::kiln::detail::empty_impl({pairs * static_cast<int64_t>(sizeof(Acc))},
                                            DType::UInt8, out.device());
    Acc* acc = static_cast<Acc*>(buf.data_ptr());
    scan_dev<Op><<<grid_of(pairs), kScanThreads, 0, s>>>(op, g, acc, kChunkTotals);
    scan_dev<Op>
        <<<blocks_for(g.lines, kScanThreads), kScanThreads, 0, s>>>(op, g, acc, kChunkCarries);
    scan_dev<Op><<<grid_of(pairs), kScanThreads, 0, s>>>(op, g, acc, kChunkScan);
  }
  check_launch(name, st);
}

template <bool kProd>
void cum_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  if (x.numel() == 0) return;
  DeviceGuard dg(device_of(out));
  const char* name = op_name(c.op);
  ScanGeom g = make_geom(out, out, x, c.attrs.i0, name);
  ::kiln::detail::dispatch_types<::kiln::detail::kNumericMask>(out.dtype(), name, [&]<class T>() {
    KILN_ASSERT(x.dtype() == out.dtype(), "cumsum/cumprod: input and output dtypes differ");
    launch_scan(
        CumOp<T, kProd>{static_cast<T*>(out.data_ptr()), static_cast<const T*>(x.data_ptr())}, g,
        out, name);
  });
}

template <bool kMax>
void cum_extreme_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const Tensor &vals = c.out[0], &idx = c.out[1];
  DeviceGuard dg(device_of(vals));
  const char* name = op_name(c.op);
  ScanGeom g = make_geom(vals, idx, x, c.attrs.i0, name);
  ::kiln::detail::dispatch_types<::kiln::detail::kRealMask>(x.dtype(), name, [&]<class T>() {
    launch_scan(CumExtremeOp<T, kMax>{static_cast<T*>(vals.data_ptr()),
                                      static_cast<int64_t*>(idx.data_ptr()),
                                      static_cast<const T*>(x.data_ptr())},
                g, vals, name);
  });
}

void logcumsumexp_gpu(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  if (x.numel() == 0) return;
  DeviceGuard dg(device_of(out));
  ScanGeom g = make_geom(out, out, x, c.attrs.i0, "logcumsumexp");
  ::kiln::detail::dispatch_types<::kiln::detail::kFloatMask | ::kiln::detail::kComplexMask>(
      x.dtype(), "logcumsumexp", [&]<class T>() {
        T* o = static_cast<T*>(out.data_ptr());
        const T* xp = static_cast<const T*>(x.data_ptr());
        if constexpr (::kiln::detail::is_complex_v<T>)
          launch_scan(LogCumComplexOp<T>{o, xp}, g, out, "logcumsumexp");
        else
          launch_scan(LogCumOp<T>{o, xp}, g, out, "logcumsumexp");
      });
}

}  // namespace

void register_scan_kernels(::kiln::detail::KernelRegistry& r) {
  r.set(OpId::CumSum, kCUDA, &cum_gpu<false>);
  r.set(OpId::CumProd, kCUDA, &cum_gpu<true>);
  r.set(OpId::CumMax, kCUDA, &cum_extreme_gpu<true>);
  r.set(OpId::CumMin, kCUDA, &cum_extreme_gpu<false>);
  r.set(OpId::LogCumSumExp, kCUDA, &logcumsumexp_gpu);
}

}  // namespace kiln::gpu
