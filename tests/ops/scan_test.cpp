// Unit tests of scans/sorting/searching beyond the op table: index validity of kthvalue/median/
// mode, a 1M-element sort against std::stable_sort (radix path, both orders, NaN), unrequested
// unique outputs, scalar forms of searchsorted/bucketize, complex logcumsumexp, quantile output
// shapes, and thread-count independence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

template <class T>
std::vector<T> values_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

bool nan_less(float a, float b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

TEST(ScanSort, MillionMatchesStableSort) {
  std::vector<float> v = random_floats(1 << 20, 7);
  for (size_t i = 0; i < v.size(); i += 997) v[i] = std::numeric_limits<float>::quiet_NaN();
  for (size_t i = 1; i < v.size(); i += 1009) v[i] = v[i - 1];  // ties
  for (size_t i = 5; i < v.size(); i += 4099) v[i] = (i % 2) ? 0.0f : -0.0f;
  Tensor x = from_vector(v);
  for (bool desc : {false, true}) {
    std::vector<int64_t> o(v.size());
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
      return desc ? nan_less(v[b], v[a]) : nan_less(v[a], v[b]);
    });
    auto [vals, idx] = sort(x, true, 0, desc);
    EXPECT_EQ(values_of<int64_t>(idx), o) << (desc ? "descending" : "ascending");
    std::vector<float> sv = values_of<float>(vals);
    bool same = true;
    for (size_t i = 0; i < o.size() && same; ++i)
      same = std::memcmp(&sv[i], &v[o[i]], sizeof(float)) == 0;  // bit-exact, -0.0 kept
    EXPECT_TRUE(same);
  }
}

TEST(ScanSort, PickedIndicesPointAtValues) {
  std::mt19937 g(5);
  std::vector<float> v(6 * 31);
  for (auto& x : v) x = static_cast<float>(g() % 5);  // many ties
  Tensor x = from_vector(v, {6, 31});
  auto check = [&](const Tensor& values, const Tensor& idx) {
    auto vv = values_of<float>(values);
    auto ii = values_of<int64_t>(idx);
    for (int64_t r = 0; r < 6; ++r) EXPECT_EQ(vv[r], v[r * 31 + ii[r]]);
  };
  auto [a, ai] = kthvalue(x, 9, 1);
  check(a, ai);
  auto [m, mi] = median(x, 1);
  check(m, mi);
  auto [o, oi] = mode(x, 1);
  check(o, oi);
  // median of all elements: the lower middle of the sorted values
  std::vector<float> s = v;
  std::sort(s.begin(), s.end());
  EXPECT_EQ(median(x).item<float>(), s[(s.size() - 1) / 2]);
}

TEST(ScanUnique, UnrequestedOutputsAreEmpty) {
  Tensor x = from_vector<int64_t>({3, 1, 3, 2});
  auto [u, inv, cnt] = unique(x);
  EXPECT_EQ(values_of<int64_t>(u), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(inv.numel(), 0);
  EXPECT_EQ(cnt.numel(), 0);
  auto [u2, inv2, cnt2] = x.unique_consecutive(true, true);
  EXPECT_EQ(values_of<int64_t>(u2), (std::vector<int64_t>{3, 1, 3, 2}));
  EXPECT_EQ(values_of<int64_t>(inv2), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(values_of<int64_t>(cnt2), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(ScanSearch, ScalarForms) {
  Tensor seq = from_vector<float>({1, 2, 2, 4});
  EXPECT_EQ(searchsorted(seq, Scalar(2)).item<int64_t>(), 1);
  EXPECT_EQ(searchsorted(seq, Scalar(2), false, true).item<int64_t>(), 3);
  EXPECT_EQ(searchsorted(seq, Scalar(2.5)).dim(), 0);
  EXPECT_EQ(bucketize(Scalar(5), seq).item<int64_t>(), 4);
  EXPECT_THROW(searchsorted(ones({2, 2}), Scalar(1)), Error);
  EXPECT_THROW(bucketize(ones({2}), ones({2, 2})), Error);
}

TEST(ScanCum, ComplexLogCumSumExp) {
  std::vector<complex<double>> z = {{0.5, 1.0}, {-1.0, 2.0}, {0.25, -0.5}, {1.5, 0.0}};
  Tensor x = from_vector(z);
  std::vector<complex<double>> r = values_of<complex<double>>(logcumsumexp(x, 0));
  std::complex<double> acc = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    acc += std::exp(std::complex<double>(z[i].real(), z[i].imag()));
    const std::complex<double> e = std::exp(std::complex<double>(r[i].real(), r[i].imag()));
    EXPECT_NEAR(e.real(), acc.real(), 1e-12);
    EXPECT_NEAR(e.imag(), acc.imag(), 1e-12);
  }
}

TEST(ScanCum, IntegerDtypesAndInPlace) {
  Tensor x = from_vector<int32_t>({1, 2, 3});
  EXPECT_EQ(cumsum(x, 0).dtype(), kInt64);
  EXPECT_EQ(cumsum(ones({3}, kBool), 0).dtype(), kInt64);
  EXPECT_EQ(cumprod(x, 0, kFloat32).dtype(), kFloat32);
  x.cumsum_(0);
  EXPECT_EQ(x.dtype(), kInt32);
  EXPECT_EQ(values_of<int32_t>(x), (std::vector<int32_t>{1, 3, 6}));
  auto [v, i] = cummax(full({}, 2.0), 0);
  EXPECT_EQ(v.dim(), 0);
  EXPECT_EQ(i.item<int64_t>(), 0);
}

TEST(ScanQuantile, Shapes) {
  Tensor x = ones({2, 3, 4});
  Tensor q = from_vector<float>({0.1f, 0.9f});
  EXPECT_EQ(quantile(x, 0.5).dim(), 0);
  EXPECT_EQ(quantile(x, q).sizes(), IntArrayRef({2}));
  EXPECT_EQ(quantile(x, q, 1).sizes(), IntArrayRef({2, 2, 4}));
  EXPECT_EQ(quantile(x, q, 1, true).sizes(), IntArrayRef({2, 2, 1, 4}));
  EXPECT_EQ(quantile(x, 0.5, std::nullopt, true).sizes(), IntArrayRef({1, 1, 1}));
  EXPECT_EQ(quantile(x, q, std::nullopt, true).sizes(), IntArrayRef({2, 1, 1, 1}));
}

TEST(ScanSort, ThreadCountIndependent) {
  const int saved = get_num_threads();
  Tensor x = from_vector(random_floats(300 * 400, 9), {300, 400});
  std::vector<std::vector<float>> res;
  for (int t : {1, 2}) {
    set_num_threads(t);
    auto [s, si] = sort(x, 0);
    auto [k, ki] = topk(x, 5, 1);
    Tensor y = cat({s.reshape({-1}), k.reshape({-1}), cumsum(x, 1).reshape({-1}),
                    quantile(x, 0.3, 1), std::get<0>(median(x, 0))});
    res.push_back(values_of<float>(y));
  }
  set_num_threads(saved);
  EXPECT_EQ(res[0], res[1]);
}

}  // namespace
}  // namespace kiln
