// cuBLASLt/hipBLASLt behind the Bmm primitive (Note [GPU Bmm] in blas.h): the library loaded at
// run time, one handle per device, operand layouts, algorithm cache, workspace.
#include "backend/gpu/vendor.h"
#include "backend/gpu/vendor/blaslt.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "backend/gpu/blas.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "kiln/ops.h"
#include "kiln/ops/gpu_settings.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

#if KILN_GPU_LT_AVAILABLE

namespace {

struct LtApi {
  decltype(&GPULT_FN(Create)) create = nullptr;
  decltype(&GPULT_FN(MatmulDescCreate)) desc_create = nullptr;
  decltype(&GPULT_FN(MatmulDescDestroy)) desc_destroy = nullptr;
  decltype(&GPULT_FN(MatmulDescSetAttribute)) desc_set = nullptr;
  decltype(&GPULT_FN(MatrixLayoutCreate)) layout_create = nullptr;
  decltype(&GPULT_FN(MatrixLayoutDestroy)) layout_destroy = nullptr;
  decltype(&GPULT_FN(MatrixLayoutSetAttribute)) layout_set = nullptr;
  decltype(&GPULT_FN(MatmulPreferenceCreate)) pref_create = nullptr;
  decltype(&GPULT_FN(MatmulPreferenceDestroy)) pref_destroy = nullptr;
  decltype(&GPULT_FN(MatmulPreferenceSetAttribute)) pref_set = nullptr;
  decltype(&GPULT_FN(MatmulAlgoGetHeuristic)) heuristic = nullptr;
  decltype(&GPULT_FN(Matmul)) matmul = nullptr;
  std::string error;  // why the library is unusable; empty when loaded
};

const LtApi& lt_api() {
  static const LtApi api = [] {
    LtApi a;
    const char* env = std::getenv("KILN_BLASLT_LIBRARY");
    void* lib = dlopen(env && *env ? env : KILN_GPU_LT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib && !(env && *env)) lib = dlopen(KILN_GPU_LT_LIBRARY_ALT, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      a.error = std::string("cannot load ") + (env && *env ? env : KILN_GPU_LT_LIBRARY) +
                " (set KILN_BLASLT_LIBRARY to its path): " + dlerror();
      return a;
    }
    bool ok = true;
    auto get = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        ok = false;
        a.error = std::string("symbol ") + name + " missing";
      }
    };
    get(KILN_GPU_LT_SYM(Create), a.create);
    get(KILN_GPU_LT_SYM(MatmulDescCreate), a.desc_create);
    get(KILN_GPU_LT_SYM(MatmulDescDestroy), a.desc_destroy);
    get(KILN_GPU_LT_SYM(MatmulDescSetAttribute), a.desc_set);
    get(KILN_GPU_LT_SYM(MatrixLayoutCreate), a.layout_create);
    get(KILN_GPU_LT_SYM(MatrixLayoutDestroy), a.layout_destroy);
    get(KILN_GPU_LT_SYM(MatrixLayoutSetAttribute), a.layout_set);
    get(KILN_GPU_LT_SYM(MatmulPreferenceCreate), a.pref_create);
    get(KILN_GPU_LT_SYM(MatmulPreferenceDestroy), a.pref_destroy);
    get(KILN_GPU_LT_SYM(MatmulPreferenceSetAttribute), a.pref_set);
    get(KILN_GPU_LT_SYM(MatmulAlgoGetHeuristic), a.heuristic);
    get(KILN_GPU_LT_SYM(Matmul), a.matmul);
    (void)ok;
    return a;
  }();
  KILN_CHECK(api.error.empty(), "[bmm] the GPU BLAS library is unavailable: ", api.error);
  return api;
}

void lt_check(gpuLtStatus_t s, const char* call) {
  KILN_CHECK(s == GPULT_STATUS_SUCCESS, "[bmm] ", call, " failed with status ",
             static_cast<int>(s));
}

