// Unit tests of PyTorch-style tensor indexing (x.index({...}), x.index_put_({...}, v)): result
// shapes by PyTorch's rules (worked out by hand in the comments), values checked element by
// element against the source coordinates, views, errors; and scatter determinism across thread
// counts.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/indexing.h"

namespace kiln {
namespace {

using namespace kiln::indexing;  // NOLINT

struct ThreadGuard {
  int saved = get_num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

// x[i][j][k] = 100 i + 10 j + k as float64 in a [4, 5, 6] tensor, written by hand.
Tensor coded() {
  Tensor x = empty({4, 5, 6}, DType::Float64);
  double* p = x.data_ptr<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 6; ++k) p[(i * 5 + j) * 6 + k] = 100 * i + 10 * j + k;
  return x;
}
double code(int64_t i, int64_t j, int64_t k) { return 100.0 * i + 10.0 * j + k; }

Tensor i64(std::vector<int64_t> v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t = empty(shape, DType::Int64);
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int64_t>()[i] = v[i];
  return t;
}
Tensor mask_of(std::vector<int> v, std::vector<int64_t> shape) {
  Tensor t = empty(shape, DType::Bool);
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<bool>()[i] = v[i] != 0;
  return t;
}

// Reads element `coords` of a float64 tensor through its strides (no kiln ops).
double at(const Tensor& t, const std::vector<int64_t>& c) {
  int64_t off = 0;
  for (size_t d = 0; d < c.size(); ++d) off += c[d] * t.stride(static_cast<int64_t>(d));
  return static_cast<const double*>(t.data_ptr())[off];
}

// Calls f on every coordinate of shape, row-major.
void for_each_coord(IntArrayRef shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t p = 0; p < n; ++p) {
    f(c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

void expect_shape(const Tensor& t, std::vector<int64_t> want) { EXPECT_EQ(t.sizes().vec(), want); }

void expect_error(const std::function<void()>& f, const std::string& contains) {
  try {
    f();
    ADD_FAILURE() << "expected kiln::Error containing '" << contains << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(contains), std::string::npos) << e.what();
  }
}

TEST(TensorIndex, IntegersSelectAndWrapNegative) {
  Tensor x = coded();
  Tensor r = x.index({1});
  expect_shape(r, {5, 6});
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(1, c[0], c[1])); });
  Tensor s = x.index({-1, 2});  // x[3, 2]
  expect_shape(s, {6});
  for_each_coord(s.sizes(), [&](auto& c) { EXPECT_EQ(at(s, c), code(3, 2, c[0])); });
  Tensor e = x.index({2, -5, -6});  // x[2, 0, 0]: 0-dim
  expect_shape(e, {});
  EXPECT_EQ(e.item<double>(), code(2, 0, 0));
}

TEST(TensorIndex, SlicesFollowPythonBounds) {
  Tensor x = coded();
  Tensor a = x.index({Slice(1, None, 2)});  // rows 1, 3
  expect_shape(a, {2, 5, 6});
  for_each_coord(a.sizes(), [&](auto& c) { EXPECT_EQ(at(a, c), code(1 + 2 * c[0], c[1], c[2])); });
  Tensor b = x.index({Slice(), Slice(-3, None)});  // columns 2, 3, 4
  expect_shape(b, {4, 3, 6});
  for_each_coord(b.sizes(), [&](auto& c) { EXPECT_EQ(at(b, c), code(c[0], 2 + c[1], c[2])); });
  expect_shape(x.index({Slice(10, 20)}), {0, 5, 6});         // clamped: empty
  expect_shape(x.index({Slice(None, -10)}), {0, 5, 6});      // clamped below
  expect_shape(x.index({Slice(None, None, 3)}), {2, 5, 6});  // 0, 3
}

