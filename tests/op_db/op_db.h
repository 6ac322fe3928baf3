// The op table (PyTorch's OpInfo, in C++): one OpRow per op with its kiln call, an independent
// double-precision reference, samples, dtypes and tolerances. Suites in op_db_suites.cpp run
// every row x dtype: reference, non-contiguous, output dtype, and error cases.
#pragma once

#include <complex>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/dispatch_dtype.h"
#include "kernels/convert.h"
#include "kiln/kiln.h"
#include "ops/op.h"

namespace kiln::testing {

// One call's inputs. Inputs are "master" tensors in float64 (or complex128); the suite converts
// those not marked keep_dtype to the dtype under test. keep_dtype inputs (indices, masks) are
// passed as they are.
struct Sample {
  std::vector<Tensor> inputs;
  std::vector<bool> keep_dtype;  // empty: convert all
  std::string desc;
  std::vector<Scalar> scalars;  // op arguments such as alpha
  std::vector<int64_t> ints;    // dims etc.
  bool flag = false;            // keepdim etc.
};

using OpFn = std::function<Tensor(const std::vector<Tensor>& in, const Sample& s)>;

struct OpRow {
  std::string name;          // unique: "add", "add.alpha", "sum.dim"
  std::vector<OpId> covers;  // the primitives this row tests (registry_complete checks them)
  uint32_t dtypes = detail::kFloatMask;
  // Samples for a dtype (inputs as float64/complex128 masters).
  std::function<std::vector<Sample>(DType)> samples;
  OpFn op;  // the kiln call on inputs already converted to the tested dtype
  // The reference, computed with plain loops in double/complex<double> from float64/complex128
  // copies of the converted inputs (so rounding of the inputs is not counted as error).
  // It returns a float64/complex128/int64/bool tensor of the expected shape.
  OpFn ref;
  // Expected output dtype for the tested input dtype (unset: not checked).
  std::function<DType(DType)> out_dtype;
  // Tolerance multipliers over the default per-dtype tolerances.
  double tol_scale = 1.0;
  bool equal_nan = true;
  // Each error case must throw kiln::Error whose message contains `contains`.
  struct ErrorCase {
    std::string contains;
    std::function<void()> fn;
  };
  std::vector<ErrorCase> errors;
  // dtypes skipped in the non-contiguous suite, with the reason (rarely needed).
  std::string skip_noncontiguous;
};

std::vector<OpRow>& op_table();
struct RowAdder {
  explicit RowAdder(OpRow r) { op_table().push_back(std::move(r)); }
};
// KILN_OP_ROWS(fn): fn() returns std::vector<OpRow>, added at start-up.
#define KILN_OP_ROWS(fn)                                                      \
  static const bool kiln_rows_##fn = [] {                                     \
    for (auto& r : fn()) ::kiln::testing::op_table().push_back(std::move(r)); \
    return true;                                                              \
  }()

// ---- values ----
// Reads every element (row-major) as complex<double>, independently of kiln's copy kernels.
std::vector<std::complex<double>> values(const Tensor& t);
// A float64 (or complex128 when complex) master tensor with uniform values in [lo, hi).
Tensor rand_master(IntArrayRef shape, bool complex, uint64_t seed, double lo = -2, double hi = 2);
// Builds a tensor of dtype from complex<double> values (real part for real dtypes).
Tensor from_values(const std::vector<std::complex<double>>& v, IntArrayRef shape, DType dtype);
// The same values in a non-contiguous layout (a transposed or strided view of a bigger buffer).
Tensor noncontiguous(const Tensor& t);

// ---- comparison ----
double default_atol(DType d);
double default_rtol(DType d);
// Checks shape and values: |got - ref| <= atol + rtol * |ref| (NaN equal to NaN when equal_nan).
::testing::AssertionResult close(const Tensor& got, const Tensor& ref, double atol, double rtol,
                                 bool equal_nan = true);

// ---- elementwise references (plain loops with broadcasting) ----
using C = std::complex<double>;
Tensor ref_map(const std::vector<Tensor>& in, DType out,
               const std::function<C(const std::vector<C>&)>& f);
// Broadcast shape computed independently of kiln.
std::vector<int64_t> ref_broadcast(const std::vector<std::vector<int64_t>>& shapes);

// ---- standard samples ----
// Elementwise samples for `arity` inputs: 0-dim, empty, 1-D, 2-D, broadcasting, 3-D, a large one
// (parallel path), and for floating dtypes values with inf/nan. Values in [lo, hi).
std::vector<Sample> elementwise_samples(int arity, DType dt, double lo = -2, double hi = 2,
                                        bool special_values = true);

// Row builders for elementwise ops with a scalar reference.
OpRow unary_row(std::string name, OpId id, std::function<Tensor(const Tensor&)> fn,
                std::function<C(C)> ref, uint32_t dtypes, double lo = -2, double hi = 2);
OpRow binary_row(std::string name, OpId id, std::function<Tensor(const Tensor&, const Tensor&)> fn,
                 std::function<C(C, C)> ref, uint32_t dtypes, double lo = -2, double hi = 2);

}  // namespace kiln::testing
