// The op table's GPU-vs-CPU suite: every row x dtype x sample runs on the CPU and on `cuda` (with
// contiguous and strided GPU inputs) and the results must agree within the output dtype's
// tolerance. One test per dtype (OpDbGpu.<dtype>); skips with a message where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "dispatch/registry.h"
#include "kiln/cuda.h"
#include "kiln/ops/determinism.h"
#include "op_db/op_db.h"
#include "ops/tensor_factory.h"

namespace kiln::testing {

namespace {

// Inputs for a dtype, as the CPU suites make them (integers get a wider range, bools x > 0).
Tensor tested_input(const Tensor& master, DType dt) {
  if (master.dtype() != DType::Float64 && master.dtype() != DType::Complex128) return master;
  auto v = values(master);
  if (dt == DType::Bool || is_integral(dt)) {
    for (auto& x : v) {
      double r = x.real();
      if (dt == DType::Bool)
        r = r > 0 ? 1 : 0;
      else if (dt == DType::UInt8)
        r = std::isfinite(r) ? std::trunc(std::abs(r) * 20) : 7;
      else
        r = std::isfinite(r) ? std::trunc(r * 20) : -7;
      x = r;
    }
  }
  return from_values(v, master.sizes(), dt);
}

// The same values on the GPU, contiguous or in every other slot of a wider buffer.
Tensor to_gpu(const Tensor& t, bool strided) {
  Device gpu(kCUDA, 0);
  if (t.dim() == 0 && t.impl()->is_wrapped_number()) return t;  // stays a host scalar
  Tensor g = t.to(gpu);
  if (!strided || t.dim() == 0 || t.numel() <= 1) return g;
  DimVector big(t.sizes());
  big.back() *= 2;
  Tensor buf = detail::empty_impl(big, t.dtype(), gpu);
  Tensor view = buf.slice(t.dim() - 1, 0, std::nullopt, 2);
  view.copy_(g);
  return view;
}

// Why a (row, dtype) is not compared on the GPU, or "" when it is.
std::string skip_reason(const OpRow& row, DType dt) {
  for (OpId id : row.covers) {
    const OpDef& d = op_def(id);
    // A flagged op is compared as soon as its GPU kernel exists (the flag is dropped later).
    if ((d.flags & kCpuOnlyGpu) && !detail::find_kernel(id, kCUDA))
      return std::string("covers ") + d.name + " (kCpuOnlyGpu)";
    if (d.kind == OpKind::Random)
      return "random rows draw from CPU generators; GPU random numbers are tested in "
             "tests/backend/gpu/random_gpu_test.cpp";
    if (d.kind == OpKind::Attention && dt == DType::Float64)
      return "float64 attention: the GPU flash kernels take float16/bfloat16/float32, as PyTorch's";
    if (id == OpId::Bmm && !is_floating_point(dt) && !is_complex(dt))
      return "integer matmul: GPU matmuls are float/complex only, as PyTorch's CUDA matmul";
  }
  return "";
}

// Scatter-type reductions on the GPU add with atomics in the storage type by default, so in
// float16/bfloat16 the order of additions shows in the rounding (a few ulps of the partial sums,
// large relative to a result near zero). Those rows are compared in deterministic mode, which
// adds in the CPU's order; the atomic paths are checked against double references in
// tests/backend/gpu_kernels/index_gpu_test.cpp.
bool needs_ordered_sums(const OpRow& row, DType dt) {
  if (dt != DType::Float16 && dt != DType::BFloat16) return false;
  for (OpId id : row.covers)
    if (id == OpId::IndexAdd || id == OpId::ScatterAdd || id == OpId::ScatterReduce ||
        id == OpId::Scatter || id == OpId::ScatterValue || id == OpId::IndexPut)
      return true;
  return false;
}

struct DeterministicFor {
  bool on;
  explicit DeterministicFor(bool o) : on(o) {
    if (on) use_deterministic_algorithms(true);
  }
  ~DeterministicFor() {
    if (on) use_deterministic_algorithms(false);
  }
};

struct Counts {
  int rows = 0, samples = 0, skipped_rows = 0, cpu_errors = 0;
  std::map<std::string, std::string> skips;
};

void run_row(const OpRow& row, DType dt, Counts& n) {
  std::string why = skip_reason(row, dt);
  if (!why.empty()) {
    ++n.skipped_rows;
    n.skips[row.name] = why;
    return;
  }
  ++n.rows;
  DeterministicFor ordered(needs_ordered_sums(row, dt));
  for (const Sample& s : row.samples(dt)) {
    std::vector<Tensor> in;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      bool keep = k < s.keep_dtype.size() && s.keep_dtype[k];
      in.push_back(keep ? s.inputs[k] : tested_input(s.inputs[k], dt));
    }
    // GPU copies first: in-place rows modify their CPU inputs.
    std::vector<Tensor> gin[2];
    for (int v = 0; v < 2; ++v)
      for (const Tensor& t : in) gin[v].push_back(t.defined() ? to_gpu(t, v == 1) : t);
    Tensor want;
    try {
      want = row.op(in, s);
    } catch (const kiln::Error&) {
      ++n.cpu_errors;  // an error case on the CPU (integer division by zero, ...): not compared
      continue;
    }
    for (int v = 0; v < 2; ++v) {
      const bool strided = v == 1;
      if (strided && !row.skip_noncontiguous.empty()) continue;  // layout-dependent rows
      SCOPED_TRACE(row.name + " " + std::string(dtype_name(dt)) + " sample " + s.desc +
                   (strided ? " (strided GPU inputs)" : ""));
      Tensor got;
      try {
        got = row.op(gin[v], s);
      } catch (const kiln::Error& e) {
        if (std::string(e.what()).find("but it is on cpu") != std::string::npos) {
          n.skips[row.name] = "the row makes its own CPU out= tensors";  // not a GPU kernel issue
          continue;
        }
        ADD_FAILURE() << "GPU call raised: " << e.what();
        continue;
      }
      if (!got.is_cuda() && got.dim() > 0) {
        // Factory and copy rows build their tensors on the CPU whatever the inputs' device.
        n.skips[row.name] = "the row's result is made on the CPU";
        continue;
      }
      ++n.samples;
      EXPECT_EQ(got.dtype(), want.dtype());
      double atol = default_atol(want.dtype()) * row.tol_scale;
      double rtol = default_rtol(want.dtype()) * row.tol_scale;
      EXPECT_TRUE(close(got, want, atol, rtol, row.equal_nan));
    }
  }
}

void run_dtype(DType dt) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: the GPU-vs-CPU suite needs a cuda device";
  if (!detail::find_kernel(OpId::Add, kCUDA)) GTEST_SKIP() << "no GPU elementwise kernels";
  Counts n;
  for (const OpRow& row : op_table())
    if (row.dtypes & (1u << static_cast<int>(dt))) run_row(row, dt, n);
  std::ostringstream msg;
  msg << "[gpu-vs-cpu] " << dtype_name(dt) << ": " << n.rows << " rows, " << n.samples
      << " GPU calls compared, " << n.cpu_errors << " CPU error samples not compared, "
      << n.skipped_rows << " rows skipped";
  for (auto& [name, why] : n.skips) msg << "\n    skipped " << name << ": " << why;
  std::cout << msg.str() << std::endl;
}

class GpuDtypeTest : public ::testing::Test {
 public:
  explicit GpuDtypeTest(DType d) : d_(d) {}
  void TestBody() override { run_dtype(d_); }

 private:
  DType d_;
};

const bool kRegistered = [] {
  for (int d = 0; d < kNumDTypes; ++d) {
    DType dt = static_cast<DType>(d);
    ::testing::RegisterTest("OpDbGpu", dtype_name(dt), nullptr, nullptr, __FILE__, __LINE__,
                            [dt]() -> ::testing::Test* { return new GpuDtypeTest(dt); });
  }
  return true;
}();

}  // namespace

}  // namespace kiln::testing
