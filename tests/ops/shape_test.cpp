// Unit tests of the shape ops beyond the op table: the split family (piece sizes, views of the
// input), tril_indices/triu_indices against brute force, atleast_*, repeat_interleave of
// repeats only, out= of cat, and results that must not depend on the thread count.
#include <gtest/gtest.h>

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

std::vector<int64_t> sizes_along(const std::vector<Tensor>& ps, int64_t dim) {
  std::vector<int64_t> s;
  for (const Tensor& p : ps) s.push_back(p.size(dim));
  return s;
}

// Pieces must be views of x whose values are x's consecutive slices along dim.
void expect_pieces(const Tensor& x, const std::vector<Tensor>& ps, int64_t dim) {
  int64_t start = 0;
  for (const Tensor& p : ps) {
    ASSERT_EQ(p.dim(), x.dim());
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != dim) {
        EXPECT_EQ(p.size(d), x.size(d));
      }
    EXPECT_EQ(values_of<float>(p), values_of<float>(x.narrow(dim, start, p.size(dim))));
    if (p.numel() > 0) {
      // a view: writing through it changes x
      EXPECT_EQ(p.data_ptr(),
                static_cast<char*>(x.data_ptr()) + start * x.stride(dim) * x.element_size());
    }
    start += p.size(dim);
  }
  EXPECT_EQ(start, x.size(dim));
}

TEST(ShapeSplit, SplitSizes) {
  Tensor x = arange(0, 30, 1, kFloat32).view({5, 6});
  EXPECT_EQ(sizes_along(split(x, 2, 0), 0), (std::vector<int64_t>{2, 2, 1}));
  expect_pieces(x, split(x, 2, 0), 0);
  EXPECT_EQ(sizes_along(split(x, 4, -1), 1), (std::vector<int64_t>{4, 2}));
  expect_pieces(x, split(x, 4, -1), 1);
  EXPECT_EQ(sizes_along(split(x, 10, 0), 0), (std::vector<int64_t>{5}));
  EXPECT_EQ(sizes_along(x.split({1, 0, 4}, 0), 0), (std::vector<int64_t>{1, 0, 4}));
  expect_pieces(x, x.split({1, 0, 4}, 0), 0);
  Tensor e = empty({0, 2});
  EXPECT_EQ(split(e, 0, 0).size(), 1u);
  EXPECT_THROW(split(x, 0, 0), Error);
  EXPECT_THROW(split(x, -1, 0), Error);
  EXPECT_THROW(x.split({1, 2}, 0), Error);
  EXPECT_THROW(split(full({}, 1.0), 1), Error);
}