gpuLtHandle_t lt_handle(int device) {
  static std::mutex mu;
  static std::map<int, gpuLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  gpuLtHandle_t h = nullptr;
  lt_check(lt_api().create(&h), "create");
  handles[device] = h;
  return h;
}

constexpr int64_t kWorkspaceBytes = 32 << 20;

// A [rows, cols] row-major view as a column-major matrix: `trans` false means the storage is the
// transpose (unit column stride, ld = row stride), true means the matrix itself (unit row stride).
struct Operand {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

// `want_trans` tries the second reading first (conj(A) needs it: the libraries conjugate only
// together with a transpose).
Operand operand_of(const Tensor& t, bool want_trans = false) {
  const int64_t rows = t.size(1), cols = t.size(2), sr = t.stride(1), sc = t.stride(2);
  const bool row_ok = (cols == 1 || sc == 1) && (rows == 1 || sr >= std::max<int64_t>(1, cols));
  const bool col_ok = (rows == 1 || sr == 1) && (cols == 1 || sc >= std::max<int64_t>(1, rows));
  Operand o;
  if (row_ok && !(want_trans && col_ok)) {
    o.ok = true;
    o.trans = false;
    o.ld = rows == 1 ? std::max<int64_t>(1, cols) : sr;
  } else if (col_ok) {
    o.ok = true;
    o.trans = true;
    o.ld = cols == 1 ? std::max<int64_t>(1, rows) : sc;
  }
  return o;
}

struct TypeInfo {
  gpuLtDataType_t data;
  gpuLtComputeType_t compute;
  gpuLtDataType_t scale;
};

TypeInfo type_info(DType d) {
  const bool tf32 = ::kiln::detail::float32_matmul_allows_tf32();
  switch (d) {
    case DType::Float16:
      return {GPULT_R_16F, GPULT_COMPUTE_32F, GPULT_R_32F};
    case DType::BFloat16:
      return {GPULT_R_16BF, GPULT_COMPUTE_32F, GPULT_R_32F};
    case DType::Float32:
      return {GPULT_R_32F, tf32 ? GPULT_COMPUTE_32F_FAST_TF32 : GPULT_COMPUTE_32F, GPULT_R_32F};
    case DType::Float64:
      return {GPULT_R_64F, GPULT_COMPUTE_64F, GPULT_R_64F};
    case DType::Complex64:
      return {GPULT_C_32F, tf32 ? GPULT_COMPUTE_32F_FAST_TF32 : GPULT_COMPUTE_32F, GPULT_C_32F};
    case DType::Complex128:
      return {GPULT_C_64F, GPULT_COMPUTE_64F, GPULT_C_64F};
    default:
      KILN_ERROR("[bmm] \"bmm_cuda\" not implemented for '", dtype_name(d),
                 "' (GPU matmuls support float16, bfloat16, float32, float64, complex64, "
                 "complex128)");
  }
}

// Alpha/beta in the scale type, as raw bytes.
struct ScaleBytes {
  alignas(16) unsigned char b[16];
};
ScaleBytes scale_of(const Scalar& s, DType d) {
  ScaleBytes r{};
  complex<double> v = s.to_complex();
  switch (d) {
    case DType::Float64: {
      double x = v.real();
      std::memcpy(r.b, &x, 8);
      break;
    }
    case DType::Complex64: {
      float x[2] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
      std::memcpy(r.b, x, 8);
      break;
    }
    case DType::Complex128: {
      double x[2] = {v.real(), v.imag()};
      std::memcpy(r.b, x, 16);
      break;
    }
    default: {
      float x = static_cast<float>(v.real());
      std::memcpy(r.b, &x, 4);
    }
  }
  return r;
}

// RAII for the descriptors of one call.
struct Descs {
  const LtApi& api;
  gpuLtMatmulDesc_t op = nullptr;
  gpuLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  gpuLtMatmulPreference_t pref = nullptr;
  explicit Descs(const LtApi& x) : api(x) {}
  ~Descs() {
    if (pref) api.pref_destroy(pref);
    if (d) api.layout_destroy(d);
    if (c) api.layout_destroy(c);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (op) api.desc_destroy(op);
  }
};

gpuLtMatrixLayout_t make_layout(const LtApi& api, gpuLtDataType_t t, int64_t rows, int64_t cols,
                                int64_t ld, int64_t batch, int64_t batch_stride) {
  gpuLtMatrixLayout_t l = nullptr;
  lt_check(api.layout_create(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
           "matrix layout");
  if (batch > 1) {
    int32_t bc = static_cast<int32_t>(batch);
    lt_check(api.layout_set(l, GPULT_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)), "batch count");
    lt_check(api.layout_set(l, GPULT_LAYOUT_BATCH_OFFSET, &batch_stride, sizeof(batch_stride)),
             "batch stride");
  }
  return l;
}

using AlgoKey = std::tuple<int, int, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int, int, bool, uintptr_t, int, int64_t>;

// Large problems time the heuristic's candidates once (first call per shape) and keep the
// fastest; small ones, problems that accumulate into their output, and calls during graph capture
// take the heuristic's first choice. Timing (Note [GPU Bmm]): every candidate once (3 calls after
// a warm-up), then the 3 fastest plus the heuristic's first choice again, interleaved over 3
// rounds with at least ~2 ms of work per measurement, best of the rounds: one noisy measurement
// (clocks ramping up, another process) no longer decides the choice for the rest of the run.
template <class Run>
gpuLtMatmulHeuristicResult_t tune(const gpuLtMatmulHeuristicResult_t* cand, int found, Run& run,
                                  StreamHandle stream, double flops, bool accumulates) {
  if (found < 2 || flops < 1e10 || accumulates) return cand[0];
  auto s = reinterpret_cast<gpuStream_t>(stream);
  gpuStreamCaptureStatus cs = gpuStreamCaptureStatusNone;
  if (gpuStreamIsCapturing(s, &cs) != gpuSuccess || cs != gpuStreamCaptureStatusNone) {
    (void)gpuGetLastError();
    return cand[0];
  }
  gpuEvent_t e0, e1;
  KILN_GPU_CHECK("bmm", gpuEventCreateWithFlags(&e0, gpuEventDefault));
  KILN_GPU_CHECK("bmm", gpuEventCreateWithFlags(&e1, gpuEventDefault));
  // ms per call of candidate i over `reps` calls; negative when it fails.
  auto time_one = [&](int i, int reps) -> float {
    KILN_GPU_CHECK("bmm", gpuEventRecord(e0, s));
    for (int k = 0; k < reps; ++k)
      if (run(cand[i]) != GPULT_STATUS_SUCCESS) return -1;
    KILN_GPU_CHECK("bmm", gpuEventRecord(e1, s));
    KILN_GPU_CHECK("bmm", gpuEventSynchronize(e1));
    float ms = 0;
    KILN_GPU_CHECK("bmm", gpuEventElapsedTime(&ms, e0, e1));
    return ms / static_cast<float>(reps);
  };
  constexpr int kMaxCand = 64;
  found = found < kMaxCand ? found : kMaxCand;
  float first[kMaxCand];
  for (int i = 0; i < found; ++i) {
    first[i] = -1;
    if (cand[i].state != GPULT_STATUS_SUCCESS || run(cand[i]) != GPULT_STATUS_SUCCESS) continue;
    first[i] = time_one(i, 3);
  }
  // Finalists: the heuristic's first choice and the 3 fastest of the first pass.
  int fin[4] = {0, -1, -1, -1};
  int nfin = 1;
  for (int f = 0; f < 3; ++f) {
    int best = -1;
    for (int i = 1; i < found; ++i) {
      bool taken = false;
      for (int j = 0; j < nfin; ++j) taken = taken || fin[j] == i;
      if (!taken && first[i] > 0 && (best < 0 || first[i] < first[best])) best = i;
    }
    if (best >= 0) fin[nfin++] = best;
  }
  float est = first[0] > 0 ? first[0] : (nfin > 1 ? first[fin[1]] : 1.0f);
  const int reps = est > 0 ? std::max(3, std::min(50, static_cast<int>(2.0f / est) + 1)) : 3;
  float best_ms[4] = {-1, -1, -1, -1};
  for (int round = 0; round < 3; ++round)
    for (int j = 0; j < nfin; ++j) {
      if (first[fin[j]] < 0) continue;
      float ms = time_one(fin[j], reps);
      if (ms > 0 && (best_ms[j] < 0 || ms < best_ms[j])) best_ms[j] = ms;
    }
  (void)gpuEventDestroy(e0);
  (void)gpuEventDestroy(e1);
  int pick = 0;
  for (int j = 0; j < nfin; ++j)
    if (best_ms[j] > 0 && (best_ms[pick] < 0 || best_ms[j] < best_ms[pick])) pick = j;
  return cand[fin[pick]];
}

// An epilogue of one product (Note [GPU matmul epilogues]): the library's mode and its vectors.
struct LtEpilogue {
  gpuLtEpilogue_t mode = GPULT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // bias (input) or bias gradient (output)
  void* aux = nullptr;         // GELU pre-activation (output of Gelu*, input of DGelu*)
  int64_t aux_ld = 0;
};

// out[b] = alpha * op(A[b]) @ B[b] + beta * C[b], then the epilogue (Note [GPU Bmm]). `soft`:
// return false (nothing written) instead of raising when the library has no algorithm for the
// problem (epilogues support only some operand layouts).
bool lt_matmul(Tensor A, Tensor B, Tensor C, const Scalar& alpha, const Scalar& beta,
               const Tensor& out, bool conj_flag, const LtEpilogue& ep, bool soft = false) {
  if (out.numel() == 0) return true;
  const DType dt = A.dtype();
  const TypeInfo ti = type_info(dt);
  const LtApi& api = lt_api();
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = A.size(2);
  int dev = out.device().index >= 0 ? out.device().index : current_device();
  DeviceGuard guard(dev);
  auto stream = current_stream(dev);
  const bool use_c = C.defined() && beta.to_complex() != complex<double>(0, 0);
  const bool conj_a = conj_flag && is_complex(dt);
  if (K == 0) {  // an empty sum: beta * C, or zeros (the libraries reject K == 0)
    KILN_ASSERT(ep.mode == GPULT_EPILOGUE_DEFAULT);
    if (use_c)
      const_cast<Tensor&>(out).copy_(mul(C, beta));
    else
      const_cast<Tensor&>(out).fill_(Scalar(0));
    return true;
  }
  // Operands in a layout cuBLASLt reads; conj(A) needs A in the transposed layout (op C).
  Operand oa = operand_of(A, conj_a), ob = operand_of(B);
  if (!oa.ok || (conj_a && !oa.trans)) {
    A = A.transpose(1, 2).contiguous().transpose(1, 2);
    oa = operand_of(A, conj_a);
  }
  if (!ob.ok) {
    B = B.contiguous();
    ob = operand_of(B);
  }
  // The output must be row-major (unit column stride); otherwise go through a temporary.
  Operand od = operand_of(out);
  Tensor D = out;
  if (!od.ok || od.trans) {
    D = ::kiln::detail::empty_impl(out.sizes(), dt, out.device());
    od = operand_of(D);
  }
  Operand oc = od;
  if (use_c) {
    if (C.is_same(out) && D.is_same(out)) {
      oc = od;
    } else {
      oc = operand_of(C);
      if (!oc.ok || oc.trans) {
        C = C.contiguous();
        oc = operand_of(C);
      }
    }
  }
  // Column-major view: D^T [N, M] = B^T [N, K] * A^T [K, M] (+ C^T). Lt's "A" is kiln's B.
  Descs ds(api);
  lt_check(api.desc_create(&ds.op, ti.compute, ti.scale), "matmul desc");
  gpuLtOperation_t ta = ob.trans ? GPULT_OP_T : GPULT_OP_N;
  gpuLtOperation_t tb = oa.trans ? (conj_a ? GPULT_OP_C : GPULT_OP_T) : GPULT_OP_N;
  lt_check(api.desc_set(ds.op, GPULT_DESC_TRANSA, &ta, sizeof(ta)), "transa");
  lt_check(api.desc_set(ds.op, GPULT_DESC_TRANSB, &tb, sizeof(tb)), "transb");
  if (ep.mode != GPULT_EPILOGUE_DEFAULT) {
    lt_check(api.desc_set(ds.op, GPULT_DESC_EPILOGUE, &ep.mode, sizeof(ep.mode)), "epilogue");
    if (ep.bias)
      lt_check(api.desc_set(ds.op, GPULT_DESC_BIAS_POINTER, &ep.bias, sizeof(ep.bias)), "bias");
    if (ep.aux) {
      lt_check(api.desc_set(ds.op, GPULT_DESC_AUX_POINTER, &ep.aux, sizeof(ep.aux)), "aux");
      lt_check(api.desc_set(ds.op, GPULT_DESC_AUX_LD, &ep.aux_ld, sizeof(ep.aux_ld)), "aux ld");
    }
  }
  const int64_t bsa = B.size(0) == 1 ? 0 : B.stride(0);
  const int64_t bsb = A.size(0) == 1 ? 0 : A.stride(0);
  ds.a = ob.trans ? make_layout(api, ti.data, K, N, ob.ld, batch, bsa)
                  : make_layout(api, ti.data, N, K, ob.ld, batch, bsa);
  ds.b = oa.trans ? make_layout(api, ti.data, M, K, oa.ld, batch, bsb)
                  : make_layout(api, ti.data, K, M, oa.ld, batch, bsb);
  ds.d = make_layout(api, ti.data, N, M, od.ld, batch, D.size(0) == 1 ? 0 : D.stride(0));
  const Tensor& Cin = use_c ? (C.is_same(out) && D.is_same(out) ? D : C) : D;
  ds.c = use_c ? make_layout(api, ti.data, N, M, oc.ld, batch, Cin.size(0) == 1 ? 0 : Cin.stride(0))
               : make_layout(api, ti.data, N, M, od.ld, batch, D.size(0) == 1 ? 0 : D.stride(0));
  // Algorithm: cached per problem.
  static std::mutex mu;
  static std::map<AlgoKey, gpuLtMatmulHeuristicResult_t> cache;
  AlgoKey key{
      dev,
      static_cast<int>(dt),
      static_cast<int>(ti.compute),
      static_cast<int>(ta),
      batch,
      M,
      N,
      K,
      oa.ld,
      ob.ld,
      od.ld,
      static_cast<int>(tb),
      use_c ? 1 : 0,
      use_c && oc.ld != od.ld,
      (reinterpret_cast<uintptr_t>(A.data_ptr()) | reinterpret_cast<uintptr_t>(B.data_ptr()) |
       reinterpret_cast<uintptr_t>(D.data_ptr()) | reinterpret_cast<uintptr_t>(ep.bias) |
       reinterpret_cast<uintptr_t>(ep.aux)) %
          16,
      static_cast<int>(ep.mode),
      ep.aux_ld};
  Tensor ws = ::kiln::detail::empty_impl({kWorkspaceBytes}, DType::UInt8, out.device());
  ScaleBytes al = scale_of(alpha, dt), be = scale_of(use_c ? beta : Scalar(0), dt);
  auto run = [&](const gpuLtMatmulHeuristicResult_t& h) {
    return api.matmul(lt_handle(dev), ds.op, al.b, B.data_ptr(), ds.a, A.data_ptr(), ds.b, be.b,
                      use_c ? Cin.data_ptr() : D.data_ptr(), ds.c, D.data_ptr(), ds.d, &h.algo,
                      ws.data_ptr(), kWorkspaceBytes, reinterpret_cast<gpuStream_t>(stream));
  };
  gpuLtMatmulHeuristicResult_t heur{};
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      heur = it->second;
    } else {
      lt_check(api.pref_create(&ds.pref), "preference");
      uint64_t wsb = kWorkspaceBytes;
      lt_check(api.pref_set(ds.pref, GPULT_PREF_MAX_WORKSPACE, &wsb, sizeof(wsb)),
               "workspace pref");
      constexpr int kCandidates = 24;
      gpuLtMatmulHeuristicResult_t cand[kCandidates] = {};
      int found = 0;
      const gpuLtStatus_t hs = api.heuristic(lt_handle(dev), ds.op, ds.a, ds.b, ds.c, ds.d, ds.pref,
                                             kCandidates, cand, &found);
      if (soft && (hs != GPULT_STATUS_SUCCESS || found == 0)) return false;
      lt_check(hs, "algorithm heuristic");
      KILN_CHECK(found > 0, "[bmm] cuBLASLt found no algorithm for [", batch, ", ", M, ", ", K,
                 "] x [", batch, ", ", K, ", ", N, "] in ", dtype_name(dt));
      heur = tune(cand, found, run, stream, 2.0 * batch * M * N * K,
                  use_c && Cin.data_ptr() == D.data_ptr());
      cache[key] = heur;
    }
  }
  lt_check(run(heur), "matmul");
  check_launch("bmm", stream);
  if (!D.is_same(out)) const_cast<Tensor&>(out).copy_(D);
  return true;
}

