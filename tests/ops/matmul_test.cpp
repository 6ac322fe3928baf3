// Unit tests of the matmul family beyond the op table: the 1024^3 float32 accuracy check, every
// BLAS layout (transposed / strided inputs and outputs), integer wrapping, batch parallelism,
// empty dims, beta == 0 with NaN input, in-place/out=/aliasing, and dtype errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/linalg.h"

namespace kiln {
namespace {

using Cd = std::complex<double>;

// A float64/complex128 tensor of uniform values in [lo, hi), converted to dtype.
Tensor rand_tensor(std::vector<int64_t> shape, DType dtype, uint64_t seed, double lo = -1,
                   double hi = 1) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (is_complex(dtype)) {
    std::vector<complex<double>> v(n);
    for (auto& x : v) x = complex<double>(u(gen), u(gen));
    return from_vector(v, shape).to(dtype);
  }
  std::vector<double> v(n);
  for (auto& x : v) x = is_integral(dtype) ? std::floor(u(gen)) : u(gen);
  return from_vector(v, shape).to(dtype);
}

// All elements as complex<double>, row-major (read through the strides of a float64/complex128
// copy, so the layout kiln chose for the copy does not matter).
std::vector<Cd> vals(const Tensor& t) {
  bool cplx = t.is_complex();
  Tensor c = t.to(cplx ? DType::Complex128 : DType::Float64);
  std::vector<Cd> out;
  int64_t nd = c.dim(), n = c.numel();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * c.stride(d);
    if (cplx) {
      auto z = c.data_ptr<complex<double>>()[off];
      out.emplace_back(z.real(), z.imag());
    } else {
      out.emplace_back(c.data_ptr<double>()[off], 0.0);
    }
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < c.size(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Reference batched product in complex<double>: a [b, m, k] @ b [b, k, n].
std::vector<Cd> ref_bmm(const std::vector<Cd>& a, const std::vector<Cd>& b, int64_t nb, int64_t m,
                        int64_t k, int64_t n) {
  std::vector<Cd> c(nb * m * n);
  for (int64_t t = 0; t < nb; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        Cd s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[(t * m + i) * k + p] * b[(t * k + p) * n + j];
        c[(t * m + i) * n + j] = s;
      }
  return c;
}

double tol_for(DType d) {
  switch (d) {
    case DType::Float16:
      return 1e-2;
    case DType::BFloat16:
      return 4e-2;
    case DType::Float32:
    case DType::Complex64:
      return 1e-5;
    default:
      return is_integral(d) ? 0.0 : 1e-12;
  }
}

void expect_close(const std::vector<Cd>& got, const std::vector<Cd>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i])))
        << what << " at " << i << ": got " << got[i] << " want " << want[i];
}

