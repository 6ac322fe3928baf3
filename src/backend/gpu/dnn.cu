// cuDNN behind the GPU convolution kernels (Note [cuDNN convolutions] in dnn.h): the library
// loaded at run time, one handle per device, descriptors, the per-problem algorithm cache and the
// three legacy convolution calls. Pooling: dnn_pool.cu.
#include "backend/gpu/vendor.h"
#include "backend/gpu/vendor/dnn.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/gpu/dnn.h"
#include "backend/gpu/dnn_lib.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "kiln/ops/determinism.h"
#include "kiln/ops/gpu_settings.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu::dnn {

namespace {
std::atomic<int64_t> g_searches{0}, g_pool_calls{0};
}  // namespace

int64_t algo_search_count() { return g_searches.load(); }
int64_t pool_call_count() { return g_pool_calls.load(); }
void count_pool_call() { g_pool_calls.fetch_add(1); }

#if KILN_GPU_DNN_AVAILABLE

const DnnApi& dnn_api() {
  static const DnnApi api = [] {
    DnnApi a;
    const char* off = std::getenv("KILN_DISABLE_CUDNN");
    if (off && *off && std::string(off) != "0") {
      a.error = "KILN_DISABLE_CUDNN is set";
      return a;
    }
    const char* env = std::getenv("KILN_CUDNN_LIBRARY");
    const bool has_env = env && *env;
    void* lib = dlopen(has_env ? env : KILN_GPU_DNN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib && !has_env) lib = dlopen(KILN_GPU_DNN_LIBRARY_ALT, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      a.error = std::string("cannot load ") + (has_env ? env : KILN_GPU_DNN_LIBRARY) +
                " (set KILN_CUDNN_LIBRARY to its path): " + (why ? why : "");
      return a;
    }
    auto get = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && a.error.empty()) a.error = std::string("symbol ") + name + " missing";
    };
    get(KILN_GPU_DNN_SYM(Create), a.create);
    get(KILN_GPU_DNN_SYM(SetStream), a.set_stream);
    get(KILN_GPU_DNN_SYM(GetErrorString), a.error_string);
    get(KILN_GPU_DNN_SYM(CreateTensorDescriptor), a.tensor_create);
    get(KILN_GPU_DNN_SYM(SetTensorNdDescriptor), a.tensor_set);
    get(KILN_GPU_DNN_SYM(DestroyTensorDescriptor), a.tensor_destroy);
    get(KILN_GPU_DNN_SYM(CreateFilterDescriptor), a.filter_create);
    get(KILN_GPU_DNN_SYM(SetFilterNdDescriptor), a.filter_set);
    get(KILN_GPU_DNN_SYM(DestroyFilterDescriptor), a.filter_destroy);
    get(KILN_GPU_DNN_SYM(CreateConvolutionDescriptor), a.conv_create);
    get(KILN_GPU_DNN_SYM(SetConvolutionNdDescriptor), a.conv_set);
    get(KILN_GPU_DNN_SYM(SetConvolutionGroupCount), a.conv_groups);
    get(KILN_GPU_DNN_SYM(SetConvolutionMathType), a.conv_math);
    get(KILN_GPU_DNN_SYM(DestroyConvolutionDescriptor), a.conv_destroy);
    get(KILN_GPU_DNN_SYM(GetConvolutionForwardAlgorithm_v7), a.fwd_get);
    get(KILN_GPU_DNN_SYM(FindConvolutionForwardAlgorithmEx), a.fwd_find);
    get(KILN_GPU_DNN_SYM(ConvolutionForward), a.fwd);
    get(KILN_GPU_DNN_SYM(GetConvolutionBackwardDataAlgorithm_v7), a.bwd_data_get);
    get(KILN_GPU_DNN_SYM(FindConvolutionBackwardDataAlgorithmEx), a.bwd_data_find);
    get(KILN_GPU_DNN_SYM(ConvolutionBackwardData), a.bwd_data);
    get(KILN_GPU_DNN_SYM(GetConvolutionBackwardFilterAlgorithm_v7), a.bwd_filter_get);
    get(KILN_GPU_DNN_SYM(FindConvolutionBackwardFilterAlgorithmEx), a.bwd_filter_find);
    get(KILN_GPU_DNN_SYM(ConvolutionBackwardFilter), a.bwd_filter);
    // Optional symbols: their absence turns one feature off, not the library.
    auto opt = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    };
    opt(KILN_GPU_DNN_SYM(CreatePoolingDescriptor), a.pool_create);
    opt(KILN_GPU_DNN_SYM(SetPoolingNdDescriptor), a.pool_set);
    opt(KILN_GPU_DNN_SYM(DestroyPoolingDescriptor), a.pool_destroy);
    opt(KILN_GPU_DNN_SYM(PoolingForward), a.pool_fwd);
    opt(KILN_GPU_DNN_SYM(PoolingBackward), a.pool_bwd);
    a.pooling = a.pool_create && a.pool_set && a.pool_destroy && a.pool_fwd && a.pool_bwd;
    const char* g = std::getenv("KILN_CUDNN_GRAPH");
    if (!(g && std::string(g) == "0")) {
      opt(KILN_GPU_DNN_SYM(BackendCreateDescriptor), a.be_create);
      opt(KILN_GPU_DNN_SYM(BackendDestroyDescriptor), a.be_destroy);
      opt(KILN_GPU_DNN_SYM(BackendFinalize), a.be_finalize);
      opt(KILN_GPU_DNN_SYM(BackendSetAttribute), a.be_set);
      opt(KILN_GPU_DNN_SYM(BackendGetAttribute), a.be_get);
      opt(KILN_GPU_DNN_SYM(BackendExecute), a.be_execute);
      a.graph =
          a.be_create && a.be_destroy && a.be_finalize && a.be_set && a.be_get && a.be_execute;
    }
    return a;
  }();
  return api;
}

