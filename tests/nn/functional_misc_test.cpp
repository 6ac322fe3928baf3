// Tests of kiln::nn::functional attention (sdpa: masks, causal, gqa, scale; multi-head attention),
// embedding_bag, one_hot, pixel (un)shuffle, distances, affine_grid, bilinear, lp/unpool pools,
// against plain double loops.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}
void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}
Tensor rnd(IntArrayRef s, uint64_t seed) {
  manual_seed(seed);
  return randn(s, TensorOptions(kFloat64));
}

// Attention of one head: q [L, E], k [S, E], v [S, Ev]; allowed(i, j) masks; add(i, j) bias.
std::vector<double> ref_attention(const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, int64_t l, int64_t s, int64_t e,
                                  int64_t ev, double scale,
                                  const std::function<bool(int64_t, int64_t)>& allowed,
                                  const std::function<double(int64_t, int64_t)>& add) {
  std::vector<double> out(l * ev, 0.0);
  for (int64_t i = 0; i < l; ++i) {
    std::vector<double> a(s);
    double m = -INFINITY;
    for (int64_t j = 0; j < s; ++j) {
      double d = 0;
      for (int64_t t = 0; t < e; ++t) d += q[i * e + t] * k[j * e + t];
      a[j] = allowed(i, j) ? d * scale + add(i, j) : -INFINITY;
      m = std::max(m, a[j]);
    }
    if (std::isinf(m)) continue;  // fully masked row: zeros
    double z = 0;
    for (int64_t j = 0; j < s; ++j) z += std::exp(a[j] - m);
    for (int64_t j = 0; j < s; ++j)
      for (int64_t t = 0; t < ev; ++t) out[i * ev + t] += std::exp(a[j] - m) / z * v[j * ev + t];
  }
  return out;
}

TEST(NnFunctionalAttention, ScaledDotProductMasksCausalGqa) {
  const int64_t b = 2, hq = 4, hk = 2, l = 5, s = 6, e = 3, ev = 4;
  Tensor q = rnd({b, hq, l, e}, 1), k = rnd({b, hk, s, e}, 2), v = rnd({b, hk, s, ev}, 3);
  Tensor bmask = rnd({l, s}, 4) > -0.5, fmask = rnd({l, s}, 5);
  std::vector<double> bm = vals(bmask), fm = vals(fmask);
  bm[0 * s + 0] = bm[0 * s + 1] = 0;                  // keep row 0 partly masked
  for (int64_t j = 0; j < s; ++j) bm[2 * s + j] = 0;  // row 2 fully masked -> zeros
  bmask = from_vector(bm, {l, s}).to(kBool);
  const std::vector<double> qv = vals(q), kv = vals(k), vv = vals(v);
  auto head = [&](const std::vector<double>& x, int64_t bi, int64_t h, int64_t n, int64_t d,
                  int64_t heads) {
    return std::vector<double>(x.begin() + ((bi * heads + h) * n) * d,
                               x.begin() + ((bi * heads + h) * n + n) * d);
  };
  for (int mode = 0; mode < 4; ++mode) {
    Tensor got;
    const double scale = mode == 3 ? 0.3 : 1 / std::sqrt(3.0);
    if (mode == 0) got = F::scaled_dot_product_attention(q, k, v, {}, 0, false, std::nullopt, true);
    if (mode == 1) got = F::scaled_dot_product_attention(q, k, v, {}, 0, true, std::nullopt, true);
    if (mode == 2)
      got = F::scaled_dot_product_attention(q, k, v, bmask, 0, false, std::nullopt, true);
    if (mode == 3) got = F::scaled_dot_product_attention(q, k, v, fmask, 0, false, 0.3, true);
    std::vector<double> ref;
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t hkv = h / (hq / hk);
        auto r = ref_attention(
            head(qv, bi, h, l, e, hq), head(kv, bi, hkv, s, e, hk), head(vv, bi, hkv, s, ev, hk), l,
            s, e, ev, scale,
            [&](int64_t i, int64_t j) {
              return mode == 1 ? j <= i : mode == 2 ? bm[i * s + j] != 0 : true;
            },
            [&](int64_t i, int64_t j) { return mode == 3 ? fm[i * s + j] : 0.0; });
        ref.insert(ref.end(), r.begin(), r.end());
      }
    expect_near(vals(got), ref, 1e-12);
  }
  EXPECT_THROW(F::scaled_dot_product_attention(q, k, v, bmask, 0, true), Error);
  EXPECT_THROW(F::scaled_dot_product_attention(q, rnd({b, hq, s, 2}, 1), rnd({b, hq, s, 2}, 1)),
               Error);
}