TEST(TensorIndex, NoneEllipsisAndBools) {
  Tensor x = coded();
  expect_shape(x.index({None}), {1, 4, 5, 6});
  expect_shape(x.index({Ellipsis, None}), {4, 5, 6, 1});
  expect_shape(x.index({"...", 0}), {4, 5});
  expect_shape(x.index({None, Ellipsis, None}), {1, 4, 5, 6, 1});
  expect_shape(x.index({Slice(), None, 1}), {4, 1, 6});
  expect_shape(x.index({0, Ellipsis, 1}), {5});
  expect_shape(x.index({Ellipsis}), {4, 5, 6});
  // A bool adds a dim of size 1 (true) or 0 (false), as x[True] / x[False].
  Tensor t = x.index({true});
  expect_shape(t, {1, 4, 5, 6});
  for_each_coord(t.sizes(), [&](auto& c) { EXPECT_EQ(at(t, c), code(c[1], c[2], c[3])); });
  expect_shape(x.index({false}), {0, 4, 5, 6});
  expect_shape(x.index({Slice(), true}), {4, 1, 5, 6});
  // 0-dim tensors: an integer one selects, a bool one acts as a bool.
  expect_shape(x.index({i64({2}, {1}).view(IntArrayRef{})}), {5, 6});
  expect_shape(x.index({full({}, true, DType::Bool)}), {1, 4, 5, 6});
}

TEST(TensorIndex, BasicIndexingGivesViews) {
  Tensor x = coded();
  Tensor v = x.index({1, Slice(1, 3)});
  v.fill_(-1.0);
  for_each_coord(x.sizes(), [&](auto& c) {
    bool in = c[0] == 1 && c[1] >= 1 && c[1] < 3;
    EXPECT_EQ(at(x, c), in ? -1.0 : code(c[0], c[1], c[2]));
  });
}

TEST(TensorIndex, AdjacentAdvancedIndicesStayInPlace) {
  Tensor x = coded();
  Tensor i1 = i64({0, 3}, {2, 1}), i2 = i64({1, 4, 2});
  // x[:, i1, i2]: i1 [2, 1] and i2 [3] broadcast to [2, 3] and replace dims 1, 2: [4, 2, 3].
  Tensor r = x.index({Slice(), i1, i2});
  expect_shape(r, {4, 2, 3});
  const int64_t a1[] = {0, 3}, a2[] = {1, 4, 2};
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(c[0], a1[c[1]], a2[c[2]])); });
  // x[i, j] with a trailing full dim: [2, 3, 6].
  Tensor q = x.index({i1, i64({0, 1, 4})});
  expect_shape(q, {2, 3, 6});
  const int64_t b2[] = {0, 1, 4};
  for_each_coord(q.sizes(), [&](auto& c) { EXPECT_EQ(at(q, c), code(a1[c[0]], b2[c[1]], c[2])); });
}

TEST(TensorIndex, SeparatedAdvancedIndicesGoFirst) {
  Tensor x = coded();
  Tensor i0 = i64({3, 1}), i2 = i64({5, -1});
  // x[i0, :, i2]: indexed dims 0 and 2 are not adjacent -> [2, 5].
  Tensor r = x.index({i0, Slice(), i2});
  expect_shape(r, {2, 5});
  const int64_t a0[] = {3, 1}, a2[] = {5, 5};
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(a0[c[0]], c[1], a2[c[0]])); });
  // x[1::2, idx, None, ..., mask] (the example): the None separates idx (dim 1) from the
  // mask (dim 3 of the [2, 5, 1, 6] view); the mask has 3 trues -> B = [3] goes first: [3, 2, 1].
  Tensor idx = i64({0, 2, 4});
  Tensor mask = mask_of({1, 0, 1, 0, 0, 1}, {6});
  Tensor m = x.index({Slice(1, None, 2), idx, None, Ellipsis, mask});
  expect_shape(m, {3, 2, 1});
  const int64_t mk[] = {0, 2, 5};
  for_each_coord(m.sizes(), [&](auto& c) {
    EXPECT_EQ(at(m, c), code(1 + 2 * c[1], idx.data_ptr<int64_t>()[c[0]], mk[c[0]]));
  });
}

TEST(TensorIndex, IntegerBeforeTensorSelectsFirst) {
  // PyTorch applies integers as select() before advanced indexing, so x[0, :, idx] is [5, 3]
  // (NumPy would give [3, 5]).
  Tensor x = coded();
  Tensor r = x.index({0, Slice(), i64({0, 1, 2})});
  expect_shape(r, {5, 3});
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(0, c[0], c[1])); });
}