void dnn_check(gpuDnnStatus_t s, const char* op, const char* call) {
  if (s == GPUDNN_STATUS_SUCCESS) return;
  const char* msg = dnn_api().error_string ? dnn_api().error_string(s) : "";
  KILN_ERROR("[", op, "] cuDNN ", call, " failed: ", msg, " (status ", static_cast<int>(s), ")");
}

gpuDnnHandle_t dnn_handle(int device, gpuStream_t stream, const char* op) {
  static std::mutex mu;
  static std::map<int, gpuDnnHandle_t> handles;
  gpuDnnHandle_t h = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = handles.find(device);
    if (it != handles.end()) {
      h = it->second;
    } else {
      dnn_check(dnn_api().create(&h), op, "create");
      handles[device] = h;
    }
  }
  dnn_check(dnn_api().set_stream(h, stream), op, "set stream");
  return h;
}

enum class Kind { Forward, BackwardData, BackwardFilter };

const char* kind_op(Kind k) {
  switch (k) {
    case Kind::Forward:
      return "convolution";
    case Kind::BackwardData:
      return "convolution_backward_input";
    default:
      return "convolution_backward_weight";
  }
}

bool data_type(DType d, gpuDnnDataType_t* data, gpuDnnDataType_t* compute) {
  switch (d) {
    case DType::Float16:
      *data = GPUDNN_DATA_HALF, *compute = GPUDNN_DATA_FLOAT;
      return true;
    case DType::BFloat16:
      *data = GPUDNN_DATA_BFLOAT16, *compute = GPUDNN_DATA_FLOAT;
      return true;
    case DType::Float32:
      *data = GPUDNN_DATA_FLOAT, *compute = GPUDNN_DATA_FLOAT;
      return true;
    case DType::Float64:
      *data = GPUDNN_DATA_DOUBLE, *compute = GPUDNN_DATA_DOUBLE;
      return true;
    default:
      return false;
  }
}