TEST(NnFunctionalAttention, MultiHeadMatchesPerHeadComposition) {
  const int64_t l = 4, s = 5, n = 2, e = 6, h = 2, hd = 3;
  Tensor q = rnd({l, n, e}, 10), k = rnd({s, n, e}, 11), v = rnd({s, n, e}, 12);
  F::MultiHeadAttentionOptions o;
  o.num_heads = h;
  o.in_proj_weight = rnd({3 * e, e}, 13) * 0.3;
  o.in_proj_bias = rnd({3 * e}, 14);
  o.out_proj_weight = rnd({e, e}, 15) * 0.3;
  o.out_proj_bias = rnd({e}, 16);
  Tensor kpm = from_vector<double>({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, {n, s}).to(kBool);
  o.key_padding_mask = kpm;
  auto [out, w] = F::multi_head_attention_forward(q, k, v, o);
  // Reference: per batch and head, with explicit projections in double loops.
  const auto W = vals(o.in_proj_weight), B = vals(o.in_proj_bias), Wo = vals(o.out_proj_weight),
             Bo = vals(o.out_proj_bias), qv = vals(q), kv = vals(k), vv = vals(v), km = vals(kpm);
  auto proj = [&](const std::vector<double>& x, int64_t len, int64_t bi, int64_t part, int64_t hh) {
    std::vector<double> r(len * hd);
    for (int64_t i = 0; i < len; ++i)
      for (int64_t t = 0; t < hd; ++t) {
        const int64_t row = part * e + hh * hd + t;
        double acc = B[row];
        for (int64_t j = 0; j < e; ++j) acc += W[row * e + j] * x[(i * n + bi) * e + j];
        r[i * hd + t] = acc;
      }
    return r;
  };
  std::vector<double> ref(l * n * e);
  for (int64_t bi = 0; bi < n; ++bi) {
    std::vector<double> cat(l * e);
    for (int64_t hh = 0; hh < h; ++hh) {
      auto a = ref_attention(
          proj(qv, l, bi, 0, hh), proj(kv, s, bi, 1, hh), proj(vv, s, bi, 2, hh), l, s, hd, hd,
          1 / std::sqrt(double(hd)), [&](int64_t, int64_t j) { return km[bi * s + j] == 0; },
          [](int64_t, int64_t) { return 0.0; });
      for (int64_t i = 0; i < l; ++i)
        for (int64_t t = 0; t < hd; ++t) cat[i * e + hh * hd + t] = a[i * hd + t];
    }
    for (int64_t i = 0; i < l; ++i)
      for (int64_t t = 0; t < e; ++t) {
        double acc = Bo[t];
        for (int64_t j = 0; j < e; ++j) acc += Wo[t * e + j] * cat[i * e + j];
        ref[(i * n + bi) * e + t] = acc;
      }
  }
  expect_near(vals(out), ref, 1e-11);
  ASSERT_EQ(w.sizes(), IntArrayRef({n, l, s}));
  std::vector<double> wv = vals(w);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t i = 0; i < l; ++i) {
      double rs = 0;
      for (int64_t j = 0; j < s; ++j) {
        rs += wv[(bi * l + i) * s + j];
        if (km[bi * s + j] != 0) {
          EXPECT_EQ(wv[(bi * l + i) * s + j], 0.0);
        }
      }
      EXPECT_NEAR(rs, 1.0, 1e-12);
    }
}