TEST(Matmul, Float32_1024MatchesDoubleReference) {
  const int64_t n = 1024;
  Tensor a = rand_tensor({n, n}, DType::Float32, 1), b = rand_tensor({n, n}, DType::Float32, 2);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.dtype(), DType::Float32);
  // Reference in double from the float32 inputs (i-k-j order for cache friendliness).
  ASSERT_TRUE(a.is_contiguous() && b.is_contiguous() && c.is_contiguous());
  Tensor ad = a.to(DType::Float64), bd = b.to(DType::Float64), cf = c.to(DType::Float64);
  const double* ap = ad.data_ptr<double>();
  const double* bp = bd.data_ptr<double>();
  const double* cp = cf.data_ptr<double>();
  std::vector<double> ref(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < n; ++p) {
      double av = ap[i * n + p];
      for (int64_t j = 0; j < n; ++j) ref[i * n + j] += av * bp[p * n + j];
    }
  double num = 0, den = 0;
  for (int64_t i = 0; i < n * n; ++i) {
    num += (cp[i] - ref[i]) * (cp[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-4);
}

// Every combination of contiguous / transposed / doubly-strided A and B and of the out= layout,
// for every supported dtype, against the complex<double> reference.
TEST(Matmul, AllLayoutsAllDtypes) {
  const DType dtypes[] = {DType::Float32, DType::Float64,  DType::Complex64, DType::Complex128,
                          DType::Float16, DType::BFloat16, DType::Int8,      DType::UInt8,
                          DType::Int16,   DType::Int32,    DType::Int64};
  const int64_t m = 5, k = 7, n = 3;
  // layout 0: contiguous; 1: transposed (a view of [cols, rows]); 2: both strides non-unit.
  auto make = [](int64_t rows, int64_t cols, int layout, DType dt, uint64_t seed) {
    double lo = dt == DType::UInt8 ? 0 : -3, hi = 3;
    if (layout == 0) return rand_tensor({rows, cols}, dt, seed, lo, hi);
    if (layout == 1) return rand_tensor({cols, rows}, dt, seed, lo, hi).t();
    return rand_tensor({rows * 2, cols * 3}, dt, seed, lo, hi)
        .slice(0, 0, None, 2)
        .slice(1, 0, None, 3);
  };
  for (DType dt : dtypes)
    for (int la = 0; la < 3; ++la)
      for (int lb = 0; lb < 3; ++lb)
        for (int lo = 0; lo < 3; ++lo) {
          std::string what = std::string(dtype_name(dt)) + " layouts " + std::to_string(la) +
                             std::to_string(lb) + std::to_string(lo);
          Tensor a = make(m, k, la, dt, 10 + la), b = make(k, n, lb, dt, 20 + lb);
          Tensor out = lo == 0 ? empty({0}, dt)
                       : lo == 1
                           ? empty({n, m}, dt).t()
                           : empty({m * 2, n * 2}, dt).slice(0, 0, None, 2).slice(1, 0, None, 2);
          mm_out(out, a, b);
          ASSERT_EQ(out.sizes(), IntArrayRef({m, n})) << what;
          auto want = ref_bmm(vals(a), vals(b), 1, m, k, n);
          expect_close(vals(out), want, tol_for(dt) * k, what);
          expect_close(vals(mm(a, b)), want, tol_for(dt) * k, what + " (functional)");
        }
}

// Integer products wrap like PyTorch's (two's complement at the dtype's width).
TEST(Matmul, IntegerWrapping) {
  const int64_t m = 4, k = 33, n = 6;
  for (DType dt : {DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::Int64}) {
    double hi = dt == DType::Int32 ? 4e5 : dt == DType::Int64 ? 4e9 : 120;
    double lo = dt == DType::UInt8 ? 0 : -hi;
    Tensor a = rand_tensor({m, k}, dt, 3, lo, hi), b = rand_tensor({k, n}, dt, 4, lo, hi);
    Tensor c = mm(a, b).to(DType::Int64);
    Tensor a64 = a.to(DType::Int64), b64 = b.to(DType::Int64);
    ASSERT_TRUE(c.is_contiguous() && a64.is_contiguous() && b64.is_contiguous());
    const int64_t* ap = a64.data_ptr<int64_t>();
    const int64_t* bp = b64.data_ptr<int64_t>();
    const int64_t* cp = c.data_ptr<int64_t>();
    int bits = static_cast<int>(element_size(dt)) * 8;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t s = 0;  // exact modulo 2^64
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<uint64_t>(ap[i * k + p]) * static_cast<uint64_t>(bp[p * n + j]);
        int64_t want;
        if (bits == 64) {
          want = static_cast<int64_t>(s);
        } else {
          uint64_t mask = (uint64_t(1) << bits) - 1, v = s & mask;
          bool neg = dt != DType::UInt8 && (v >> (bits - 1)) != 0;
          want = neg ? static_cast<int64_t>(v) - (int64_t(1) << bits) : static_cast<int64_t>(v);
        }
        ASSERT_EQ(cp[i * n + j], want) << dtype_name(dt) << " at " << i << "," << j;
      }
  }
}

// Many small matrices run in parallel over the batch; results must not depend on the threads.
TEST(Matmul, BatchedSmallMatricesThreadIndependent) {
  Tensor a = rand_tensor({3000, 4, 5}, DType::Float32, 5);
  Tensor b = rand_tensor({3000, 5, 3}, DType::Float32, 6);
  int saved = get_num_threads();
  set_num_threads(1);
  Tensor c1 = bmm(a, b);
  set_num_threads(2);
  Tensor c2 = bmm(a, b);
  set_num_threads(saved);
  auto v1 = vals(c1), v2 = vals(c2);
  ASSERT_EQ(v1, v2);
  expect_close(v1, ref_bmm(vals(a), vals(b), 3000, 4, 5, 3), 1e-5, "bmm");
}

TEST(Matmul, EmptyDims) {
  Tensor a = rand_tensor({3, 0}, DType::Float32, 7), b = rand_tensor({0, 4}, DType::Float32, 8);
  Tensor c = mm(a, b);
  ASSERT_EQ(c.sizes(), IntArrayRef({3, 4}));
  for (Cd v : vals(c)) EXPECT_EQ(v, Cd(0));
  Tensor ci = mm(a.to(DType::Int32), b.to(DType::Int32));
  for (Cd v : vals(ci)) EXPECT_EQ(v, Cd(0));
  EXPECT_EQ(
      mm(rand_tensor({0, 3}, DType::Float64, 9), rand_tensor({3, 2}, DType::Float64, 9)).sizes(),
      IntArrayRef({0, 2}));
  EXPECT_EQ(bmm(empty({0, 2, 3}), empty({0, 3, 4})).sizes(), IntArrayRef({0, 2, 4}));
  // K == 0 with an input: beta * input.
  Tensor in = rand_tensor({3, 4}, DType::Float64, 10);
  auto got = vals(addmm(in, a.to(DType::Float64), b.to(DType::Float64), 2.5, 3));
  auto iv = vals(in);
  for (size_t i = 0; i < iv.size(); ++i) EXPECT_DOUBLE_EQ(got[i].real(), 2.5 * iv[i].real());
  EXPECT_EQ(dot(empty({0}), empty({0})).item<double>(), 0.0);
}