namespace {

// The problem: x [N, C, D, H, W], w [O, C/G, KD, KH, KW], y [N, O, OD, OH, OW].
struct Problem {
  Kind kind;
  int device;
  DType dtype;
  int64_t x[5], w[5], y[5];
  ConvParams p;
  // 4-D descriptors (2-D convolution) when the depth axis is trivial.
  bool flat() const { return x[2] == 1 && w[2] == 1 && p.pad[0] == 0 && y[2] == 1; }
  bool fits() const {
    int64_t nx = 1, nw = 1, ny = 1;
    for (int i = 0; i < 5; ++i) nx *= x[i], nw *= w[i], ny *= y[i];
    return nx < INT_MAX && nw < INT_MAX && ny < INT_MAX;
  }
};

// Owns the descriptors of one problem.
struct Descs {
  const DnnApi& api;
  gpuDnnTensorDesc_t x = nullptr, y = nullptr;
  gpuDnnFilterDesc_t w = nullptr;
  gpuDnnConvDesc_t conv = nullptr;
  gpuDnnMathType_t math = GPUDNN_DEFAULT_MATH;
  explicit Descs(const DnnApi& a) : api(a) {}
  ~Descs() {
    if (conv) api.conv_destroy(conv);
    if (w) api.filter_destroy(w);
    if (y) api.tensor_destroy(y);
    if (x) api.tensor_destroy(x);
  }
  // False when cuDNN rejects the descriptors (an unsupported combination).
  bool init(const Problem& pb) {
    gpuDnnDataType_t data, compute;
    if (!data_type(pb.dtype, &data, &compute)) return false;
    const int skip = pb.flat() ? 1 : 0, nd = 5 - skip;
    auto dims = [&](const int64_t* s, int* d, int* st) {
      int j = 0;
      for (int i = 0; i < 5; ++i)
        if (!(skip && i == 2)) d[j++] = static_cast<int>(s[i]);
      st[nd - 1] = 1;
      for (int i = nd - 2; i >= 0; --i) st[i] = st[i + 1] * d[i + 1];
    };
    int xd[5], xs[5], yd[5], ys[5], wd[5], ws[5];
    dims(pb.x, xd, xs);
    dims(pb.y, yd, ys);
    dims(pb.w, wd, ws);
    int pad[3], str[3], dil[3];
    for (int i = skip, j = 0; i < 3; ++i, ++j) {
      pad[j] = static_cast<int>(pb.p.pad[i]);
      str[j] = static_cast<int>(pb.p.stride[i]);
      dil[j] = static_cast<int>(pb.p.dil[i]);
    }
    if (api.tensor_create(&x) != GPUDNN_STATUS_SUCCESS ||
        api.tensor_create(&y) != GPUDNN_STATUS_SUCCESS ||
        api.filter_create(&w) != GPUDNN_STATUS_SUCCESS ||
        api.conv_create(&conv) != GPUDNN_STATUS_SUCCESS)
      KILN_ERROR("[", kind_op(pb.kind), "] cuDNN could not create descriptors");
    if (api.tensor_set(x, data, nd, xd, xs) != GPUDNN_STATUS_SUCCESS) return false;
    if (api.tensor_set(y, data, nd, yd, ys) != GPUDNN_STATUS_SUCCESS) return false;
    if (api.filter_set(w, data, GPUDNN_TENSOR_NCHW, nd, wd) != GPUDNN_STATUS_SUCCESS) return false;
    if (api.conv_set(conv, nd - 2, pad, str, dil, GPUDNN_CROSS_CORRELATION, compute) !=
        GPUDNN_STATUS_SUCCESS)
      return false;
    if (api.conv_groups(conv, static_cast<int>(pb.p.groups)) != GPUDNN_STATUS_SUCCESS) return false;
    return set_math(default_math(pb.dtype));
  }
  static gpuDnnMathType_t default_math(DType d) {
    if (d == DType::Float16 || d == DType::BFloat16) return GPUDNN_TENSOR_OP_MATH;
    if (d == DType::Float32)
      return ::kiln::detail::float32_matmul_allows_tf32() ? GPUDNN_TENSOR_OP_MATH : GPUDNN_FMA_MATH;
    return GPUDNN_DEFAULT_MATH;
  }
  bool set_math(gpuDnnMathType_t m) {
    math = m;
    return api.conv_math(conv, m) == GPUDNN_STATUS_SUCCESS;
  }
};

struct Choice {
  bool ok = false;  // false: no algorithm runs this problem (callers fall back)
  int algo = 0;
  gpuDnnMathType_t math = GPUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

using Key = std::vector<int64_t>;

Key key_of(const Problem& pb, bool tf32, bool det, int64_t align) {
  Key k{static_cast<int64_t>(pb.kind),
        pb.device,
        static_cast<int64_t>(pb.dtype),
        tf32,
        det,
        pb.p.groups,
        align};
  for (int i = 0; i < 5; ++i) k.push_back(pb.x[i]), k.push_back(pb.w[i]), k.push_back(pb.y[i]);
  for (int i = 0; i < 3; ++i)
    k.push_back(pb.p.stride[i]), k.push_back(pb.p.pad[i]), k.push_back(pb.p.dil[i]);
  return k;
}

constexpr size_t kFindWorkspaceCap = size_t{1} << 30;
constexpr int kMaxAlgos = 16;

Tensor workspace(size_t bytes, int device) {
  if (bytes == 0) return Tensor();
  return ::kiln::detail::empty_impl({static_cast<int64_t>(bytes)}, DType::UInt8,
                                    Device(kCUDA, device));
}

bool capturing(gpuStream_t s) {
  gpuStreamCaptureStatus cs = gpuStreamCaptureStatusNone;
  if (gpuStreamIsCapturing(s, &cs) != gpuSuccess) {
    (void)gpuGetLastError();
    return true;
  }
  return cs != gpuStreamCaptureStatusNone;
}

// Picks from perf results (best first): successful, deterministic when required, and for float32
// without TF32 never a tensor-op math type.
template <class Perf>
Choice pick(const Perf* perf, int n, const Problem& pb, bool det, bool tf32, size_t ws_limit) {
  Choice c;
  for (int i = 0; i < n; ++i) {
    const Perf& r = perf[i];
    if (r.status != GPUDNN_STATUS_SUCCESS || r.memory > ws_limit) continue;
    if (det && r.determinism != GPUDNN_DETERMINISTIC) continue;
    gpuDnnMathType_t m = r.mathType;
    if (pb.dtype == DType::Float32 && !tf32) {
      if (m != GPUDNN_FMA_MATH && m != GPUDNN_DEFAULT_MATH) continue;
      m = GPUDNN_FMA_MATH;
    }
    c.ok = true;
    c.algo = static_cast<int>(r.algo);
    c.math = m;
    c.workspace = r.memory;
    return c;
  }
  return c;
}

// Searches the algorithm for a problem: the heuristics' candidates give the workspace to time
// them with, then FindEx times them on the call's buffers (a, b: inputs; out: the output, which
// the search overwrites); during graph capture the heuristics' order alone decides.
template <class Perf, class Get, class Find>
Choice search(const Problem& pb, Descs& d, Get get, Find find, bool det, bool tf32,
              gpuStream_t stream) {
  Perf perf[kMaxAlgos] = {};
  int n = 0;
  if (get(perf, &n) != GPUDNN_STATUS_SUCCESS) return Choice{};
  if (capturing(stream)) return pick(perf, n, pb, det, tf32, SIZE_MAX);
  size_t need = 0;
  for (int i = 0; i < n; ++i)
    if (perf[i].status == GPUDNN_STATUS_SUCCESS && perf[i].memory <= kFindWorkspaceCap)
      need = std::max(need, perf[i].memory);
  Tensor ws;
  for (;;) {
    try {
      ws = workspace(need, pb.device);
      break;
    } catch (const Error&) {
      if (need == 0) throw;
      need /= 4;
    }
  }
  Perf found[kMaxAlgos] = {};
  int nf = 0;
  const gpuDnnStatus_t s = find(found, &nf, ws.defined() ? ws.data_ptr() : nullptr, need);
  if (s != GPUDNN_STATUS_SUCCESS) return pick(perf, n, pb, det, tf32, need);
  Choice c = pick(found, nf, pb, det, tf32, need);
  return c.ok ? c : pick(perf, n, pb, det, tf32, need);
}

// Note [cuDNN graph path]
// A problem is first tried through the graph (backend) API, as PyTorch's cuDNN v8 path does
// (KILN_CUDNN_GRAPH=0 turns this off): one convolution node, heuristics mode A, engine
// configurations filtered by their numerical notes (no down-converted inputs for float32/float64,
// no reduced-precision reductions, no tensor cores for float32 without TF32, no nondeterministic
// engines in deterministic mode), up to 4 execution plans built and timed on the call's buffers (3
// runs each after a warm-up; the heuristics' first during graph capture), the fastest kept for the
// problem. Problems the graph API cannot run fall back to the legacy calls above. Why: on the H200
// the legacy calls cost ~80-120 us of host time each and their bfloat16 kernels ran at 0.44x
// PyTorch (N32 C64->64 56x56 3x3), the graph plans at 1.01-1.03x (bench/run_conv_bench.sh).

using BeDesc = cudnnBackendDescriptor_t;

struct GraphPlan {
  BeDesc plan = nullptr;
  int64_t workspace = 0;
};

// Descriptors of one graph build, destroyed together (the chosen plan is released from it).
struct BeScope {
  const DnnApi& api;
  std::vector<BeDesc> owned;
  explicit BeScope(const DnnApi& a) : api(a) {}
  ~BeScope() {
    for (auto it = owned.rbegin(); it != owned.rend(); ++it) api.be_destroy(*it);
  }
  BeDesc make(cudnnBackendDescriptorType_t t) {
    BeDesc d = nullptr;
    if (api.be_create(t, &d) != GPUDNN_STATUS_SUCCESS) return nullptr;
    owned.push_back(d);
    return d;
  }
  void release(BeDesc d) { owned.erase(std::remove(owned.begin(), owned.end(), d), owned.end()); }
};

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;

// One execution of a plan on (x, w, y) with a workspace; false when the library refuses it.
bool run_graph(const DnnApi& api, gpuDnnHandle_t h, const GraphPlan& g, void* px, void* pw,
               void* py, void* ws) {
  cudnnBackendDescriptor_t vp = nullptr;
  if (api.be_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp) != GPUDNN_STATUS_SUCCESS)
    return false;
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  void* ptrs[3] = {px, pw, py};
  const bool good = api.be_set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids) ==
                        GPUDNN_STATUS_SUCCESS &&
                    api.be_set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                               ptrs) == GPUDNN_STATUS_SUCCESS &&
                    api.be_set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                               &ws) == GPUDNN_STATUS_SUCCESS &&
                    api.be_finalize(vp) == GPUDNN_STATUS_SUCCESS &&
                    api.be_execute(h, g.plan, vp) == GPUDNN_STATUS_SUCCESS;
  api.be_destroy(vp);
  return good;
}