TEST(TensorIndex, MasksCoverTheirDims) {
  Tensor x = coded();
  std::vector<int> mv(20, 0);
  mv[1] = mv[7] = mv[19] = 1;  // (0,1) (1,2) (3,4)
  Tensor mask = mask_of(mv, {4, 5});
  Tensor r = x.index({mask});
  expect_shape(r, {3, 6});
  const int64_t mi[] = {0, 1, 3}, mj[] = {1, 2, 4};
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(mi[c[0]], mj[c[0]], c[1])); });
  // The mask covers dims 0 and 1, so the integer selects dim 2.
  Tensor s = x.index({mask, 5});
  expect_shape(s, {3});
  for_each_coord(s.sizes(), [&](auto& c) { EXPECT_EQ(at(s, c), code(mi[c[0]], mj[c[0]], 5)); });
  // A 1-D mask on the last dim with a leading slice: [4, 5, 2].
  Tensor t = x.index({Ellipsis, mask_of({0, 1, 0, 0, 1, 0}, {6})});
  expect_shape(t, {4, 5, 2});
  const int64_t tk[] = {1, 4};
  for_each_coord(t.sizes(), [&](auto& c) { EXPECT_EQ(at(t, c), code(c[0], c[1], tk[c[2]])); });
  // All-false mask: empty result.
  expect_shape(x.index({Slice(), mask_of({0, 0, 0, 0, 0}, {5})}), {4, 0, 6});
}

TEST(TensorIndex, Int32IndicesAndEmptyIndices) {
  Tensor x = coded();
  Tensor i = i64({4, -2, 0}).to(DType::Int32);
  Tensor r = x.index({Slice(), i});
  expect_shape(r, {4, 3, 6});
  const int64_t a[] = {4, 3, 0};
  for_each_coord(r.sizes(), [&](auto& c) { EXPECT_EQ(at(r, c), code(c[0], a[c[1]], c[2])); });
  expect_shape(x.index({i64({})}), {0, 5, 6});
}

TEST(TensorIndex, IndexPutWritesThroughEveryIndexKind) {
  Tensor x = coded();
  x.index_put_({Slice(), 1}, 7.0);                          // basic: a view filled
  x.index_put_({i64({0, 2}), Slice(), i64({5, 0})}, -1.0);  // advanced, separated
  Tensor v = empty({3}, DType::Float32);                    // converted to x's dtype
  for (int k = 0; k < 3; ++k) v.data_ptr<float>()[k] = 0.5f + k;
  // x[3, [0, 4, 2], 1] = v: leading size-1 dims of the value are dropped.
  x.index_put_({3, i64({0, 4, 2}), 1}, v.view({1, 3}));
  const int64_t rows[] = {0, 4, 2};
  for_each_coord(x.sizes(), [&](auto& c) {
    double want = code(c[0], c[1], c[2]);
    if (c[1] == 1) want = 7.0;
    if ((c[0] == 0 && c[2] == 5) || (c[0] == 2 && c[2] == 0)) want = -1.0;
    for (int k = 0; k < 3; ++k)
      if (c[0] == 3 && c[2] == 1 && c[1] == rows[k]) want = 0.5 + k;
    EXPECT_EQ(at(x, c), want) << c[0] << "," << c[1] << "," << c[2];
  });
}

TEST(TensorIndex, IndexPutWithMaskAndAccumulate) {
  Tensor x = zeros({3, 4}, DType::Float64);
  Tensor mask = mask_of({1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1}, {3, 4});
  Tensor v = tensor({1.0, 2.0, 3.0, 4.0}, DType::Float64);
  x.index_put_({mask}, v);
  const double want[] = {1, 0, 0, 2, 0, 3, 0, 0, 0, 0, 0, 4};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(x.data_ptr<double>()[i], want[i]);
  // accumulate with repeated indices counts every one of them
  Tensor y = zeros({5}, DType::Float64);
  y.index_put_({std::optional<Tensor>(i64({1, 3, 1, 1, -1}))},
               tensor({1.0, 2.0, 4.0, 8.0, 16.0}, DType::Float64),
               /*accumulate=*/true);
  const double wy[] = {0, 13, 0, 2, 16};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y.data_ptr<double>()[i], wy[i]);
  // without accumulate, the last of repeated indices wins (row-major order)
  Tensor z = zeros({5}, DType::Float64);
  z.index_put_({std::optional<Tensor>(i64({1, 3, 1}))}, tensor({1.0, 2.0, 4.0}, DType::Float64));
  EXPECT_EQ(z.data_ptr<double>()[1], 4.0);
}

