// Tests for kiln::complex<float|double>: arithmetic (robust division) and every function, host
// path (std::complex) and device path (detail::complex_*), against std::complex<long double> on
// grids with signed zeros on the branch cuts, subnormals, huge values, infinities and NaN.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

#include "kiln/complex.h"

namespace {

using LD = long double;
using kiln::complex;

// Magnitudes spanning the whole range, with both signs: zeros, subnormals, the edges of the
// fast paths (sqrt(eps), 1/sqrt(eps)), values around 1 and the branch points, arguments where
// exp overflows but exp(x) cos(y) need not, and huge values.
template <class T>
std::vector<T> grid_values() {
  using L = std::numeric_limits<T>;
  const T e = L::epsilon();
  const std::vector<T> mags = {T(0),
                               L::denorm_min(),
                               L::min(),
                               std::sqrt(L::min()),
                               T(1e-20),
                               e,
                               std::sqrt(e),
                               T(1e-3),
                               T(0.1),
                               T(0.5),
                               T(0.70710678118),
                               T(1) - e,
                               T(1),
                               T(1) + e,
                               T(1.5),
                               T(2),
                               T(3),
                               T(10),
                               T(1) / std::sqrt(e),
                               T(1) / e,
                               T(1e15),
                               std::log(L::max()) + T(0.5),
                               std::log(L::max()) * T(1.9),
                               std::sqrt(L::max()),
                               L::max() / 4,
                               L::max()};
  std::vector<T> out;
  for (T m : mags) {
    out.push_back(m);
    out.push_back(-m);
  }
  return out;
}

template <class T>
std::vector<complex<T>> grid_points() {
  std::vector<complex<T>> out;
  for (T x : grid_values<T>()) {
    for (T y : grid_values<T>()) out.emplace_back(x, y);
  }
  return out;
}

template <class T>
std::complex<LD> to_ld(const complex<T>& z) {
  return std::complex<LD>(z.real(), z.imag());
}

// `got` against the long double reference: NaN where the reference is NaN, the same infinity
// where the reference overflows T, otherwise a normwise error of at most `ulps` units of |ref|
// (with |ref| floored at the smallest normal), or with `componentwise`, each part within `ulps`
// units of itself. Exact zeros of the reference must match in sign if `check_zero_sign`.
template <class T>
::testing::AssertionResult close(const complex<T>& got, const std::complex<LD>& ref, double ulps,
                                 bool check_zero_sign = true, bool componentwise = false) {
  using L = std::numeric_limits<T>;
  auto fail = [&](const char* why) {
    return ::testing::AssertionFailure() << why << ": got (" << got.real() << ", " << got.imag()
                                         << ") ref (" << ref.real() << ", " << ref.imag() << ")";
  };
  const LD parts_ref[2] = {ref.real(), ref.imag()};
  const T parts_got[2] = {got.real(), got.imag()};
  bool finite = true;
  for (int i = 0; i < 2; ++i) {
    const LD r = parts_ref[i];
    const T g = parts_got[i];
    if (std::isnan(r)) {
      if (!std::isnan(g)) return fail("expected NaN");
      finite = false;
    } else if (std::isinf(T(r))) {
      const bool near =
          std::isfinite(g) && std::fabs(LD(g) - r) <= ulps * L::epsilon() * std::fabs(r);
      if (g != T(r) && !near) return fail("expected overflow");
      finite = false;
    } else if (!std::isfinite(g)) {
      return fail("unexpected inf/NaN");
    } else if (check_zero_sign && r == 0 && (g != 0 || std::signbit(g) != std::signbit(r))) {
      return fail("sign of zero");
    }
  }
  if (!finite) {  // the finite parts, against the magnitude of the non-NaN parts of ref
    LD mag = L::min();
    for (LD r : parts_ref) {
      if (!std::isnan(r)) mag = std::max(mag, std::fabs(r));
    }
    for (int i = 0; i < 2; ++i) {
      const LD r = parts_ref[i];
      if (std::isfinite(T(r)) && std::fabs(LD(parts_got[i]) - r) > ulps * L::epsilon() * mag) {
        return fail("finite part too far");
      }
    }
    return ::testing::AssertionSuccess();
  }
  if (componentwise) {
    for (int i = 0; i < 2; ++i) {
      const LD err = std::fabs(LD(parts_got[i]) - parts_ref[i]);
      if (err > ulps * L::epsilon() * std::max<LD>(std::fabs(parts_ref[i]), L::min())) {
        return fail("error") << " = " << double(err / std::fabs(parts_ref[i]) / L::epsilon())
                             << " ulps in part " << i;
      }
    }
    return ::testing::AssertionSuccess();
  }
  const LD scale = std::max<LD>(std::hypot(ref.real(), ref.imag()), L::min());
  const LD err = std::hypot(LD(got.real()) - ref.real(), LD(got.imag()) - ref.imag());
  if (err > ulps * L::epsilon() * scale) {
    return fail("error") << " = " << double(err / scale / L::epsilon()) << " ulps";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
struct Fn {
  const char* name;
  complex<T> (*device)(const complex<T>&);  // detail::complex_<name>, what GPUs run
  complex<T> (*host)(const complex<T>&);    // kiln::<name> on the host
  std::complex<LD> (*ref)(const std::complex<LD>&);
};

#define KILN_TEST_FN(name)                                                                \
  Fn<T> {                                                                                 \
#name, [](const complex<T>& z) { return kiln::detail::complex_##name(z); },             \
        [](const complex<T>& z) { return kiln::name(z); },                                  \
        [](const std::complex<LD>& z) { return std::name(z); } \
  }

template <class T>
std::vector<Fn<T>> functions() {
  return {KILN_TEST_FN(exp),   KILN_TEST_FN(log),   KILN_TEST_FN(sqrt), KILN_TEST_FN(sin),
          KILN_TEST_FN(cos),   KILN_TEST_FN(tan),   KILN_TEST_FN(asin), KILN_TEST_FN(acos),
          KILN_TEST_FN(atan),  KILN_TEST_FN(sinh),  KILN_TEST_FN(cosh), KILN_TEST_FN(tanh),
          KILN_TEST_FN(asinh), KILN_TEST_FN(acosh), KILN_TEST_FN(atanh)};
}
#undef KILN_TEST_FN

// Componentwise; observed worst on the grid: 3.2 ulps (device path), 2.4 (glibc).
constexpr double kFnUlps = 6;

template <class T>
void check_functions_on_grid() {
  for (const Fn<T>& f : functions<T>()) {
    for (const complex<T>& z : grid_points<T>()) {
      const std::complex<LD> ref = f.ref(to_ld(z));
      EXPECT_TRUE(close(f.device(z), ref, kFnUlps, true, true))
          << f.name << "(" << z.real() << ", " << z.imag() << ") device path";
      EXPECT_TRUE(close(f.host(z), ref, kFnUlps, true, true))
          << f.name << "(" << z.real() << ", " << z.imag() << ") host path";
    }
  }
}

TEST(Complex, FunctionsMatchLongDoubleDouble) { check_functions_on_grid<double>(); }
TEST(Complex, FunctionsMatchLongDoubleFloat) { check_functions_on_grid<float>(); }

// Infinite and NaN inputs: the device path gives the C99 Annex G classes (which part is NaN,
// which is infinite); signs Annex G leaves unspecified are not compared.
template <class T>
void check_special_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> vals;
  for (T v : {T(0), L::denorm_min(), T(0.5), T(1), T(2), L::max(), L::infinity(), L::quiet_NaN()}) {
    vals.push_back(v);
    vals.push_back(-v);
  }
  const auto cls = [](T v) { return std::isnan(v) ? 0 : std::isinf(v) ? 1 : 2; };
  for (const Fn<T>& f : functions<T>()) {
    for (T x : vals) {
      for (T y : vals) {
        if (std::isfinite(x) && std::isfinite(y)) continue;
        const complex<T> got = f.device(complex<T>(x, y));
        const std::complex<T> want(f.ref(std::complex<LD>(x, y)));
        EXPECT_EQ(cls(got.real()), cls(want.real())) << f.name << "(" << x << ", " << y << ")";
        EXPECT_EQ(cls(got.imag()), cls(want.imag())) << f.name << "(" << x << ", " << y << ")";
        if (std::isfinite(want.real()) && want.real() != 0) {
          EXPECT_NEAR(got.real(), want.real(), 4 * L::epsilon() * std::fabs(want.real()))
              << f.name << "(" << x << ", " << y << ")";
        }
        if (std::isfinite(want.imag()) && want.imag() != 0) {
          EXPECT_NEAR(got.imag(), want.imag(), 4 * L::epsilon() * std::fabs(want.imag()))
              << f.name << "(" << x << ", " << y << ")";
        }
      }
    }
  }
}

TEST(Complex, SpecialValuesDouble) { check_special_values<double>(); }
TEST(Complex, SpecialValuesFloat) { check_special_values<float>(); }

// A few Annex G values whose signs are fixed by the standard.
TEST(Complex, AnnexGSignedResults) {
  using C = complex<double>;
  const double inf = INFINITY, pi = 3.14159265358979323846;
  auto same = [](C a, C b) {
    auto eq = [](double u, double v) {
      return (std::isnan(u) && std::isnan(v)) || (u == v && std::signbit(u) == std::signbit(v));
    };
    return eq(a.real(), b.real()) && eq(a.imag(), b.imag());
  };
  using namespace kiln::detail;
  EXPECT_TRUE(same(complex_log(C(-0.0, 0.0)), C(-inf, pi)));
  EXPECT_TRUE(same(complex_log(C(0.0, -0.0)), C(-inf, -0.0)));
  EXPECT_TRUE(same(complex_sqrt(C(-inf, 1.0)), C(0.0, inf)));
  EXPECT_TRUE(same(complex_sqrt(C(inf, -1.0)), C(inf, -0.0)));
  EXPECT_TRUE(same(complex_sqrt(C(-4.0, -0.0)), C(0.0, -2.0)));
  EXPECT_TRUE(same(complex_sqrt(C(1.0, inf)), C(inf, inf)));
  EXPECT_TRUE(same(complex_exp(C(inf, 0.0)), C(inf, 0.0)));
  EXPECT_TRUE(same(complex_exp(C(-inf, 1.0)), C(0.0 * std::cos(1.0), 0.0 * std::sin(1.0))));
  EXPECT_TRUE(same(complex_sinh(C(inf, 0.0)), C(inf, 0.0)));
  EXPECT_TRUE(same(complex_cosh(C(inf, 0.0)), C(inf, 0.0)));
  EXPECT_TRUE(same(complex_tanh(C(inf, 1.0)), C(1.0, 0.0)));
  EXPECT_TRUE(same(complex_atanh(C(1.0, 0.0)), C(inf, 0.0)));
  EXPECT_TRUE(same(complex_asinh(C(inf, 1.0)), C(inf, 0.0)));
  EXPECT_TRUE(same(complex_acosh(C(0.0, 0.0)), C(0.0, pi / 2)));
  EXPECT_TRUE(same(complex_acos(C(-inf, 1.0)), C(pi, -inf)));
  EXPECT_TRUE(same(complex_asin(C(1.0, inf)), C(0.0, inf)));
}

// Points on the cuts with +0 and -0: independent closed forms for real arguments past the
// branch points (e.g. asin x = pi/2 -+ i acosh x for x > 1 above/below the cut).
TEST(Complex, BranchCutsFollowTheSignOfZero) {
  using C = complex<double>;
  const LD pi = 3.141592653589793238462643383279502884L;
  for (double x : {1.5, 2.0, 10.0, 1e10}) {
    const LD ach = std::log(LD(x) + std::sqrt(LD(x) * x - 1));  // acosh x
    const LD ath = 0.5L * std::log((LD(x) + 1) / (LD(x) - 1));  // atanh(1/x)
    for (double s : {1.0, -1.0}) {
      const double zero = std::copysign(0.0, s);
      // f(x +- i0) and f(-x +- i0) on real cuts; f(+-0 + i x) on imaginary cuts.
      EXPECT_TRUE(close(kiln::detail::complex_asin(C(x, zero)), {pi / 2, s * ach}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_acos(C(x, zero)), {0, -s * ach}, 4, false));
      EXPECT_TRUE(close(kiln::detail::complex_acos(C(-x, zero)), {pi, -s * ach}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_atanh(C(x, zero)), {ath, s * pi / 2}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_acosh(C(-x, zero)), {ach, s * pi}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_asinh(C(zero, x)), {s * ach, pi / 2}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_atan(C(zero, x)), {s * pi / 2, ath}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_log(C(-x, zero)), {std::log(LD(x)), s * pi}, 4));
      EXPECT_TRUE(close(kiln::detail::complex_sqrt(C(-x, zero)), {0, s * std::sqrt(LD(x))}, 4));
    }
  }
}

template <class T>
void check_log10_log2_pow() {
  const std::vector<T> vals = {T(-7.5), T(-1), T(-0.25), T(0), T(1e-3),
                               T(0.3),  T(1),  T(2.5),   T(40)};
  const std::vector<complex<T>> exponents = {{T(2), T(0)},    {T(0.5), T(0)}, {T(-1.5), T(0.5)},
                                             {T(0.3), T(-2)}, {T(3), T(1)},   {T(0), T(1)}};
  const std::vector<T> real_exponents = {T(2), T(-3), T(0.5), T(-0.75), T(1.0 / 3)};
  for (T x : vals) {
    for (T y : vals) {
      const complex<T> z(x, y);
      if (x == 0 && y == 0) continue;
      const std::complex<LD> lz = std::log(to_ld(z));
      EXPECT_TRUE(close(kiln::log10(z), lz / std::log(LD(10)), kFnUlps));
      EXPECT_TRUE(close(kiln::log2(z), lz / std::log(LD(2)), kFnUlps));
      // pow = exp(w log z): an error of eps |w log z| in the exponent is inherent.
      for (const complex<T>& w : exponents) {
        const std::complex<LD> u = to_ld(w) * lz;
        const double ulps = 8 + 4 * double(std::abs(u));
        const std::complex<LD> ref = std::exp(u);
        EXPECT_TRUE(close(kiln::pow(z, w), ref, ulps, false)) << x << " " << y;
        EXPECT_TRUE(close(kiln::detail::complex_pow(z, w), ref, ulps, false)) << x << " " << y;
      }
      for (T p : real_exponents) {
        const std::complex<LD> u = LD(p) * lz;
        const double ulps = 8 + 4 * double(std::abs(u));
        const std::complex<LD> ref = std::exp(u);
        EXPECT_TRUE(close(kiln::pow(z, p), ref, ulps, false)) << x << " " << y << " " << p;
        EXPECT_TRUE(close(kiln::detail::complex_pow(z, p), ref, ulps, false));
      }
      if (x > 0) {  // real ^ complex
        const std::complex<LD> ref = std::exp(to_ld(z) * std::log(LD(x)));
        EXPECT_TRUE(close(kiln::pow(x, z), ref,
                          8 + 4 * double(std::abs(to_ld(z) * std::log(LD(x)))), false));
      }
    }
  }
  EXPECT_EQ(kiln::pow(complex<T>(0, 0), complex<T>(2, 0)), complex<T>(0, 0));
  EXPECT_EQ(kiln::detail::complex_pow(complex<T>(0, 0), complex<T>(2, 0)), complex<T>(0, 0));
  EXPECT_EQ(kiln::detail::complex_pow(complex<T>(0, 0), T(2)), complex<T>(0, 0));
}

TEST(Complex, Log10Log2PowDouble) { check_log10_log2_pow<double>(); }
TEST(Complex, Log10Log2PowFloat) { check_log10_log2_pow<float>(); }

// ---- Arithmetic ---------------------------------------------------------------------------------

template <class T>
std::vector<complex<T>> random_points(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<T> g = grid_values<T>();
  using L = std::numeric_limits<T>;
  std::uniform_real_distribution<double> ex(std::log2(double(L::min())),
                                            std::log2(double(L::max())));
  std::vector<complex<T>> out;
  auto pick = [&]() -> T {
    if (rng() % 2) return g[rng() % g.size()];
    const T v = T(std::exp2(ex(rng)));
    return (rng() % 2) ? v : -v;
  };
  for (size_t i = 0; i < n; ++i) out.emplace_back(pick(), pick());
  return out;
}

template <class T>
void check_arithmetic() {
  using L = std::numeric_limits<T>;
  const auto a_pts = random_points<T>(40000, 21), b_pts = random_points<T>(40000, 22);
  for (size_t i = 0; i < a_pts.size(); ++i) {
    const complex<T> a = a_pts[i], b = b_pts[i];
    const std::complex<LD> la = to_ld(a), lb = to_ld(b);
    const auto fits = [](const std::complex<LD>& z) {
      return std::isfinite(T(z.real())) && std::isfinite(T(z.imag()));
    };
    const auto expect_close = [&](const complex<T>& got, const std::complex<LD>& ref, double ulps) {
      if (fits(ref)) {
        EXPECT_TRUE(close(got, ref, ulps, false))
            << "(" << a.real() << ", " << a.imag() << ") (" << b.real() << ", " << b.imag() << ")";
      }
    };
    expect_close(a + b, la + lb, 2);
    expect_close(a - b, la - lb, 2);
    // The textbook product (c10's) is exact to a few ulps when no partial product overflows.
    const LD parts[4] = {la.real() * lb.real(), la.imag() * lb.imag(), la.real() * lb.imag(),
                         la.imag() * lb.real()};
    bool products_fit = true;
    for (LD p : parts) products_fit = products_fit && std::fabs(p) <= L::max();
    if (products_fit) expect_close(a * b, la * lb, 4);
    // Division never overflows or underflows in intermediate steps.
    if (b != T(0)) {
      const std::complex<LD> q = la / lb;
      EXPECT_TRUE(close(a / b, q, 4, false))
          << "(" << a.real() << "," << a.imag() << ")/(" << b.real() << "," << b.imag() << ")";
      complex<T> c = a;
      c /= b;
      EXPECT_TRUE(close(c, q, 4, false));
      EXPECT_TRUE(close(T(2) / b, LD(2) / lb, 4, false));
    }
    expect_close(a * T(3), la * LD(3), 1);
    expect_close(T(3) * a, la * LD(3), 1);
    expect_close(a / T(4), la / LD(4), 1);
  }
}

TEST(Complex, ArithmeticDouble) { check_arithmetic<double>(); }
TEST(Complex, ArithmeticFloat) { check_arithmetic<float>(); }

TEST(Complex, DivisionOfHugeAndTinyOperands) {
  using C = complex<double>;
  const double big = 1e308, tiny = 1e-308, max = std::numeric_limits<double>::max();
  const std::vector<std::pair<C, C>> cases = {
      {C(big, big), C(big, big)},    {C(max, max), C(max, -max)},
      {C(big, -big), C(tiny, tiny)}, {C(tiny, tiny), C(tiny, -tiny)},
      {C(1, 1), C(1e-320, 1e-320)},  {C(1e-300, 1e300), C(1e300, 1e-300)},
      {C(3, 4), C(max, max / 2)},    {C(4.9e-324, 0), C(4.9e-324, 4.9e-324)},
      {C(big, 1), C(1, big)},        {C(1e-310, 1e-310), C(1e300, 1e300)}};
  for (const auto& [a, b] : cases) {
    const std::complex<LD> ref = to_ld(a) / to_ld(b);
    EXPECT_TRUE(close(a / b, ref, 4, false)) << a.real() << " " << a.imag() << " / " << b.real();
  }
  EXPECT_EQ(C(big, big) / C(big, big), C(1, 0));
  EXPECT_EQ(complex<float>(3e38f, 3e38f) / complex<float>(3e38f, 3e38f), complex<float>(1, 0));
}

TEST(Complex, DivisionSpecialValuesFollowAnnexG) {
  using C = complex<double>;
  const double inf = INFINITY;
  auto check = [](C got, C want) {
    auto same = [](double u, double v) { return (std::isnan(u) && std::isnan(v)) || u == v; };
    EXPECT_TRUE(same(got.real(), want.real()) && same(got.imag(), want.imag()))
        << got.real() << " " << got.imag();
  };
  check(C(1, 1) / C(0, 0), C(inf, inf));
  check(C(1, 0) / C(0, 0), C(inf, NAN));
  check(C(-2, 3) / C(-0.0, 0), C(2 * inf, -3 * inf));  // copysign(inf, c) * a
  check(C(inf, 0) / C(1, 1), C(inf, -inf));
  check(C(inf, inf) / C(2, 0), C(inf, inf));
  check(C(1, 1) / C(inf, inf), C(0, 0));
  check(C(1, 2) / C(inf, 0), C(0, 0));
  check(C(NAN, 1) / C(1, 1), C(NAN, NAN));
}

TEST(Complex, Layout) {
  static_assert(sizeof(complex<float>) == 8 && alignof(complex<float>) == 8);
  static_assert(sizeof(complex<double>) == 16 && alignof(complex<double>) == 16);
  static_assert(std::is_trivially_copyable_v<complex<double>>);
  static_assert(std::is_standard_layout_v<complex<float>>);
  static_assert(!std::is_convertible_v<complex<double>, complex<float>>);
  static_assert(!std::is_convertible_v<complex<float>, complex<double>>);
  static_assert(std::is_same_v<decltype(complex<double>() * 2), complex<double>>);
  // Same bytes as std::complex.
  const std::complex<double> s(1.25, -2.5);
  const complex<double> k = std::bit_cast<complex<double>>(s);
  EXPECT_EQ(k.real(), 1.25);
  EXPECT_EQ(k.imag(), -2.5);
  // constexpr construction and arithmetic.
  constexpr complex<double> a(1, 2), b = a * a + conj(a) - 1.0;
  static_assert(b.real() == -3 && b.imag() == 2);
  static_assert(complex<float>(2.0f) == 2.0f && 2.0f == complex<float>(2.0f));
  static_assert(kiln::norm(complex<double>(3, 4)) == 25);
  const complex<float> f(complex<double>(0.1, 0.2));
  EXPECT_EQ(f.real(), 0.1f);
  EXPECT_EQ(f.imag(), 0.2f);
  complex<double> c(std::complex<double>(3, 4));
  EXPECT_EQ(static_cast<std::complex<double>>(c), std::complex<double>(3, 4));
  c.real(5);
  c.imag(-6);
  EXPECT_EQ(c, complex<double>(5, -6));
  c = 7.0;
  EXPECT_EQ(c, complex<double>(7, 0));
  EXPECT_NE(c, 7.5);
}

TEST(Complex, CompoundAssignmentAndMixedOperands) {
  using C = complex<double>;
  C z(1, 2);
  z += C(1, 1);
  EXPECT_EQ(z, C(2, 3));
  z -= 1.0;
  EXPECT_EQ(z, C(1, 3));
  z *= C(0, 1);
  EXPECT_EQ(z, C(-3, 1));
  z *= 2;
  EXPECT_EQ(z, C(-6, 2));
  z /= 2.0;
  EXPECT_EQ(z, C(-3, 1));
  EXPECT_EQ(1.0 + z, C(-2, 1));
  EXPECT_EQ(z - 1.0, C(-4, 1));
  EXPECT_EQ(1.0 - z, C(4, -1));
  EXPECT_EQ(2 * z, C(-6, 2));
  EXPECT_EQ(-z, C(3, -1));
  EXPECT_EQ(+z, z);
}

template <class T>
void check_elementary() {
  for (const complex<T>& z : grid_points<T>()) {
    const std::complex<LD> lz = to_ld(z);
    EXPECT_EQ(kiln::real(z), z.real());
    EXPECT_EQ(kiln::imag(z), z.imag());
    // Within one ulp of the exact value (half a subnormal step where the result is that small).
    const auto within_ulp = [](T got, LD ref) {
      using L = std::numeric_limits<T>;
      return std::fabs(got - ref) <= L::epsilon() * std::fabs(ref) + LD(L::denorm_min()) / 2;
    };
    const LD abs_ref = std::abs(lz), arg_ref = std::arg(lz);
    if (std::isfinite(T(abs_ref))) {
      EXPECT_TRUE(within_ulp(kiln::abs(z), abs_ref));
    }
    EXPECT_TRUE(within_ulp(kiln::arg(z), arg_ref));
    const complex<T> c = kiln::conj(z);
    EXPECT_EQ(c.real(), z.real());
    EXPECT_EQ(c.imag(), -z.imag());
    EXPECT_TRUE(std::signbit(c.imag()) != std::signbit(z.imag()));
    const LD n = std::norm(lz);
    if (std::isfinite(T(n))) {
      EXPECT_LE(std::fabs(kiln::norm(z) - n),
                2 * std::numeric_limits<T>::epsilon() * n + std::numeric_limits<T>::denorm_min());
    }
    EXPECT_EQ(kiln::proj(z), z);
    EXPECT_TRUE(kiln::isfinite(z));
    EXPECT_FALSE(kiln::isnan(z) || kiln::isinf(z));
  }
  using L = std::numeric_limits<T>;
  const complex<T> pinf = kiln::proj(complex<T>(-L::infinity(), -2));
  EXPECT_EQ(pinf.real(), L::infinity());
  EXPECT_TRUE(pinf.imag() == 0 && std::signbit(pinf.imag()));
  EXPECT_EQ(kiln::proj(complex<T>(L::quiet_NaN(), L::infinity())).real(), L::infinity());
  EXPECT_TRUE(kiln::isnan(complex<T>(1, L::quiet_NaN())));
  EXPECT_TRUE(kiln::isinf(complex<T>(-L::infinity(), L::quiet_NaN())));
  EXPECT_FALSE(kiln::isfinite(complex<T>(0, L::infinity())));
  EXPECT_TRUE(kiln::detail::isnan(complex<T>(L::quiet_NaN(), 0)));
  for (T r : {T(0), T(0.5), T(2), T(1e10)}) {
    for (T t : {T(-3), T(-1), T(0), T(0.7), T(2)}) {
      const std::complex<LD> ref = std::polar(LD(r), LD(t));
      EXPECT_TRUE(close(kiln::polar(r, t), ref, 2, false));
    }
  }
}

TEST(Complex, ElementaryDouble) { check_elementary<double>(); }
TEST(Complex, ElementaryFloat) { check_elementary<float>(); }

TEST(Complex, Prints) {
  std::ostringstream os;
  os << complex<double>(1, 2) << complex<float>(1.5f, -0.5f) << complex<double>(0, -0.0);
  EXPECT_EQ(os.str(), "(1+2j)(1.5-0.5j)(0-0j)");
}

}  // namespace