// Builds (and, outside capture, times) the plans of one problem; plan null when none runs it.
GraphPlan build_graph(const Problem& pb, gpuDnnHandle_t h, bool det, bool tf32, void* px, void* pw,
                      void* py, int64_t align, gpuStream_t stream) {
  const DnnApi& api = dnn_api();
  BeScope sc(api);
  GraphPlan none;
  gpuDnnDataType_t data, compute;
  if (!data_type(pb.dtype, &data, &compute)) return none;
  auto ok = [](gpuDnnStatus_t s) { return s == GPUDNN_STATUS_SUCCESS; };
  auto set = [&](BeDesc d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t,
                 int64_t count, const void* v) { return ok(api.be_set(d, n, t, count, v)); };
  const int skip = pb.flat() ? 1 : 0, nd = 5 - skip;
  // Byte alignment of the buffers (a power of two up to 16).
  int64_t al = 16;
  while (al > 1 && align % al != 0) al /= 2;
  if (align == 0) al = 16;
  auto tensor = [&](const int64_t* sizes, int64_t uid) -> BeDesc {
    int64_t dims[5], strides[5];
    int j = 0;
    for (int i = 0; i < 5; ++i)
      if (!(skip && i == 2)) dims[j++] = sizes[i];
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
    BeDesc t = sc.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (!t || !set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &data) ||
        !set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims) ||
        !set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides) ||
        !set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) ||
        !set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al) ||
        !ok(api.be_finalize(t)))
      return nullptr;
    return t;
  };
  BeDesc tx = tensor(pb.x, kUidX), tw = tensor(pb.w, kUidW), ty = tensor(pb.y, kUidY);
  if (!tx || !tw || !ty) return none;
  int64_t pad[3], str[3], dil[3];
  const int64_t spatial = nd - 2;
  for (int i = skip, j = 0; i < 3; ++i, ++j)
    pad[j] = pb.p.pad[i], str[j] = pb.p.stride[i], dil[j] = pb.p.dil[i];
  BeDesc conv = sc.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnConvolutionMode_t mode = GPUDNN_CROSS_CORRELATION;
  if (!conv || !set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dil) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, str) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, pad) ||
      !set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, pad) ||
      !ok(api.be_finalize(conv)))
    return none;
  const bool dbl = pb.dtype == DType::Float64;
  const double alpha_d = 1, beta_d = 0;
  const float alpha_f = 1, beta_f = 0;
  const cudnnBackendAttributeType_t st = dbl ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;
  BeDesc op = nullptr;
  const cudnnBackendAttributeType_t bd = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  switch (pb.kind) {
    case Kind::Forward:
      op = sc.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      if (!op || !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, bd, 1, &tx) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, bd, 1, &tw) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, bd, 1, &ty) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, bd, 1, &conv) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, st, 1, alpha) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, st, 1, beta))
        return none;
      break;
    case Kind::BackwardData:
      op = sc.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      if (!op || !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, bd, 1, &tx) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, bd, 1, &tw) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, bd, 1, &ty) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, bd, 1, &conv) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, st, 1, alpha) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, st, 1, beta))
        return none;
      break;
    case Kind::BackwardFilter:
      op = sc.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      if (!op || !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, bd, 1, &tx) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, bd, 1, &tw) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, bd, 1, &ty) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, bd, 1, &conv) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, st, 1, alpha) ||
          !set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, st, 1, beta))
        return none;
      break;
  }
  if (!ok(api.be_finalize(op))) return none;
  BeDesc graph = sc.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (!graph || !set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, bd, 1, &op) ||
      !set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) ||
      !ok(api.be_finalize(graph)))
    return none;
  BeDesc heur = sc.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  if (!heur || !set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, bd, 1, &graph) ||
      !set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm) ||
      !ok(api.be_finalize(heur)))
    return none;
  constexpr int kCfgs = 16;
  BeDesc cfgs[kCfgs];
  for (auto& c : cfgs)
    if (!(c = sc.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) return none;
  int64_t ncfg = 0;
  if (!ok(api.be_get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, bd, kCfgs, &ncfg, cfgs))) return none;
  ncfg = std::min<int64_t>(ncfg, kCfgs);
  // Plans of the configurations whose notes pass the filter, in the heuristics' order.
  constexpr int kPlans = 4;
  std::vector<GraphPlan> plans;
  for (int64_t i = 0; i < ncfg && static_cast<int>(plans.size()) < kPlans; ++i) {
    BeDesc eng = sc.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    if (!eng || !ok(api.be_get(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, bd, 1, &n, &eng)) || n != 1)
      continue;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t nn = 0;
    if (!ok(api.be_get(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes)))
      continue;
    bool skip_cfg = false;
    for (int64_t k = 0; k < nn; ++k) {
      const auto note = notes[k];
      const bool full = pb.dtype == DType::Float32 || pb.dtype == DType::Float64;
      skip_cfg =
          skip_cfg || note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
          (full && note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ||
          (pb.dtype == DType::Float32 && !tf32 && note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ||
          (det && note == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC);
    }
    if (skip_cfg) continue;
    BeDesc plan = sc.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (!plan || !set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) ||
        !set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, bd, 1, &cfgs[i]) ||
        !ok(api.be_finalize(plan)))
      continue;
    GraphPlan g;
    g.plan = plan;
    if (!ok(api.be_get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                       &g.workspace)) ||
        g.workspace < 0 || g.workspace > static_cast<int64_t>(kFindWorkspaceCap))
      continue;
    plans.push_back(g);
  }
  if (plans.empty()) return none;
  size_t pick = 0;
  if (plans.size() > 1 && !capturing(stream)) {
    int64_t need = 0;
    for (const GraphPlan& g : plans) need = std::max(need, g.workspace);
    Tensor ws = workspace(static_cast<size_t>(need), pb.device);
    gpuEvent_t e0, e1;
    KILN_GPU_CHECK(kind_op(pb.kind), gpuEventCreateWithFlags(&e0, gpuEventDefault));
    KILN_GPU_CHECK(kind_op(pb.kind), gpuEventCreateWithFlags(&e1, gpuEventDefault));
    float best = -1;
    for (size_t i = 0; i < plans.size(); ++i) {
      float ms = -1;
      if (run_graph(api, h, plans[i], px, pw, py, ws.defined() ? ws.data_ptr() : nullptr)) {
        KILN_GPU_CHECK(kind_op(pb.kind), gpuEventRecord(e0, stream));
        bool good = true;
        for (int r = 0; r < 3 && good; ++r)
          good = run_graph(api, h, plans[i], px, pw, py, ws.defined() ? ws.data_ptr() : nullptr);
        KILN_GPU_CHECK(kind_op(pb.kind), gpuEventRecord(e1, stream));
        KILN_GPU_CHECK(kind_op(pb.kind), gpuEventSynchronize(e1));
        if (good) KILN_GPU_CHECK(kind_op(pb.kind), gpuEventElapsedTime(&ms, e0, e1));
      }
      if (ms > 0 && (best < 0 || ms < best)) best = ms, pick = i;
    }
    (void)gpuEventDestroy(e0);
    (void)gpuEventDestroy(e1);
    if (best < 0) return none;
  }
  // Keep the chosen plan and everything it was built from (the library may refer to them).
  GraphPlan chosen = plans[pick];
  for (size_t i = 0; i < plans.size(); ++i)
    if (i != pick) {
      sc.release(plans[i].plan);
      api.be_destroy(plans[i].plan);
    }
  sc.owned.clear();
  return chosen;
}