TEST(NnFunctionalEmbedding, BagModesOffsetsAndPadding) {
  Tensor w = rnd({6, 3}, 20);
  const auto wv = vals(w);
  Tensor idx = from_vector<int64_t>({1, 2, 4, 4, 3, 0, 5});
  Tensor off = from_vector<int64_t>({0, 2, 2, 5});  // bags [1,2] [] [4,4,3] [0,5]
  std::vector<std::vector<int64_t>> bags = {{1, 2}, {}, {4, 4, 3}, {0, 5}};
  Tensor psw = from_vector<double>({0.5, 2, 1, -1, 3, 1, 1});
  const std::vector<double> pw = {0.5, 2, 1, -1, 3, 1, 1};
  for (std::string mode : {"sum", "mean", "max"}) {
    std::vector<double> got = vals(F::embedding_bag(idx, w, off, std::nullopt, 2, mode));
    std::vector<double> ref;
    for (const auto& bag : bags)
      for (int64_t j = 0; j < 3; ++j) {
        double acc = mode == "max" ? -INFINITY : 0;
        for (int64_t i : bag)
          acc = mode == "max" ? std::max(acc, wv[i * 3 + j]) : acc + wv[i * 3 + j];
        if (bag.empty()) acc = 0;
        if (mode == "mean" && !bag.empty()) acc /= bag.size();
        ref.push_back(acc);
      }
    expect_near(got, ref, 1e-12);
  }
  // per_sample_weights (sum) and padding_idx (excluded; mean over the rest).
  std::vector<double> got = vals(F::embedding_bag(idx, w, off, std::nullopt, 2, "sum", psw));
  int64_t pos = 0;
  std::vector<double> ref;
  for (const auto& bag : bags) {
    for (int64_t j = 0; j < 3; ++j) {
      double acc = 0;
      for (size_t t = 0; t < bag.size(); ++t) acc += pw[pos + t] * wv[bag[t] * 3 + j];
      ref.push_back(acc);
    }
    pos += bag.size();
  }
  expect_near(got, ref, 1e-12);
  std::vector<double> pm = vals(F::embedding_bag(idx.reshape({-1}).narrow(0, 2, 4).reshape({2, 2}),
                                                 w, {}, std::nullopt, 2, "mean", {}, false, 4));
  // bags [4, 4] (all padding -> 0) and [3, 0].
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(pm[j], 0.0);
    EXPECT_NEAR(pm[3 + j], (wv[9 + j] + wv[j]) / 2, 1e-12);
  }
  EXPECT_THROW(F::embedding_bag(idx, w, off, std::nullopt, 2, "median"), Error);
  EXPECT_THROW(F::embedding_bag(idx, w, from_vector<int64_t>({1, 3})), Error);
}

TEST(NnFunctionalMisc, OneHotPixelShuffleDistances) {
  Tensor cls = from_vector<int64_t>({2, 0, 3}, {3});
  std::vector<double> oh = vals(F::one_hot(cls));
  std::vector<double> ref(12, 0.0);
  ref[2] = ref[4] = ref[11] = 1;
  EXPECT_EQ(oh, ref);
  EXPECT_EQ(F::one_hot(cls, 5).sizes(), IntArrayRef({3, 5}));
  EXPECT_THROW(F::one_hot(cls, 3), Error);
  EXPECT_THROW(F::one_hot(from_vector<int64_t>({-1})), Error);
  // pixel_shuffle: out[c, h*r + i, w*r + j] = in[c*r*r + i*r + j, h, w].
  const int64_t c = 2, r = 2, h = 3, w = 2;
  Tensor x = rnd({1, c * r * r, h, w}, 30);
  std::vector<double> xv = vals(x), ps = vals(F::pixel_shuffle(x, r));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t y = 0; y < h * r; ++y)
      for (int64_t z = 0; z < w * r; ++z)
        EXPECT_EQ(ps[(ch * h * r + y) * w * r + z],
                  xv[((ch * r * r + (y % r) * r + z % r) * h + y / r) * w + z / r]);
  EXPECT_EQ(vals(F::pixel_unshuffle(F::pixel_shuffle(x, r), r)), xv);
  EXPECT_THROW(F::pixel_shuffle(rnd({1, 3, 2, 2}, 1), 2), Error);
  // cdist / pdist / pairwise_distance / cosine_similarity.
  Tensor a = rnd({4, 3}, 31), b = rnd({5, 3}, 32);
  std::vector<double> av = vals(a), bv = vals(b);
  for (double p : {1.0, 2.0, 3.0}) {
    std::vector<double> cd = vals(F::cdist(a, b, p)), pd = vals(F::pdist(a, p));
    int64_t k = 0;
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        double s = 0;
        for (int64_t t = 0; t < 3; ++t) s += std::pow(std::abs(av[i * 3 + t] - bv[j * 3 + t]), p);
        EXPECT_NEAR(cd[i * 5 + j], std::pow(s, 1 / p), 1e-12);
      }
      for (int64_t j = i + 1; j < 4; ++j) {
        double s = 0;
        for (int64_t t = 0; t < 3; ++t) s += std::pow(std::abs(av[i * 3 + t] - av[j * 3 + t]), p);
        EXPECT_NEAR(pd[k++], std::pow(s, 1 / p), 1e-12);
      }
    }
  }
  Tensor a2 = a.narrow(0, 0, 4), b2 = b.narrow(0, 0, 4);
  std::vector<double> pw = vals(F::pairwise_distance(a2, b2)),
                      cs = vals(F::cosine_similarity(a2, b2));
  for (int64_t i = 0; i < 4; ++i) {
    double d = 0, dot = 0, na = 0, nb = 0;
    for (int64_t t = 0; t < 3; ++t) {
      d += std::pow(av[i * 3 + t] - bv[i * 3 + t] + 1e-6, 2);
      dot += av[i * 3 + t] * bv[i * 3 + t], na += av[i * 3 + t] * av[i * 3 + t],
          nb += bv[i * 3 + t] * bv[i * 3 + t];
    }
    EXPECT_NEAR(pw[i], std::sqrt(d), 1e-12);
    EXPECT_NEAR(cs[i], dot / std::sqrt(na * nb), 1e-12);
  }
}

