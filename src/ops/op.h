// OpId (one per row of ops.def), OpDef (name, kind, dtype rule, infer, vjp) and OpCall.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln {

enum class OpId : uint16_t {
#define KILN_OP(id, name, kind, rule, flags) id,
#include "ops/ops.def"
#undef KILN_OP
  NumOps
};
constexpr int kNumOps = static_cast<int>(OpId::NumOps);

// The kind decides which generic kernel runs an op and whether the compiler may fuse it.
enum class OpKind : uint8_t {
  Unary,    // y = f(x), elementwise
  Binary,   // z = f(x, y), elementwise with broadcasting
  Ternary,  // elementwise with three inputs (where, lerp, addcmul, ...)
  Reduce,   // reduction over dims
  View,     // metadata only, shares storage: no kernel
  Copy,     // copy/cast between dtypes and devices
  Factory,  // fill, arange, ...
  Index,    // gather/scatter/index_* family
  Shape,    // data movement that copies (cat, flip, ...)
  Matmul,   // GEMM family
  Conv,     // convolution and pooling
  Scan,     // cumulative ops
  Sort,     // sort, topk, unique, ...
  Random,   // random number generation
  Fft,
  Linalg,      // factorizations and solvers
  Norm,        // fused normalization / softmax family kernels (composite fallbacks exist)
  Collective,  // distributed communication
  Attention,   // fused scaled-dot-product attention
};

// How infer() derives the compute and output dtypes of an elementwise op from its inputs.
enum class DTypeRule : uint8_t {
  Same,         // output = promoted inputs (abs, neg, add, ...)
  Float,        // int/bool inputs promote to the default float (exp, sin, true div, ...)
  Compare,      // compute in promoted type, output bool
  Logical,      // any inputs, output bool
  Integral,     // integer/bool only (bitwise ops)
  ToReal,       // complex -> its real type, others as Same (abs for complex, angle, ...)
  FloatToReal,  // as Float, then complex -> real (angle)
  Custom,       // the op's own infer decides
};

enum OpFlag : uint32_t {
  kNone = 0,
  kNoGrad = 1u << 0,        // not differentiable (comparisons, integer outputs, ...)
  kCpuOnlyGpu = 1u << 1,    // no GPU kernel yet; the GPU path raises an error naming the op
  kNoKernel = 1u << 2,      // metadata-only (views) or composite-run: needs no kernel
  kNoComplex = 1u << 3,     // complex inputs are rejected
  kNoBool = 1u << 4,        // bool inputs are rejected
  kIntegralOnly = 1u << 5,  // only integral/bool inputs
  kFloatOnly = 1u << 6,     // only floating inputs (after promotion)
  kNondeterministic = 1u << 7,
  // Differentiable, but its vjp is not written yet: autograd raises "[op] has no vjp yet" when a
  // gradient must flow through it. Temporary; tests/op_db/registry_complete lists these rows.
  kNoVjpYet = 1u << 8,
};

// Attributes of one call: scalars (alpha, bounds), ints (dims, sizes), flags.
struct OpAttrs {
  Scalar s0, s1;
  DimVector ints;
  int64_t i0 = 0, i1 = 0;
  bool flag = false;  // keepdim, inplace, ...
  bool has_s0 = false, has_s1 = false;
  std::optional<DType> dtype;
};

// Everything a kernel needs for one primitive call. infer() fills `out` (allocating unless
// the caller provided an out=/in-place tensor) and `compute`.
struct OpCall {
  explicit OpCall(OpId id) : op(id) {}
  OpId op;
  SmallVector<Tensor, 3> in;
  SmallVector<Tensor, 2> out;
  OpAttrs attrs;
  DType compute = DType::Float32;
  bool provided_out = false;  // out holds an out=/in-place tensor given by the caller
  bool inplace = false;       // out[0] is also an input (add_): it may not be resized
  uint8_t promote_from =
      0;  // inputs before this index take no part in type promotion (where's cond)
  // (temporary written by the kernel, caller's tensor): copied after the kernel when an
  // out=/in-place tensor has another dtype than the op computes.
  SmallVector<std::pair<Tensor, Tensor>, 1> copy_back;
};

using InferFn = void (*)(OpCall&);
struct VjpContext;  // src/autograd/vjp.h: saved inputs/outputs, attrs, output grads -> input grads
// Gradient of one primitive, written with kiln ops (so create_graph gives higher order).
using VjpFn = void (*)(VjpContext&);
using Kernel = void (*)(OpCall&);

struct OpDef {
  const char* name;
  OpKind kind;
  DTypeRule rule;
  uint32_t flags;
  InferFn infer;  // set by the op family's front end at registration
  // The vjp (null: kNoGrad, kNoVjpYet, or not registered); set by autograd::register_vjps()
  // (src/autograd/vjp_<family>.cpp) together with which inputs/outputs it reads.
  VjpFn vjp = nullptr;
  uint32_t vjp_saves = 0;  // bit i: reads input i; bit 16+j: reads output j
};

const OpDef& op_def(OpId id);
inline const char* op_name(OpId id) { return op_def(id).name; }

}  // namespace kiln