bool bias_epilogue_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_LT_BIAS_EPILOGUE");
    return !(e && std::string(e) == "0");
  }();
  return on;
}

}  // namespace

void bmm_kernel(OpCall& c) {
  const Tensor& A = c.in[0];
  Tensor C = c.in.size() > 2 ? c.in[2] : Tensor();
  const Tensor& out = c.out[0];
  const Scalar alpha = c.attrs.has_s0 ? c.attrs.s0 : Scalar(1);
  const Scalar beta = c.attrs.has_s1 ? c.attrs.s1 : Scalar(0);
  // A row vector broadcast over the rows of one product with beta = 1 (linear's and addmm's bias)
  // goes in as the bias epilogue instead of a materialized [M, N] C (Note [GPU matmul epilogues]).
  const DType dt = A.dtype();
  LtEpilogue ep;
  const Tensor C0 = C;
  if (C.defined() && bias_epilogue_enabled() && beta.to_complex() == complex<double>(1, 0) &&
      (dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32) && out.size(0) == 1 &&
      out.size(1) > 1 && out.size(2) > 1 && A.size(2) > 0 && C.stride(1) == 0 && C.stride(2) == 1 &&
      !C.is_same(out)) {
    ep.mode = GPULT_EPILOGUE_BIAS;
    ep.bias = C.data_ptr();
    C = Tensor();
  }
  if (!lt_matmul(A, c.in[1], C, alpha, beta, out, c.attrs.flag, ep, /*soft=*/ep.bias != nullptr))
    lt_matmul(A, c.in[1], C0, alpha, beta, out, c.attrs.flag, LtEpilogue{});
}