Problem problem_of(Kind k, const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p) {
  Problem pb{};
  pb.kind = k;
  pb.device = y.device().index >= 0 ? y.device().index : current_device();
  pb.dtype = y.dtype();
  for (int i = 0; i < 5; ++i) pb.x[i] = x.size(i), pb.w[i] = w.size(i), pb.y[i] = y.size(i);
  pb.p = p;
  return pb;
}

// Runs one convolution: x, w, y as in Problem; `kind` decides which are inputs.
bool run_conv(Kind kind, const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p) {
  const DnnApi& api = dnn_api();
  if (!api.error.empty()) return false;
  const Problem pb = problem_of(kind, x, w, y, p);
  if (!pb.fits()) return false;
  DeviceGuard guard(pb.device);
  auto stream = reinterpret_cast<gpuStream_t>(current_stream(pb.device));
  const char* op = kind_op(kind);
  gpuDnnHandle_t h = dnn_handle(pb.device, stream, op);
  const bool tf32 = ::kiln::detail::float32_matmul_allows_tf32();
  const bool det = are_deterministic_algorithms_enabled();
  void *px = x.data_ptr(), *pw = w.data_ptr(), *py = y.data_ptr();
  // Pointer alignment is part of the problem: an algorithm found on 16-byte aligned buffers may
  // not run on others.
  const int64_t align =
      static_cast<int64_t>((reinterpret_cast<uintptr_t>(px) | reinterpret_cast<uintptr_t>(pw) |
                            reinterpret_cast<uintptr_t>(py)) %
                           16);
  const Key key = key_of(pb, tf32, det, align);
  // Per problem: the algorithm and the descriptors it runs with, both kept for the process (never
  // destroyed: no cuDNN calls during static destruction).
  struct Entry {
    Choice c;
    std::unique_ptr<Descs> d;
    GraphPlan g;  // the graph path's plan (Note [cuDNN graph path]); null: the legacy call
  };
  static std::mutex mu;
  static auto* cache = new std::map<Key, Entry>();
  const Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) e = &it->second;
  }
  if (e == nullptr) {
    ++g_searches;
    GraphPlan gp;
    if (api.graph) gp = build_graph(pb, h, det, tf32, px, pw, py, align, stream);
    auto dp = std::make_unique<Descs>(api);
    Descs& d = *dp;
    Choice c;
    if (gp.plan == nullptr && d.init(pb)) {
      switch (kind) {
        case Kind::Forward:
          c = search<gpuDnnFwdPerf_t>(
              pb, d,
              [&](gpuDnnFwdPerf_t* r, int* n) {
                return api.fwd_get(h, d.x, d.w, d.conv, d.y, kMaxAlgos, n, r);
              },
              [&](gpuDnnFwdPerf_t* r, int* n, void* ws, size_t wsb) {
                return api.fwd_find(h, d.x, px, d.w, pw, d.conv, d.y, py, kMaxAlgos, n, r, ws, wsb);
              },
              det, tf32, stream);
          break;
        case Kind::BackwardData:
          c = search<gpuDnnBwdDataPerf_t>(
              pb, d,
              [&](gpuDnnBwdDataPerf_t* r, int* n) {
                return api.bwd_data_get(h, d.w, d.y, d.conv, d.x, kMaxAlgos, n, r);
              },
              [&](gpuDnnBwdDataPerf_t* r, int* n, void* ws, size_t wsb) {
                return api.bwd_data_find(h, d.w, pw, d.y, py, d.conv, d.x, px, kMaxAlgos, n, r, ws,
                                         wsb);
              },
              det, tf32, stream);
          break;
        case Kind::BackwardFilter:
          c = search<gpuDnnBwdFilterPerf_t>(
              pb, d,
              [&](gpuDnnBwdFilterPerf_t* r, int* n) {
                return api.bwd_filter_get(h, d.x, d.y, d.conv, d.w, kMaxAlgos, n, r);
              },
              [&](gpuDnnBwdFilterPerf_t* r, int* n, void* ws, size_t wsb) {
                return api.bwd_filter_find(h, d.x, px, d.y, py, d.conv, d.w, pw, kMaxAlgos, n, r,
                                           ws, wsb);
              },
              det, tf32, stream);
          break;
      }
      if (c.ok)
        KILN_CHECK(d.set_math(c.math), "[", op, "] cuDNN rejected the math type of its choice");
    }
    std::lock_guard<std::mutex> lock(mu);
    // A concurrent miss may have stored the problem first: keep that entry (ours is dropped).
    e = &cache->emplace(key, Entry{c, c.ok ? std::move(dp) : nullptr, gp}).first->second;
  }
  if (e->g.plan != nullptr) {
    Tensor ws = workspace(static_cast<size_t>(e->g.workspace), pb.device);
    KILN_CHECK(run_graph(api, h, e->g, px, pw, py, ws.defined() ? ws.data_ptr() : nullptr), "[", op,
               "] cuDNN could not execute the problem's plan");
    check_launch(op, reinterpret_cast<uintptr_t>(stream));
    return true;
  }
  if (!e->c.ok) return false;
  const Choice& c = e->c;
  const Descs& d = *e->d;
  Tensor ws = workspace(c.workspace, pb.device);
  void* wsp = ws.defined() ? ws.data_ptr() : nullptr;
  const bool dbl = pb.dtype == DType::Float64;
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = dbl ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
  const void* zero = dbl ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
  switch (kind) {
    case Kind::Forward:
      dnn_check(api.fwd(h, one, d.x, px, d.w, pw, d.conv, static_cast<gpuDnnFwdAlgo_t>(c.algo), wsp,
                        c.workspace, zero, d.y, py),
                op, "forward");
      break;
    case Kind::BackwardData:
      dnn_check(
          api.bwd_data(h, one, d.w, pw, d.y, py, d.conv, static_cast<gpuDnnBwdDataAlgo_t>(c.algo),
                       wsp, c.workspace, zero, d.x, px),
          op, "backward data");
      break;
    case Kind::BackwardFilter:
      dnn_check(api.bwd_filter(h, one, d.x, px, d.y, py, d.conv,
                               static_cast<gpuDnnBwdFilterAlgo_t>(c.algo), wsp, c.workspace, zero,
                               d.w, pw),
                op, "backward filter");
      break;
  }
  check_launch(op, reinterpret_cast<uintptr_t>(stream));
  return true;
}

}  // namespace

bool available() { return dnn_api().error.empty(); }
std::string unavailable_reason() { return dnn_api().error; }

bool conv_forward(const Tensor& x, const Tensor& w, const Tensor& y, const ConvParams& p) {
  return run_conv(Kind::Forward, x, w, y, p);
}
bool conv_backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const ConvParams& p) {
  return run_conv(Kind::BackwardData, gx, w, gy, p);
}
bool conv_backward_filter(const Tensor& gy, const Tensor& x, const Tensor& gw,
                          const ConvParams& p) {
  return run_conv(Kind::BackwardFilter, x, gw, gy, p);
}

#else  // built without cuDNN headers (HIP: MIOpen is not wired yet)

bool available() { return false; }
std::string unavailable_reason() {
  return "kiln was built without cuDNN/MIOpen headers (cudnn.h not found at build time)";
}
bool conv_forward(const Tensor&, const Tensor&, const Tensor&, const ConvParams&) { return false; }
bool conv_backward_data(const Tensor&, const Tensor&, const Tensor&, const ConvParams&) {
  return false;
}
bool conv_backward_filter(const Tensor&, const Tensor&, const Tensor&, const ConvParams&) {
  return false;
}

#endif

}  // namespace kiln::gpu::dnn
