// Unit tests of the elementwise front ends beyond the op table: C++ operators, in-place and out=
// forms, type promotion corner cases, thread-count independence, special-function identities.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  std::vector<double> out;
  for (const Scalar& s : t.contiguous().tolist_flat()) out.push_back(s.to_double());
  return out;
}

Tensor f32(std::vector<float> v) { return from_vector(v); }
Tensor i64(std::vector<int64_t> v) { return from_vector(v); }

// Bitwise equality of two tensors of the same dtype and shape (NaNs with equal bits match).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// ---- operators ----

TEST(ElementwiseOperators, ArithmeticMatchesFunctions) {
  Tensor a = f32({1.5f, -2.f, 3.f}), b = f32({2.f, 4.f, -0.5f});
  EXPECT_TRUE(same_bits(a + b, add(a, b)));
  EXPECT_TRUE(same_bits(a - b, sub(a, b)));
  EXPECT_TRUE(same_bits(a * b, mul(a, b)));
  EXPECT_TRUE(same_bits(a / b, div(a, b)));
  EXPECT_TRUE(same_bits(a % b, remainder(a, b)));
  EXPECT_TRUE(same_bits(-a, neg(a)));
  EXPECT_EQ(vals(2 - a), (std::vector<double>{0.5, 4, -1}));
  EXPECT_EQ(vals(a - 2), (std::vector<double>{-0.5, -4, 1}));
  EXPECT_EQ(vals(6 / b), (std::vector<double>{3, 1.5, -12}));
  EXPECT_EQ(vals(3 * a), (std::vector<double>{4.5, -6, 9}));
  EXPECT_EQ(vals(a + 1), (std::vector<double>{2.5, -1, 4}));
  // Python's % on negative operands: the sign of the divisor.
  EXPECT_EQ(vals(i64({-7, 7, -7}) % i64({3, -3, -3})), (std::vector<double>{2, -2, -1}));
  EXPECT_EQ(vals(-7 % i64({3})), (std::vector<double>{2}));
}