TEST(TensorIndex, Errors) {
  Tensor x = coded();
  expect_error(
      [&] {
        x.index({0, 0, 0, 0});
      },
      "[index] too many indices for tensor of dimension 3");
  expect_error(
      [&] {
        x.index({Ellipsis, 0, Ellipsis});
      },
      "an index can only have a single ellipsis");
  expect_error([&] { x.index({4}); },
               "[index] index 4 is out of bounds for dimension 0 with size 4");
  expect_error(
      [&] {
        x.index({Slice(), -6});
      },
      "index -6 is out of bounds for dimension 1 with size 5");
  expect_error([&] { x.index({Slice(0, None, 0)}); }, "slice step must be greater than zero");
  expect_error([&] { x.index({Slice(None, None, -1)}); }, "slice step must be greater than zero");
  expect_error(
      [&] {
        x.index({mask_of({1, 0, 1}, {3})});
      },
      "the shape of the mask [3] at index 0 does not match the shape of the indexed tensor "
      "[4, 5, 6] at index 0");
  expect_error([&] { x.index({zeros({2})}); }, "tensors used as indices must be");
  expect_error(
      [&] {
        x.index({i64({0, 9})});
      },
      "index 9 is out of bounds for dimension 0 with size 4");
  expect_error(
      [&] {
        x.index({i64({0, 1}), i64({0, 1, 2})});
      },
      "shape mismatch: indexing tensors could not be broadcast together");
  expect_error([] { TensorIndex t(".."); }, "expected \"...\"");
  expect_error(
      [&] {
        x.index_put_({i64({0, 1})}, zeros({3, 5, 6}, DType::Float64));
      },
      "cannot be broadcast to indexing result of shape [2, 5, 6]");
  // A failed index_put_ changes nothing.
  Tensor before = x.clone();
  expect_error([&] { x.index_put_({i64({0, 7})}, 1.0); }, "out of bounds");
  EXPECT_TRUE(equal(x, before));
}

TEST(ScatterDeterminism, DuplicatesGiveTheSameBitsForAnyThreadCount) {
  ThreadGuard g;
  std::mt19937_64 rng(7);
  const int64_t rows = 200000, width = 8, out_rows = 1000;
  Tensor src = empty({rows, width}, DType::Float32);
  for (int64_t i = 0; i < rows * width; ++i)
    src.data_ptr<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
  std::vector<int64_t> iv(rows);
  for (auto& v : iv) v = static_cast<int64_t>(rng() % out_rows);
  Tensor idx = i64(iv);
  Tensor idx2 = idx.unsqueeze(1).expand({rows, width});
  std::vector<Tensor> results;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    Tensor base = zeros({out_rows, width}, DType::Float32);
    results.push_back(scatter_add(base, 0, idx2, src));
    results.push_back(index_add(base, 0, idx, src));
    results.push_back(scatter_reduce(base, 0, idx2.contiguous(), src, "mean", false));
    results.push_back(index_put(base, {std::optional<Tensor>(idx)}, src, true));
  }
  for (size_t k = 4; k < results.size(); ++k)
    EXPECT_EQ(std::memcmp(results[k].data_ptr(), results[k % 4].data_ptr(),
                          static_cast<size_t>(results[k].nbytes())),
              0)
        << "result " << k % 4 << " differs between thread counts";
  // scatter_add and index_add agree with a double-precision sum in index order.
  std::vector<double> ref(out_rows * width, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < width; ++j)
      ref[iv[i] * width + j] += src.data_ptr<float>()[i * width + j];
  for (int64_t e = 0; e < out_rows * width; ++e) {
    EXPECT_NEAR(results[0].data_ptr<float>()[e], ref[e], 1e-3);
    EXPECT_NEAR(results[1].data_ptr<float>()[e], ref[e], 1e-3);
  }
}

}  // namespace
}  // namespace kiln
