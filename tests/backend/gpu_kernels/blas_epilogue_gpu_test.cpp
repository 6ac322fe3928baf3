// cuBLASLt epilogues (gpu::matmul_epilogue, Note [GPU matmul epilogues] in backend/gpu/blas.h)
// against the unfused composite in double on the host, and linear's bias through the Bmm kernel's
// bias epilogue. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "backend/gpu/blas.h"
#include "backend/gpu_kernels/gpu_test_util.h"

// Weak: CPU-only builds link this binary without backend/gpu/blas.cu.
namespace kiln::gpu {
Tensor matmul_epilogue(const Tensor& a, const Tensor& b, const Tensor& bias, Epilogue e,
                       Tensor* aux) __attribute__((weak));
}  // namespace kiln::gpu

namespace kiln {
namespace {

using namespace gpu_test;
using gpu::Epilogue;

#define KILN_NEED_LT() \
  KILN_NEED_GPU();     \
  if (&gpu::matmul_epilogue == nullptr) GTEST_SKIP() << "built without the GPU backend"

double gelu(double x) {
  const double c = std::sqrt(2 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double dgelu(double x) {
  const double c = std::sqrt(2 / std::numbers::pi), t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
}

double rel_tol(DType d) {
  return d == DType::Float16 ? 2e-3 : d == DType::BFloat16 ? 1.6e-2 : 2e-5;
}

// |got - want| <= tol * (scale + 1e-2) per element.
void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                  const std::vector<double>& scale, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (scale[i] + 1e-2))) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
      ++bad;
    }
}

struct Problem {
  int64_t m, k, n;
  bool a_transposed;  // a passed as the transpose of a [K, M] tensor
};

struct Data {
  Tensor a, b, bias, aux_in;              // GPU, dtype
  std::vector<double> av, bv, biasv, xv;  // the same values (rounded to dtype) as doubles
  std::vector<double> g, gabs;            // a @ b and |a| @ |b|
};

Data make(const Problem& p, DType dt, uint64_t seed) {
  Data d;
  Tensor a = from_vector(rand_vec(p.m * p.k, seed)).reshape({p.m, p.k}).to(dt);
  if (p.a_transposed)
    a = from_vector(rand_vec(p.m * p.k, seed)).reshape({p.k, p.m}).to(dt).to(kGpu).t();
  else
    a = a.to(kGpu);
  d.a = a;
  d.b = from_vector(rand_vec(p.k * p.n, seed + 1)).reshape({p.k, p.n}).to(dt).to(kGpu);
  d.bias = from_vector(rand_vec(p.n, seed + 2)).to(dt).to(kGpu);
  d.aux_in = from_vector(rand_vec(p.m * p.n, seed + 3, -3, 3)).reshape({p.m, p.n}).to(dt).to(kGpu);
  d.av = host(d.a), d.bv = host(d.b), d.biasv = host(d.bias), d.xv = host(d.aux_in);
  d.g.assign(p.m * p.n, 0);
  d.gabs.assign(p.m * p.n, 0);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t q = 0; q < p.k; ++q) {
        d.g[i * p.n + j] += d.av[i * p.k + q] * d.bv[q * p.n + j];
        d.gabs[i * p.n + j] += std::abs(d.av[i * p.k + q] * d.bv[q * p.n + j]);
      }
  return d;
}