TEST(ElementwiseOperators, ComparisonsReturnBoolTensors) {
  Tensor a = f32({1, 2, 3}), b = f32({3, 2, 1});
  Tensor eq = a == b;
  EXPECT_EQ(eq.dtype(), kBool);
  EXPECT_EQ(vals(eq), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(vals(a != b), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(vals(a < b), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(vals(a <= b), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(vals(a > 2), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(vals(2 >= a), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(vals(2 == a), (std::vector<double>{0, 1, 0}));
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_FALSE(equal(a, b));
}

TEST(ElementwiseOperators, BitwiseAndShifts) {
  Tensor a = i64({12, -1, 5}), b = i64({10, 3, 1});
  EXPECT_EQ(vals(a & b), (std::vector<double>{8, 3, 1}));
  EXPECT_EQ(vals(a | b), (std::vector<double>{14, -1, 5}));
  EXPECT_EQ(vals(a ^ b), (std::vector<double>{6, -4, 4}));
  EXPECT_EQ(vals(~a), (std::vector<double>{-13, 0, -6}));
  EXPECT_EQ(vals(a << 2), (std::vector<double>{48, -4, 20}));
  EXPECT_EQ(vals(a >> 1), (std::vector<double>{6, -1, 2}));
  EXPECT_EQ(vals(1 << b), (std::vector<double>{1024, 8, 2}));
  Tensor t = from_vector(std::vector<bool>{true, false}),
         u = from_vector(std::vector<bool>{true, true});
  EXPECT_EQ((t & u).dtype(), kBool);
  EXPECT_EQ(vals(t ^ u), (std::vector<double>{0, 1}));
  EXPECT_EQ(vals(~t), (std::vector<double>{0, 1}));
}

TEST(ElementwiseOperators, CompoundAssignmentIsInPlace) {
  Tensor a = i64({12, -7, 5});
  Tensor alias = a;
  a += 1;
  a -= i64({1, 1, 1});
  a *= 2;
  a %= 5;
  EXPECT_TRUE(alias.is_same(a));
  EXPECT_EQ(vals(alias), (std::vector<double>{4, 1, 0}));  // 24 % 5, -14 % 5, 10 % 5
  a |= 8;
  a &= 12;
  a ^= 1;
  a <<= 1;
  a >>= 2;
  EXPECT_EQ(vals(a), (std::vector<double>{6, 4, 4}));
  Tensor f = f32({1, 2});
  f /= 4;
  EXPECT_EQ(vals(f), (std::vector<double>{0.25, 0.5}));
  EXPECT_THROW(a /= 2, Error);  // float result into an int64 tensor
}

// ---- in-place and out= forms agree with the functional form ----

TEST(ElementwiseForms, InPlaceAndOutMatchFunctional) {
  Tensor x = f32({0.25f, 0.5f, 0.75f, 1.5f, -0.3f});
  struct U {
    Tensor (*fn)(const Tensor&);
    Tensor& (*out)(Tensor&, const Tensor&);
    Tensor& (Tensor::*inplace)();
  };
  std::vector<U> ops = {{exp, exp_out, &Tensor::exp_},
                        {log1p, log1p_out, &Tensor::log1p_},
                        {sin, sin_out, &Tensor::sin_},
                        {tanh, tanh_out, &Tensor::tanh_},
                        {sigmoid, sigmoid_out, &Tensor::sigmoid_},
                        {erfinv, erfinv_out, &Tensor::erfinv_},
                        {digamma, digamma_out, &Tensor::digamma_},
                        {floor, floor_out, &Tensor::floor_},
                        {relu, relu_out, &Tensor::relu_},
                        {sqrt, sqrt_out, &Tensor::sqrt_},
                        {neg, neg_out, &Tensor::neg_},
                        {square, square_out, &Tensor::square_}};
  for (const U& u : ops) {
    Tensor ref = u.fn(x);
    Tensor out = empty({0});
    u.out(out, x);
    EXPECT_TRUE(same_bits(out, ref));
    Tensor t = x.clone();
    (t.*u.inplace)();
    EXPECT_TRUE(same_bits(t, ref));
  }
}

TEST(ElementwiseForms, OutResizesEmptyAndCastsToItsDtype) {
  Tensor a = f32({1, 2, 3}), b = f32({0.5f});
  Tensor out = empty({0}, kFloat64);
  add_out(out, a, b);
  EXPECT_EQ(out.dtype(), kFloat64);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(vals(out), (std::vector<double>{1.5, 2.5, 3.5}));
  // a bool result may be written to a float out (0/1), as PyTorch
  Tensor fo = empty({3});
  lt_out(fo, a, 2);
  EXPECT_EQ(vals(fo), (std::vector<double>{1, 0, 0}));
  // wrong non-empty shape is an error and leaves out alone
  Tensor bad = zeros({2});
  EXPECT_THROW(mul_out(bad, a, b), Error);
  EXPECT_EQ(vals(bad), (std::vector<double>{0, 0}));
}

TEST(ElementwiseForms, InPlaceOnNonContiguousSelf) {
  Tensor base = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = base.t();  // 3 x 2 view
  t.mul_(f32({10, 100}));
  EXPECT_EQ(vals(base), (std::vector<double>{10, 20, 30, 400, 500, 600}));
  Tensor col = base.select(1, 1);
  col.add_(1);
  EXPECT_EQ(vals(base), (std::vector<double>{10, 21, 30, 400, 501, 600}));
}

TEST(ElementwiseForms, InPlaceSelfIsNotBroadcast) {
  Tensor t = ones({1});
  EXPECT_THROW(t.add_(ones({3})), Error);
  Tensor u = ones({3});
  u.add_(ones({1}));  // other may broadcast
  EXPECT_EQ(vals(u), (std::vector<double>{2, 2, 2}));
}

// ---- type promotion ----

TEST(ElementwisePromotion, ScalarsAndZeroDimTensors) {
  Tensor i = i64({1, 2}), i32 = ones({2}, kInt32), h = ones({2}, kFloat16);
  EXPECT_EQ((i + 2.5).dtype(), kFloat32);        // a float scalar raises the category
  EXPECT_EQ((i32 + 7).dtype(), kInt32);          // an int scalar does not widen
  EXPECT_EQ((h * 2.5).dtype(), kFloat16);        // nor does a float scalar
  EXPECT_EQ((i32 + tensor(3)).dtype(), kInt32);  // 0-dim int64 tensor: same category
  EXPECT_EQ((i32 + tensor(3.5)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kUInt8) + ones({2}, kInt8)).dtype(), kInt16);
  EXPECT_EQ((h + ones({2}, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}) * complex<double>(0, 1)).dtype(), kComplex64);
  EXPECT_EQ((ones({2}, kFloat64) * complex<double>(0, 1)).dtype(), kComplex128);
  Tensor b = from_vector(std::vector<bool>{true, false});
  EXPECT_EQ((b + b).dtype(), kBool);
  EXPECT_EQ((b + 1).dtype(), kInt64);
  EXPECT_EQ(vals(b + b), (std::vector<double>{1, 0}));
}

TEST(ElementwisePromotion, OpRules) {
  Tensor i = i64({7, -7});
  EXPECT_EQ(exp(i).dtype(), kFloat32);
  EXPECT_EQ((i / i64({2, 2})).dtype(), kFloat32);
  EXPECT_EQ(vals(i / i64({2, 2})), (std::vector<double>{3.5, -3.5}));
  EXPECT_EQ(div(i, 2, "floor").dtype(), kInt64);
  EXPECT_EQ(vals(div(i, 2, "floor")), (std::vector<double>{3, -4}));
  EXPECT_EQ(vals(div(i, 2, "trunc")), (std::vector<double>{3, -3}));
  EXPECT_EQ(pow(i, 2.5).dtype(), kFloat32);
  EXPECT_EQ(pow(i, 2).dtype(), kInt64);
  EXPECT_EQ(pow(2.5, i).dtype(), kFloat32);
  EXPECT_EQ(abs(ones({2}, kComplex128)).dtype(), kFloat64);
  EXPECT_EQ(angle(i).dtype(), kFloat32);
  EXPECT_EQ(atan2(i, i).dtype(), kFloat32);
  EXPECT_EQ(square(from_vector(std::vector<bool>{true})).dtype(), kInt64);
  EXPECT_EQ(where(i > 0, i, 0.5).dtype(), kFloat32);
  EXPECT_EQ(vals(where(i > 0, i, 0.5)), (std::vector<double>{7, 0.5}));
  EXPECT_EQ(where(i > 0, 1, 0).dtype(), kInt64);
  EXPECT_EQ(where(i > 0, 1.0, 0).dtype(), kFloat32);
  EXPECT_EQ(clamp(i, 0.5).dtype(), kFloat32);
  EXPECT_EQ(vals(clamp(i, 0.5)), (std::vector<double>{7, 0.5}));
  EXPECT_EQ(clamp(i, -3, 3).dtype(), kInt64);
  EXPECT_EQ(clamp(i, std::optional<Tensor>(f32({0})), std::nullopt).dtype(), kFloat32);
  EXPECT_EQ((i < 0.5).dtype(), kBool);
  EXPECT_EQ(vals(i64({0, 1}) < 0.5), (std::vector<double>{1, 0}));  // compared as floats
  EXPECT_EQ(float_power(i, 2).dtype(), kFloat64);
  EXPECT_EQ(vals(float_power(i64({2}), -1)), (std::vector<double>{0.5}));
  EXPECT_EQ(isclose(i, i).dtype(), kBool);
}

TEST(ElementwisePromotion, WhereAcceptsUint8Condition) {
  Tensor c = from_vector(std::vector<uint8_t>{1, 0, 2});
  EXPECT_EQ(vals(where(c, f32({1, 2, 3}), f32({-1, -2, -3}))), (std::vector<double>{1, -2, 3}));
  EXPECT_THROW(where(ones({3}, kInt32), f32({1, 2, 3}), 0), Error);
}

// ---- semantics corner cases ----

TEST(ElementwiseSemantics, IntegerEdgeCasesDoNotTrap) {
  const int64_t mn = std::numeric_limits<int64_t>::min();
  Tensor m = i64({mn, 7});
  EXPECT_EQ(vals(div(m, -1, "trunc"))[0], static_cast<double>(mn));  // wraps, as two's complement
  EXPECT_EQ(vals(div(m, -1, "floor"))[0], static_cast<double>(mn));
  EXPECT_EQ(vals(remainder(m, -1)), (std::vector<double>{0, 0}));
  EXPECT_EQ(vals(fmod(m, -1)), (std::vector<double>{0, 0}));
  Tensor i8 = from_vector(std::vector<int8_t>{-128, 127});
  EXPECT_EQ(vals(abs(i8)), (std::vector<double>{-128, 127}));
  EXPECT_EQ(vals(neg(i8)), (std::vector<double>{-128, -127}));
  EXPECT_EQ(vals(i8 + from_vector(std::vector<int8_t>{-1, 1})), (std::vector<double>{127, -128}));
  // integer pow with negative tensor exponents (no error, PyTorch's values)
  EXPECT_EQ(vals(pow(i64({1, -1, -1, 2, 0}), i64({-3, -3, -2, -1, 2}))),
            (std::vector<double>{1, -1, 1, 0, 0}));
}

TEST(ElementwiseSemantics, FloatingSpecialCases) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor x = from_vector(std::vector<double>{nan, -0.0, 2.0, -inf});
  EXPECT_EQ(vals(sign(x)), (std::vector<double>{0, 0, 1, -1}));  // PyTorch: sign(NaN) == 0
  auto mx = vals(maximum(x, from_vector(std::vector<double>{1, 1, nan, 0})));
  EXPECT_TRUE(std::isnan(mx[0]) && mx[1] == 1 && std::isnan(mx[2]) && mx[3] == 0);
  auto fx = vals(fmax(x, from_vector(std::vector<double>{1, 1, nan, 0})));
  EXPECT_EQ(fx, (std::vector<double>{1, 1, 2, 0}));
  auto c = vals(clamp(x, -1.0, 1.0));
  EXPECT_TRUE(std::isnan(c[0]) && c[1] == 0 && c[2] == 1 && c[3] == -1);
  auto cn = vals(clamp(f32({1, 2}), nan, 1.0));  // a NaN bound gives NaN
  EXPECT_TRUE(std::isnan(cn[0]) && std::isnan(cn[1]));
  EXPECT_EQ(vals(clamp(f32({-5, 0, 5}), 2.0, 1.0)), (std::vector<double>{1, 1, 1}));  // min > max
  EXPECT_EQ(vals(div(f32({5, -5, 0}), f32({INFINITY, INFINITY, 2}), "floor")),
            (std::vector<double>{0, -1, 0}));
  EXPECT_EQ(vals(remainder(f32({5, -5}), f32({INFINITY, INFINITY}))),
            (std::vector<double>{5, INFINITY}));
  // lerp is exact at both ends
  Tensor s = f32({0.1f, -3.7f}), e = f32({1e8f, 0.3f});
  EXPECT_TRUE(same_bits(lerp(s, e, 0.0), s));
  EXPECT_TRUE(same_bits(lerp(s, e, 1.0), e));
}

// Exact published values: psi(1) = -gamma, psi(1/2) = -gamma - 2 ln 2, psi(n + 1) = H_n - gamma
// (Abramowitz & Stegun 6.3.2, 6.3.3); erfinv(erf(y)) == y.
TEST(ElementwiseSemantics, SpecialFunctionIdentities) {
  const double gamma = 0.57721566490153286060651209008240243;
  auto d = vals(digamma(from_vector(std::vector<double>{1, 0.5, 5, -0.5})));
  EXPECT_NEAR(d[0], -gamma, 1e-15);
  EXPECT_NEAR(d[1], -gamma - 2 * std::log(2.0), 1e-15);
  EXPECT_NEAR(d[2], 1 + 0.5 + 1.0 / 3 + 0.25 - gamma, 1e-14);
  EXPECT_NEAR(d[3], -gamma - 2 * std::log(2.0) + 2, 1e-14);  // psi(-1/2) = psi(1/2) + 2
  // Round trips where erf is well conditioned, then the tail through erfc: for x = 1 - 2^-k
  // (exact), erfc(erfinv(x)) must be 2^-k to nearly full precision.
  std::vector<double> ys;
  for (double y = -2.5; y <= 2.5; y += 0.125) ys.push_back(y);
  Tensor yt = from_vector(ys);
  auto back = vals(erfinv(erf(yt)));
  for (size_t k = 0; k < ys.size(); ++k) EXPECT_NEAR(back[k], ys[k], 1e-13) << ys[k];
  auto bf = vals(erfinv(erf(yt.to(kFloat32))));
  for (size_t k = 0; k < ys.size(); ++k) EXPECT_NEAR(bf[k], ys[k], 2e-5 * (1 + std::abs(ys[k])));
  std::vector<double> xs;
  for (int k = 2; k <= 50; ++k) xs.push_back(1 - std::ldexp(1.0, -k));
  auto tail = vals(erfinv(from_vector(xs)));
  for (int k = 2; k <= 50; ++k)
    EXPECT_NEAR(std::erfc(tail[k - 2]) / std::ldexp(1.0, -k), 1, 1e-12) << k;
  auto ftail = vals(erfinv(from_vector(xs).to(kFloat32)));
  for (int k = 2; k <= 23; ++k)
    EXPECT_NEAR(std::erfc(ftail[k - 2]) / std::ldexp(1.0, -k), 1, 2e-5 * k) << k;
}

TEST(ElementwiseSemantics, ConjMaterializesAndRealImagAreViews) {
  Tensor z = from_vector(std::vector<complex<double>>{{1, 2}, {3, -4}});
  Tensor c = conj(z);
  EXPECT_FALSE(c.is_same(z));
  EXPECT_EQ(vals(imag(c)), (std::vector<double>{-2, 4}));
  imag(c).fill_(0);  // writing the conjugate leaves z alone
  EXPECT_EQ(vals(imag(z)), (std::vector<double>{2, -4}));
  Tensor r = f32({1, 2});
  EXPECT_TRUE(conj(r).is_same(r));
  real(z).fill_(7);  // real() is a view
  EXPECT_EQ(vals(real(z)), (std::vector<double>{7, 7}));
  EXPECT_THROW(imag(r), Error);
}

TEST(ElementwiseSemantics, CloseAndEqual) {
  Tensor a = from_vector(std::vector<double>{1.0, std::nan(""), INFINITY});
  Tensor b = from_vector(std::vector<double>{1.0 + 1e-9, std::nan(""), INFINITY});
  EXPECT_EQ(vals(isclose(a, b)), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(vals(isclose(a, b, 1e-5, 1e-8, true)), (std::vector<double>{1, 1, 1}));
  EXPECT_FALSE(allclose(a, b));
  EXPECT_TRUE(allclose(a, b, 1e-5, 1e-8, true));
  EXPECT_FALSE(equal(a, a));  // NaN != NaN
  EXPECT_FALSE(equal(f32({1, 2}), f32({1, 2, 3})));
  EXPECT_THROW(equal(f32({1}), i64({1})), Error);
  // float16: |a - b| = 0.0625 vs atol + rtol |b| = 0.05 + 0.01 * 2 = 0.07
  Tensor h1 = f32({2.0625f, 2.125f}).to(kHalf), h2 = f32({2.f, 2.f}).to(kHalf);
  EXPECT_EQ(vals(isclose(h1, h2, 0.01, 0.05)), (std::vector<double>{1, 0}));
  // integers compare in the default float dtype: no uint8 wrap-around in a - b
  Tensor u1 = from_vector(std::vector<uint8_t>{0, 10}),
         u2 = from_vector(std::vector<uint8_t>{1, 13});
  EXPECT_EQ(vals(isclose(u1, u2, 0, 1)), (std::vector<double>{1, 0}));
}

TEST(ElementwiseSemantics, AddAlpha) {
  Tensor b = from_vector(std::vector<bool>{false, false}),
         t = from_vector(std::vector<bool>{true, false});
  EXPECT_EQ(vals(add(b, t, true)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals(add(b, t, false)), (std::vector<double>{0, 0}));
  EXPECT_EQ(vals(sub(f32({1}), f32({2}), 0.5)), (std::vector<double>{0}));
  EXPECT_EQ(vals(add(i64({1}), i64({2}), -3)), (std::vector<double>{-5}));
}

// ---- results do not depend on the number of threads ----

TEST(ElementwiseThreads, OneAndTwoThreadsAgree) {
  int saved = get_num_threads();
  const int64_t n = 300006;  // 7 x 42858
  std::vector<float> v(n), w(n);
  for (int64_t k = 0; k < n; ++k) {
    v[k] = std::sin(0.37f * k) * 3;
    w[k] = std::cos(0.11f * k) + 1.5f;
  }
  Tensor a = from_vector(v, {n / 7, 7}), b = from_vector(w);
  Tensor bt = b.slice(0, 0, n / 7).unsqueeze(1);  // broadcast along the rows
  auto run = [&] {
    std::vector<Tensor> r;
    r.push_back(exp(a));
    r.push_back(a * bt + 1);
    r.push_back(pow(abs(a), bt));
    r.push_back(where(a > 0, a, bt));
    r.push_back(clamp(a.t(), -1.0, 1.0));
    r.push_back(erfinv(a / 3.5));
    r.push_back(div(a.to(kInt32), 3, "floor"));
    r.push_back(a.to(kHalf) * 0.5);
    r.push_back(addcmul(a, a, bt, 0.25));
    return r;
  };
  set_num_threads(1);
  auto one = run();
  set_num_threads(2);
  auto two = run();
  set_num_threads(saved);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(same_bits(one[k], two[k])) << "result " << k;
}

}  // namespace
}  // namespace kiln