TEST(ShapeSplit, TensorSplitAndChunk) {
  Tensor x = arange(0, 21, 1, kFloat32).view({7, 3});
  EXPECT_EQ(sizes_along(tensor_split(x, 3, 0), 0), (std::vector<int64_t>{3, 2, 2}));
  expect_pieces(x, tensor_split(x, 3, 0), 0);
  EXPECT_EQ(sizes_along(tensor_split(x, 9, 0), 0),
            (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 0, 0}));
  // indices: Python slices, clamped; negative counts from the end
  EXPECT_EQ(sizes_along(tensor_split(x, IntArrayRef{2, 5}, 0), 0), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(sizes_along(tensor_split(x, IntArrayRef{-1}, 0), 0), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(sizes_along(tensor_split(x, IntArrayRef{5, 2, 10}, 0), 0),
            (std::vector<int64_t>{5, 0, 5, 0}));
  expect_pieces(x, tensor_split(x, IntArrayRef{2, 5}, 0), 0);
  EXPECT_EQ(sizes_along(tensor_split(x, from_vector<int64_t>({1, 4}), 0), 0),
            (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(sizes_along(tensor_split(x, full({}, 2, kInt64), 1), 1), (std::vector<int64_t>{2, 1}));
  EXPECT_THROW(tensor_split(x, 0, 0), Error);
  EXPECT_THROW(tensor_split(x, ones({2}), 0), Error);
  // chunk: ceil(7 / 3) = 3 -> 3, 3, 1; ceil(7 / 4) = 2 -> 2, 2, 2, 1; 6 / 4 -> 2, 2, 2
  EXPECT_EQ(sizes_along(chunk(x, 3, 0), 0), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(sizes_along(chunk(x, 4, 0), 0), (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(sizes_along(chunk(x.narrow(0, 0, 6), 4, 0), 0), (std::vector<int64_t>{2, 2, 2}));
  expect_pieces(x, x.chunk(4, 0), 0);
  EXPECT_EQ(chunk(empty({0, 3}), 3, 0).size(), 3u);  // empty dim keeps the number of chunks
  EXPECT_THROW(chunk(x, 0, 0), Error);
}

TEST(ShapeSplit, Unbind) {
  Tensor x = arange(0, 6, 1, kFloat32).view({2, 3});
  auto u = unbind(x, 1);
  ASSERT_EQ(u.size(), 3u);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(u[j].sizes(), IntArrayRef({2}));
    EXPECT_EQ(values_of<float>(u[j]), (std::vector<float>{float(j), float(3 + j)}));
  }
  EXPECT_THROW(unbind(full({}, 1.0), 0), Error);
}

// Note [Split backward]: the pieces share one node; its gradient is the pieces' gradients laid
// side by side (zeros where a piece got none), checked element by element.
TEST(ShapeSplitBackward, OneNodeCatsThePiecesWithZerosForUnused) {
  Tensor x = randn({4, 7}, kFloat64).requires_grad_(true);
  auto ps = x.split({2, 3, 2}, 1);
  ASSERT_TRUE(ps[0].grad_fn() != nullptr);
  EXPECT_EQ(ps[0].grad_fn()->name(), "SplitBackward0");
  EXPECT_EQ(ps[0].grad_fn().get(), ps[2].grad_fn().get());
  Tensor w0 = randn({4, 2}, kFloat64), w2 = randn({4, 2}, kFloat64);
  ((ps[0] * w0).sum() + (ps[2] * w2).sum()).backward();  // piece 1 unused
  auto g = values_of<double>(x.grad());
  auto a = values_of<double>(w0), c = values_of<double>(w2);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      const double want = j < 2 ? a[i * 2 + j] : j < 5 ? 0.0 : c[i * 2 + (j - 5)];
      EXPECT_EQ(g[i * 7 + j], want) << i << "," << j;
    }
}

TEST(ShapeSplitBackward, GradientsTilingOneBufferAreReturnedWithoutACopy) {
  Tensor x = randn({3, 6}, kFloat32).requires_grad_(true);
  auto ps = split(x, 2, 1);
  Tensor buf = randn({3, 6}, kFloat32);
  auto g = autograd::grad({ps[0], ps[1], ps[2]}, {x},
                          {buf.narrow(1, 0, 2), buf.narrow(1, 2, 2), buf.narrow(1, 4, 2)});
  EXPECT_EQ(g[0].data_ptr(), buf.data_ptr());  // the buffer itself, viewed as x
  EXPECT_EQ(g[0].sizes(), x.sizes());
  EXPECT_EQ(values_of<float>(g[0]), values_of<float>(buf));
  // Out of order (piece 0's gradient where piece 1's would be): no alias, still right.
  auto h = autograd::grad({ps[0], ps[1], ps[2]}, {x},
                          {buf.narrow(1, 2, 2), buf.narrow(1, 0, 2), buf.narrow(1, 4, 2)});
  EXPECT_NE(h[0].data_ptr(), buf.data_ptr());
  auto hv = values_of<float>(h[0]), bv = values_of<float>(buf);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const int64_t src = j < 2 ? j + 2 : j < 4 ? j - 2 : j;
      EXPECT_EQ(hv[i * 6 + j], bv[i * 6 + src]);
    }
  // .grad is never an alias of the gradient buffer.
  autograd::backward({ps[0], ps[1], ps[2]},
                     {buf.narrow(1, 0, 2), buf.narrow(1, 2, 2), buf.narrow(1, 4, 2)});
  EXPECT_NE(x.grad().data_ptr(), buf.data_ptr());
  EXPECT_EQ(values_of<float>(x.grad()), values_of<float>(buf));
}

TEST(ShapeSplitBackward, SecondDerivativesAndChunk) {
  Tensor x = randn({3, 5}, kFloat64).requires_grad_(true);
  auto f = [](const autograd::variable_list& v) {
    auto ps = chunk(v[0], 3, 1);  // sizes 2, 2, 1
    return (ps[0] * ps[0] * 3.0).sum() + (ps[1].sin() * ps[2]).sum();
  };
  EXPECT_TRUE(autograd::gradcheck(f, {x}));
  EXPECT_TRUE(autograd::gradgradcheck(f, {x}));
  auto g = [](const autograd::variable_list& v) {
    auto ps = unbind(v[0], 0);
    return ps[0] * ps[2].exp() + ps[1];
  };
  EXPECT_TRUE(autograd::gradcheck(g, {x}));
  EXPECT_TRUE(autograd::gradgradcheck(g, {x}));
}

TEST(ShapeSplitBackward, InPlaceOnAPieceAndOverlappingTensorSplit) {
  Tensor x = randn({2, 6}, kFloat64).requires_grad_(true);
  Tensor y = x * 1.0;
  auto ps = split(y, 3, 1);
  ps[1].mul_(2.0);  // y's columns 3..5 doubled in place
  (y * y).sum().backward();
  auto xv = values_of<double>(x), gv = values_of<double>(x.grad());
  for (int64_t i = 0; i < 12; ++i) {
    const double k = i % 6 >= 3 ? 2.0 : 1.0;  // d/dx (k x)^2 = 2 k^2 x
    EXPECT_NEAR(gv[i], 2.0 * k * k * xv[i], 1e-12) << i;
  }
  // Decreasing indices give overlapping pieces (PyTorch's slices): each keeps its own node.
  Tensor z = randn({7}, kFloat64).requires_grad_(true);
  auto qs = tensor_split(z, IntArrayRef{5, 2}, 0);  // [0,5), [5,5), [2,7)
  (qs[0].sum() + qs[2].sum() * 2.0).backward();
  auto zg = values_of<double>(z.grad());
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(zg[i], (i < 5 ? 1.0 : 0.0) + (i >= 2 ? 2.0 : 0.0));
}

TEST(ShapeSplitBackward, UnbindTiledGradientsAndStack) {
  Tensor x = randn({3, 4}, kFloat32).requires_grad_(true);
  auto us = unbind(x, 1);
  EXPECT_EQ(us[0].grad_fn()->name(), "UnbindBackward0");
  Tensor buf = randn({3, 4}, kFloat32);
  autograd::variable_list go;
  for (int64_t j = 0; j < 4; ++j) go.push_back(buf.select(1, j));
  auto g = autograd::grad({us[0], us[1], us[2], us[3]}, {x}, go);
  EXPECT_EQ(g[0].data_ptr(), buf.data_ptr());
  EXPECT_EQ(values_of<float>(g[0]), values_of<float>(buf));
  auto h = autograd::grad({us[1]}, {x}, {buf.select(1, 1)});  // others get zeros
  auto hv = values_of<float>(h[0]), bv = values_of<float>(buf);
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(hv[i], i % 4 == 1 ? bv[i] : 0.0f);
}

TEST(ShapeIndices, TrilTriuIndicesBruteForce) {
  for (int64_t r : {0, 1, 3, 5})
    for (int64_t c : {0, 2, 4})
      for (int64_t off : {-2, 0, 1, 5}) {
        for (bool lower : {true, false}) {
          Tensor t = lower ? tril_indices(r, c, off) : triu_indices(r, c, off);
          std::vector<int64_t> rows, cols;
          for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < c; ++j)
              if (lower ? j <= i + off : j >= i + off) rows.push_back(i), cols.push_back(j);
          ASSERT_EQ(t.dtype(), kInt64);
          ASSERT_EQ(t.sizes(), IntArrayRef({2, static_cast<int64_t>(rows.size())}));
          EXPECT_EQ(values_of<int64_t>(t.select(0, 0)), rows);
          EXPECT_EQ(values_of<int64_t>(t.select(0, 1)), cols);
        }
      }
  EXPECT_EQ(tril_indices(3, 3, 0, kInt32).dtype(), kInt32);
  EXPECT_THROW(tril_indices(-1, 2), Error);
  EXPECT_THROW(triu_indices(2, -1), Error);
}

TEST(ShapeMisc, AtLeast) {
  EXPECT_EQ(atleast_1d(full({}, 1.0)).sizes(), IntArrayRef({1}));
  EXPECT_EQ(atleast_2d(ones({3})).sizes(), IntArrayRef({1, 3}));
  EXPECT_EQ(atleast_3d(ones({3})).sizes(), IntArrayRef({1, 3, 1}));
  EXPECT_EQ(atleast_3d(ones({2, 3})).sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(atleast_3d(ones({2, 3, 4, 5})).sizes(), IntArrayRef({2, 3, 4, 5}));
  auto v = atleast_2d(std::vector<Tensor>{full({}, 1.0), ones({2, 2, 2})});
  EXPECT_EQ(v[0].sizes(), IntArrayRef({1, 1}));
  EXPECT_EQ(v[1].sizes(), IntArrayRef({2, 2, 2}));
}

TEST(ShapeMisc, RepeatInterleaveOfRepeats) {
  Tensor r = repeat_interleave(from_vector<int64_t>({2, 0, 3}));
  EXPECT_EQ(values_of<int64_t>(r), (std::vector<int64_t>{0, 0, 2, 2, 2}));
  EXPECT_THROW(repeat_interleave(from_vector<int64_t>({1, 2}), std::optional<int64_t>(4)), Error);
}

TEST(ShapeMisc, CatOutConvertsAndResizes) {
  Tensor out = empty({0}, kFloat64);
  cat_out(out, {ones({2}, kInt32), full({1}, 2.5f)}, 0);
  EXPECT_EQ(out.dtype(), kFloat64);
  EXPECT_EQ(values_of<double>(out), (std::vector<double>{1, 1, 2.5}));
  Tensor bad = empty({5});
  EXPECT_THROW(cat_out(bad, {ones({2}), ones({1})}, 0), Error);
}

TEST(ShapeMisc, ThreadCountIndependent) {
  const int saved = get_num_threads();
  std::mt19937 g(3);
  std::vector<float> v(600 * 500);
  for (auto& x : v) x = static_cast<float>(g() % 1000);
  Tensor x = from_vector(v, {600, 500});
  std::vector<std::vector<float>> res;
  for (int t : {1, 2}) {
    set_num_threads(t);
    Tensor y = cat({flip(x, {0, 1}), tril(x, 3), roll(x, {7}, {1}), pad(x, {2, 1}, "reflect")}, 1);
    res.push_back(values_of<float>(y));
  }
  set_num_threads(saved);
  EXPECT_EQ(res[0], res[1]);
}

}  // namespace
}  // namespace kiln