Tensor matmul_epilogue(const Tensor& a, const Tensor& b, const Tensor& bias, Epilogue e,
                       Tensor* aux) {
  const char* op = "matmul_epilogue";
  KILN_CHECK(a.defined() && b.defined() && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0),
             "[", op, "] expected matrices [M, K] and [K, N]");
  const DType dt = a.dtype();
  KILN_CHECK(b.dtype() == dt && a.is_cuda() && b.device() == a.device(), "[", op,
             "] operands must share a dtype and a cuda device");
  KILN_CHECK(dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32, "[", op,
             "] supports float16, bfloat16 and float32, got ", dtype_name(dt));
  const int64_t M = a.size(0), N = b.size(1);
  KILN_CHECK(a.size(1) > 0, "[", op, "] needs K > 0");
  Tensor out = ::kiln::detail::empty_impl({M, N}, dt, a.device());
  LtEpilogue ep;
  auto check_vec = [&](int64_t n, const char* what) {
    KILN_CHECK(bias.defined() && bias.dim() == 1 && bias.size(0) == n && bias.dtype() == dt &&
                   bias.is_contiguous() && bias.device() == a.device(),
               "[", op, "] expected a contiguous ", what, " of shape [", n, "] and dtype ",
               dtype_name(dt));
    ep.bias = bias.data_ptr();
  };
  // Aux [M, N] with a row stride divisible by 8, as the libraries require.
  auto make_aux = [&]() {
    KILN_CHECK(aux != nullptr, "[", op, "] this epilogue needs an aux tensor");
    const int64_t ld = (N + 7) / 8 * 8;
    *aux = ::kiln::detail::empty_impl({M, ld}, dt, a.device()).narrow(1, 0, N);
    ep.aux = aux->data_ptr();
    ep.aux_ld = ld;
  };
  auto use_aux = [&]() {
    KILN_CHECK(aux != nullptr && aux->defined() && aux->dim() == 2 && aux->size(0) == M &&
                   aux->size(1) == N && aux->stride(1) == 1 && aux->stride(0) % 8 == 0 &&
                   aux->stride(0) >= N && aux->dtype() == dt && aux->device() == a.device(),
               "[", op, "] expected aux of shape [", M, ", ", N,
               "] with unit column stride and a row stride divisible by 8");
    ep.aux = aux->data_ptr();
    ep.aux_ld = aux->stride(0);
  };
  switch (e) {
    case Epilogue::Bias:
      check_vec(N, "bias");
      ep.mode = GPULT_EPILOGUE_BIAS;
      break;
    case Epilogue::Gelu:
      ep.mode = aux ? GPULT_EPILOGUE_GELU_AUX : GPULT_EPILOGUE_GELU;
      if (aux) make_aux();
      break;
    case Epilogue::GeluBias:
      check_vec(N, "bias");
      ep.mode = aux ? GPULT_EPILOGUE_GELU_AUX_BIAS : GPULT_EPILOGUE_GELU_BIAS;
      if (aux) make_aux();
      break;
    case Epilogue::DGelu:
      use_aux();
      ep.mode = GPULT_EPILOGUE_DGELU;
      break;
    case Epilogue::DGeluBGrad:
      use_aux();
      check_vec(N, "bias gradient");
      ep.mode = GPULT_EPILOGUE_DGELU_BGRAD;
      break;
    case Epilogue::BGradA:  // the library's B is kiln's a (column-major reading)
      check_vec(M, "bias gradient");
      ep.mode = GPULT_EPILOGUE_BGRADB;
      break;
    case Epilogue::BGradB:
      check_vec(N, "bias gradient");
      ep.mode = GPULT_EPILOGUE_BGRADA;
      break;
  }
  // The libraries support the gradient epilogues only for some operand layouts: the operands as
  // given first, then with one or both copied to the other layout (row- <-> column-major).
  auto flip = [](const Tensor& t) {
    return t.stride(1) == 1 ? t.t().contiguous().t() : t.contiguous();
  };
  for (int i = 0; i < 4; ++i) {
    const Tensor aa = (i & 1) ? flip(a) : a, bb = (i & 2) ? flip(b) : b;
    if (lt_matmul(aa.unsqueeze(0), bb.unsqueeze(0), Tensor(), Scalar(1), Scalar(0),
                  out.unsqueeze(0), false, ep, /*soft=*/true))
      return out;
  }
  KILN_ERROR("[", op, "] the GPU BLAS library has no algorithm for epilogue ", static_cast<int>(e),
             " (cuBLASLt mode ", static_cast<int>(ep.mode), ") on ", dtype_name(dt), " [", M, ", ",
             a.size(1), "] x [", a.size(1), ", ", N, "]");
}

#else  // no BLASLt headers at build time (HIP without hipBLASLt)

void bmm_kernel(OpCall& c) {
  (void)c;
  KILN_ERROR("[bmm] kiln was built without hipBLASLt: GPU matmuls are unavailable");
}

Tensor matmul_epilogue(const Tensor&, const Tensor&, const Tensor&, Epilogue, Tensor*) {
  KILN_ERROR("[matmul_epilogue] kiln was built without hipBLASLt: GPU matmuls are unavailable");
}

#endif

}  // namespace kiln::gpu
