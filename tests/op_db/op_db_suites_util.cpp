// Suites over the op table: Reference (vs the double-precision reference), NonContiguous (same
// values in strided layouts give the same result), and Errors. One gtest per row x dtype.
#include <gtest/gtest.h>

#include "op_db/op_db.h"

namespace kiln::testing {

namespace {

// Converts a float64/complex128 master to the tested dtype with values that suit it: integers
// get a wider range (x * 20, truncated; non-negative for uint8), bools get x > 0.
Tensor to_tested(const Tensor& master, DType dt) {
  if (master.dtype() != DType::Float64 && master.dtype() != DType::Complex128) return master;
  if (dt == DType::Bool || is_integral(dt)) {
    auto v = values(master);
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
    return from_values(v, master.sizes(), dt);
  }
  return from_values(values(master), master.sizes(), dt);
}

Tensor to_master(const Tensor& t) {
  DType m = is_complex(t.dtype()) ? DType::Complex128 : DType::Float64;
  return from_values(values(t), t.sizes(), m);
}

std::vector<Tensor> prepare(const Sample& s, DType dt, bool noncontig) {
  std::vector<Tensor> in;
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    bool keep = k < s.keep_dtype.size() && s.keep_dtype[k];
    Tensor t = keep ? s.inputs[k] : to_tested(s.inputs[k], dt);
    if (noncontig && t.numel() > 1) t = noncontiguous(t);
    in.push_back(t);
  }
  return in;
}

void run_reference(const OpRow& row, DType dt) {
  double atol = default_atol(dt) * row.tol_scale, rtol = default_rtol(dt) * row.tol_scale;
  for (const Sample& s : row.samples(dt)) {
    SCOPED_TRACE(row.name + " " + dtype_name(dt) + " sample " + s.desc);
    std::vector<Tensor> in = prepare(s, dt, false);
    std::vector<Tensor> in64;
    for (size_t k = 0; k < in.size(); ++k) {
      bool keep = k < s.keep_dtype.size() && s.keep_dtype[k];
      in64.push_back(keep ? in[k] : to_master(in[k]));
    }
    Tensor got = row.op(in, s);
    Tensor ref = row.ref(in64, s);
    if (row.out_dtype) {
      EXPECT_EQ(got.dtype(), row.out_dtype(dt));
    }
    // The result is rounded to its dtype: allow that dtype's tolerance too.
    double a = std::max(atol, default_atol(got.dtype()) * row.tol_scale);
    double r = std::max(rtol, default_rtol(got.dtype()) * row.tol_scale);
    EXPECT_TRUE(close(got, ref, a, r, row.equal_nan));
  }
}

void run_noncontiguous(const OpRow& row, DType dt) {
  for (const Sample& s : row.samples(dt)) {
    SCOPED_TRACE(row.name + " " + dtype_name(dt) + " sample " + s.desc);
    Tensor a = row.op(prepare(s, dt, false), s);
    Tensor b = row.op(prepare(s, dt, true), s);
    // Libraries may pick other kernels for other layouts (last-bit differences), as PyTorch's
    // noncontiguous tests allow: compare within the output dtype's tolerance.
    EXPECT_TRUE(close(b, a, default_atol(a.dtype()) * row.tol_scale,
                      default_rtol(a.dtype()) * row.tol_scale, true));
  }
}

void run_errors(const OpRow& row) {
  for (const auto& e : row.errors) {
    SCOPED_TRACE(row.name + " error case '" + e.contains + "'");
    try {
      e.fn();
      ADD_FAILURE() << "expected kiln::Error containing '" << e.contains << "'";
    } catch (const kiln::Error& err) {
      EXPECT_NE(std::string(err.what()).find(e.contains), std::string::npos)
          << "message was: " << err.what();
    }
  }
}

class Fn : public ::testing::Test {
 public:
  explicit Fn(std::function<void()> f) : f_(std::move(f)) {}
  void TestBody() override { f_(); }

 private:
  std::function<void()> f_;
};

template <class F>
void reg(const std::string& suite, const std::string& name, F f) {
  ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [f]() -> ::testing::Test* { return new Fn(f); });
}

}  // namespace

void register_op_db_suites() {
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpRow& row = op_table()[i];
    for (int d = 0; d < kNumDTypes; ++d) {
      if (!(row.dtypes & (1u << d))) continue;
      DType dt = static_cast<DType>(d);
      std::string n = row.name + "." + dtype_name(dt);
      reg("OpDbReference", n, [i, dt] { run_reference(op_table()[i], dt); });
      if (row.skip_noncontiguous.empty())
        reg("OpDbNonContiguous", n, [i, dt] { run_noncontiguous(op_table()[i], dt); });
    }
    if (!row.errors.empty()) reg("OpDbErrors", row.name, [i] { run_errors(op_table()[i]); });
  }
}

}  // namespace kiln::testing