// Runs f; a kiln::Error becomes a failure naming `what`, so that one unsupported epilogue does not
// hide the results of the others.
template <class Fn>
void attempt(const std::string& what, Fn f) {
  try {
    f();
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

const std::vector<Problem> kProblems = {
    {64, 96, 48, false}, {33, 64, 40, true}, {40, 72, 36, false}};

TEST(BlasEpilogue, ForwardEpiloguesMatchComposite) {
  KILN_NEED_LT();
  uint64_t seed = 1;
  for (const Problem& p : kProblems)
    for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32}) {
      const std::string tag = std::to_string(p.m) + "x" + std::to_string(p.k) + "x" +
                              std::to_string(p.n) + " " + dtype_name(dt);
      Data d = make(p, dt, seed += 10);
      const size_t mn = d.g.size();
      std::vector<double> pre(mn), pre_abs(mn), want(mn), gel(mn);
      for (size_t i = 0; i < mn; ++i) {
        const double bj = d.biasv[i % p.n];
        pre[i] = d.g[i] + bj;
        pre_abs[i] = d.gabs[i] + std::abs(bj);
        gel[i] = gelu(d.g[i]);
      }
      Tensor out = gpu::matmul_epilogue(d.a, d.b, d.bias, Epilogue::Bias, nullptr);
      ASSERT_EQ(out.dtype(), dt);
      expect_close(host(out), pre, pre_abs, rel_tol(dt), tag + " bias");

      Tensor aux;
      out = gpu::matmul_epilogue(d.a, d.b, Tensor(), Epilogue::Gelu, &aux);
      expect_close(host(out), gel, d.gabs, rel_tol(dt), tag + " gelu");
      expect_close(host(aux), d.g, d.gabs, rel_tol(dt), tag + " gelu aux");
      out = gpu::matmul_epilogue(d.a, d.b, Tensor(), Epilogue::Gelu, nullptr);
      expect_close(host(out), gel, d.gabs, rel_tol(dt), tag + " gelu without aux");

      for (size_t i = 0; i < mn; ++i) want[i] = gelu(pre[i]);
      Tensor aux2;
      out = gpu::matmul_epilogue(d.a, d.b, d.bias, Epilogue::GeluBias, &aux2);
      expect_close(host(out), want, pre_abs, rel_tol(dt), tag + " gelu bias");
      expect_close(host(aux2), pre, pre_abs, rel_tol(dt), tag + " gelu bias aux");
      EXPECT_EQ(aux2.stride(0) % 8, 0);
      // The GPU composite the epilogue replaces (matmul + add + tanh-GELU), as a cross-check.
      Tensor comp = nn::functional::gelu(add(matmul(d.a, d.b), d.bias), "tanh");
      expect_close(host(out), host(comp), pre_abs, 2 * rel_tol(dt), tag + " vs GPU composite");
    }
}

TEST(BlasEpilogue, GradientEpiloguesMatchComposite) {
  KILN_NEED_LT();
  uint64_t seed = 500;
  for (const Problem& p : kProblems)
    for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32}) {
      const std::string tag = std::to_string(p.m) + "x" + std::to_string(p.k) + "x" +
                              std::to_string(p.n) + " " + dtype_name(dt);
      Data d = make(p, dt, seed += 10);
      const size_t mn = d.g.size();
      // The aux input with a row stride padded to a multiple of 8, as the forward writes it.
      const int64_t ld = (p.n + 7) / 8 * 8;
      Tensor aux = zeros({p.m, ld}, TensorOptions(dt).device(kGpu)).narrow(1, 0, p.n);
      aux.copy_(d.aux_in);
      // Scale: the product's rounding (|a| @ |b| times |gelu'|) plus the evaluation of gelu'
      // itself (|g| times the sensitivity of gelu' to its tanh, 0.5 + |x| bounds it loosely):
      // cuBLASLt's float32 DGELU evaluates tanh approximately (relative errors ~1e-4 seen on
      // the H200), so float32 gets 1e-3 there instead of 2e-5.
      std::vector<double> want(mn), scale(mn);
      for (size_t i = 0; i < mn; ++i) {
        const double s = dgelu(d.xv[i]);
        want[i] = d.g[i] * s;
        scale[i] = d.gabs[i] * std::abs(s) + std::abs(d.g[i]) * (0.5 + std::abs(d.xv[i]));
      }
      const double dtol = dt == DType::Float32 ? 1e-3 : rel_tol(dt);
      attempt(tag + " dgelu", [&] {
        Tensor out = gpu::matmul_epilogue(d.a, d.b, Tensor(), Epilogue::DGelu, &aux);
        expect_close(host(out), want, scale, dtol, tag + " dgelu");
      });
      attempt(tag + " dgelu_bgrad", [&] {
        Tensor db = zeros({p.n}, TensorOptions(dt).device(kGpu));
        Tensor out = gpu::matmul_epilogue(d.a, d.b, db, Epilogue::DGeluBGrad, &aux);
        expect_close(host(out), want, scale, dtol, tag + " dgelu_bgrad out");
        std::vector<double> dbw(p.n, 0), dbs(p.n, 0);
        for (int64_t i = 0; i < p.m; ++i)
          for (int64_t j = 0; j < p.n; ++j)
            dbw[j] += want[i * p.n + j], dbs[j] += scale[i * p.n + j];
        expect_close(host(db), dbw, dbs, dtol, tag + " dgelu_bgrad bias");
      });
      // Bias gradients of one operand, reduced over K.
      attempt(tag + " bgrada", [&] {
        Tensor ga = zeros({p.m}, TensorOptions(dt).device(kGpu));
        Tensor out = gpu::matmul_epilogue(d.a, d.b, ga, Epilogue::BGradA, nullptr);
        expect_close(host(out), d.g, d.gabs, rel_tol(dt), tag + " bgrada out");
        std::vector<double> sa(p.m, 0), sa_abs(p.m, 0);
        for (int64_t i = 0; i < p.m; ++i)
          for (int64_t q = 0; q < p.k; ++q)
            sa[i] += d.av[i * p.k + q], sa_abs[i] += std::abs(d.av[i * p.k + q]);
        expect_close(host(ga), sa, sa_abs, rel_tol(dt), tag + " bgrada bias");
      });
      attempt(tag + " bgradb", [&] {
        Tensor gb = zeros({p.n}, TensorOptions(dt).device(kGpu));
        Tensor out = gpu::matmul_epilogue(d.a, d.b, gb, Epilogue::BGradB, nullptr);
        expect_close(host(out), d.g, d.gabs, rel_tol(dt), tag + " bgradb out");
        std::vector<double> sb(p.n, 0), sb_abs(p.n, 0);
        for (int64_t q = 0; q < p.k; ++q)
          for (int64_t j = 0; j < p.n; ++j)
            sb[j] += d.bv[q * p.n + j], sb_abs[j] += std::abs(d.bv[q * p.n + j]);
        expect_close(host(gb), sb, sb_abs, rel_tol(dt), tag + " bgradb bias");
      });
    }
}