// beta == 0 means the input is not read: NaNs in it do not reach the result (BLAS semantics).
TEST(Matmul, BetaZeroIgnoresNan) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Complex64, DType::BFloat16}) {
    Tensor in = full({3, 2}, NAN, dt);
    Tensor a = rand_tensor({3, 4}, dt, 11), b = rand_tensor({4, 2}, dt, 12);
    auto got = vals(addmm(in, a, b, 0, 1));
    expect_close(got, ref_bmm(vals(a), vals(b), 1, 3, 4, 2), tol_for(dt) * 4, dtype_name(dt));
  }
}

TEST(Matmul, InPlaceOutAndAliasing) {
  // addmm_ on a transposed self: C is the output itself.
  Tensor self = rand_tensor({4, 3}, DType::Float64, 13).t();  // [3, 4], column-major
  Tensor a = rand_tensor({3, 5}, DType::Float64, 14), b = rand_tensor({5, 4}, DType::Float64, 15);
  auto s0 = vals(self);
  auto p = ref_bmm(vals(a), vals(b), 1, 3, 5, 4);
  Tensor& r = self.addmm_(a, b, 0.5, 2);
  EXPECT_TRUE(r.is_same(self));
  auto got = vals(self);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i].real(), 0.5 * s0[i].real() + 2 * p[i].real(), 1e-12);
  // x.addmm_(x, x): the output aliases both factors.
  Tensor x = rand_tensor({4, 4}, DType::Float32, 16);
  auto xv = vals(x);
  auto xx = ref_bmm(xv, xv, 1, 4, 4, 4);
  x.addmm_(x, x);
  auto xg = vals(x);
  for (size_t i = 0; i < xg.size(); ++i)
    EXPECT_NEAR(xg[i].real(), xv[i].real() + xx[i].real(), 1e-5);
  // out= of the wrong dtype or a non-empty wrong shape is an error; an empty one is resized.
  Tensor a32 = rand_tensor({2, 3}, DType::Float32, 17),
         b32 = rand_tensor({3, 2}, DType::Float32, 18);
  Tensor bad = empty({2, 2}, DType::Float64);
  EXPECT_THROW(mm_out(bad, a32, b32), Error);
  Tensor wrong = empty({3, 3}, DType::Float32);
  EXPECT_THROW(mm_out(wrong, a32, b32), Error);
  Tensor ok = empty({0}, DType::Float32);
  mm_out(ok, a32, b32);
  EXPECT_EQ(ok.sizes(), IntArrayRef({2, 2}));
  // In-place on a self of the wrong shape.
  Tensor small = zeros({2, 1});
  EXPECT_THROW(small.addmm_(a32, b32), Error);
}

TEST(Matmul, DtypeErrors) {
  Tensor bf = ones({2, 2}, DType::Bool);
  try {
    mm(bf, bf);
    FAIL() << "bool mm did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not implemented"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul(ones({3}, DType::Bool), ones({3}, DType::Bool)), Error);
  try {
    mm(ones({2, 2}), ones({2, 2}, DType::Float64));
    FAIL() << "mixed dtypes did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected m1 and m2 to have the same dtype"),
              std::string::npos)
        << e.what();
  }
}

// Large inner dimension and a matrix-vector shape go through GEMV; check both orientations.
TEST(Matmul, GemvPaths) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Complex64, DType::Complex128}) {
    Tensor m = rand_tensor({7, 300}, dt, 19), v = rand_tensor({300}, dt, 20);
    expect_close(vals(mv(m, v)), ref_bmm(vals(m), vals(v), 1, 7, 300, 1), tol_for(dt) * 300, "mv");
    expect_close(vals(matmul(v, m.t())), ref_bmm(vals(v), vals(m.t()), 1, 1, 300, 7),
                 tol_for(dt) * 300, "vm");
    // Strided vector (every other element of a longer one).
    Tensor vs = rand_tensor({600}, dt, 21).slice(0, 0, None, 2);
    expect_close(vals(mv(m, vs)), ref_bmm(vals(m), vals(vs), 1, 7, 300, 1), tol_for(dt) * 300,
                 "mv strided");
    auto d = vals(vdot(v, vs))[0];
    Cd want = 0;
    auto a = vals(v), b = vals(vs);
    for (size_t i = 0; i < a.size(); ++i) want += std::conj(a[i]) * b[i];
    EXPECT_LE(std::abs(d - want), tol_for(dt) * 300 * (1 + std::abs(want))) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace kiln