TEST(NnFunctionalMisc, AffineGridBilinearPools) {
  Tensor theta = rnd({2, 2, 3}, 40);
  const auto tv = vals(theta);
  for (bool ac : {false, true}) {
    std::vector<double> g = vals(F::affine_grid(theta, {2, 1, 3, 4}, ac));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j) {
          const double x = ac ? -1 + 2.0 * j / 3 : (2.0 * j + 1) / 4 - 1;
          const double y = ac ? -1 + 2.0 * i / 2 : (2.0 * i + 1) / 3 - 1;
          for (int64_t c = 0; c < 2; ++c) {
            const double* t = tv.data() + n * 6 + c * 3;
            EXPECT_NEAR(g[((n * 3 + i) * 4 + j) * 2 + c], t[0] * x + t[1] * y + t[2], 1e-12);
          }
        }
  }
  // bilinear: out[n, o] = x1 W[o] x2 + b[o].
  Tensor x1 = rnd({3, 2}, 41), x2 = rnd({3, 4}, 42), wt = rnd({5, 2, 4}, 43), bias = rnd({5}, 44);
  std::vector<double> bl = vals(F::bilinear(x1, x2, wt, bias)), v1 = vals(x1), v2 = vals(x2),
                      wv = vals(wt), bv = vals(bias);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t o = 0; o < 5; ++o) {
      double s = bv[o];
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 4; ++j)
          s += v1[n * 2 + i] * wv[(o * 2 + i) * 4 + j] * v2[n * 4 + j];
      EXPECT_NEAR(bl[n * 5 + o], s, 1e-12);
    }
  // lp_pool2d (p = 2): sqrt of window sums of squares; max_unpool2d inverts max_pool2d.
  Tensor x = rnd({1, 2, 4, 6}, 45);
  std::vector<double> xv = vals(x), lp = vals(F::lp_pool2d(x, 2.0, {2, 3}));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        double s = 0;
        for (int64_t u = 0; u < 2; ++u)
          for (int64_t v = 0; v < 3; ++v) s += std::pow(xv[(c * 4 + 2 * i + u) * 6 + 3 * j + v], 2);
        EXPECT_NEAR(lp[(c * 2 + i) * 2 + j], std::sqrt(s), 1e-12);
      }
  auto [mx, ind] = F::max_pool2d_with_indices(x, {2, 2});
  std::vector<double> un = vals(F::max_unpool2d(mx, ind, {2, 2}));
  const std::vector<double> iv = vals(ind), mv = vals(mx);
  std::vector<double> ref(xv.size(), 0.0);
  for (size_t k = 0; k < iv.size(); ++k) ref[(k / 6) * 24 + static_cast<int64_t>(iv[k])] = mv[k];
  EXPECT_EQ(un, ref);
}

}  // namespace
}  // namespace kiln