TEST(BlasEpilogue, BadArgumentsRaise) {
  KILN_NEED_LT();
  Tensor a = ones({4, 8}, TensorOptions(kFloat32).device(kGpu));
  Tensor b = ones({8, 16}, TensorOptions(kFloat32).device(kGpu));
  EXPECT_THROW(gpu::matmul_epilogue(a, b, Tensor(), Epilogue::Bias, nullptr), Error);
  EXPECT_THROW(gpu::matmul_epilogue(a, b, ones({15}, TensorOptions(kFloat32).device(kGpu)),
                                    Epilogue::Bias, nullptr),
               Error);
  EXPECT_THROW(gpu::matmul_epilogue(a, b, Tensor(), Epilogue::DGelu, nullptr), Error);
  EXPECT_THROW(gpu::matmul_epilogue(a.to(DType::Float64), b.to(DType::Float64), Tensor(),
                                    Epilogue::Gelu, nullptr),
               Error);
}

// linear with a 1-D bias goes through the Bmm kernel's bias epilogue (float16/bfloat16/float32);
// results against double loops on the host, batched input folded into rows.
TEST(BlasEpilogue, LinearBiasMatchesReference) {
  KILN_NEED_LT();
  const int64_t bsz = 3, t = 11, in = 40, out = 24;
  uint64_t seed = 900;
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32}) {
    Tensor x = from_vector(rand_vec(bsz * t * in, ++seed)).reshape({bsz, t, in}).to(dt).to(kGpu);
    Tensor w = from_vector(rand_vec(out * in, ++seed)).reshape({out, in}).to(dt).to(kGpu);
    Tensor b = from_vector(rand_vec(out, ++seed)).to(dt).to(kGpu);
    Tensor y = linear(x, w, b);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{bsz, t, out}));
    std::vector<double> xv = host(x), wv = host(w), bv = host(b), want, scale;
    for (int64_t r = 0; r < bsz * t; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double s = bv[o], sa = std::abs(bv[o]);
        for (int64_t i = 0; i < in; ++i)
          s += xv[r * in + i] * wv[o * in + i], sa += std::abs(xv[r * in + i] * wv[o * in + i]);
        want.push_back(s);
        scale.push_back(sa);
      }
    expect_close(host(y), want, scale, rel_tol(dt), std::string("linear ") + dtype_name(dt));
    // addmm with beta != 1 keeps the materialized C path: same values scaled.
    Tensor y2 = addmm(b, x.reshape({bsz * t, in}), w.t(), 2.0, 1.0);
    std::vector<double> want2;
    for (size_t i = 0; i < want.size(); ++i) want2.push_back(want[i] + bv[i % out]);
    expect_close(host(y2), want2, scale, 2 * rel_tol(dt),
                 std::string("addmm beta 2 ") + dtype_name(dt));
  }
}

}  // namespace
}  // namespace kiln
