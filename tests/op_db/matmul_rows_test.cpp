// Op-table rows for the matmul family (Bmm primitive and its composites): mm, bmm, matmul,
// addmm(_), addmv(_), baddbmm(_), addbmm(_), dot, vdot, mv, outer, ger, inner. References are plain
// loops in complex<double> (matmul_rows_util.h); einsum/tensordot/kron/linear:
// einsum_rows_test.cpp.
#include "op_db/matmul_rows_util.h"

namespace kiln::testing {
namespace {

using namespace matmul_rows;  // NOLINT

std::vector<OpRow> product_rows() {
  std::vector<OpRow> rows;
  auto mat_ref = ref2([](const Arr& a, const Arr& b, const Sample&) { return ref_matmul(a, b); });

  {  // mm; ints {ta, tb}: operands given transposed, passed as .t() views (BLAS Trans flags)
    OpRow r = gemm_row(
        "mm",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 4}, {4, 5}}, dt),
                                     sample({{1, 1}, {1, 1}}, dt),
                                     sample({{5, 0}, {0, 3}}, dt, "K=0"),
                                     sample({{0, 3}, {3, 2}}, dt, "M=0"),
                                     sample({{4, 12}, {12, 1}}, dt),
                                     sample({{1, 7}, {7, 6}}, dt),
                                     sample({{17, 9}, {9, 13}}, dt),
                                     sample({{4, 3}, {5, 4}}, dt, "a.t() b.t()", {1, 1}),
                                     sample({{4, 3}, {4, 5}}, dt, "a.t()", {1, 0}),
                                     sample({{3, 4}, {5, 4}}, dt, "b.t()", {0, 1})};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          bool ta = !s.ints.empty() && s.ints[0], tb = !s.ints.empty() && s.ints[1];
          return mm(ta ? in[0].t() : in[0], tb ? in[1].t() : in[1]);
        },
        ref2([](const Arr& a0, const Arr& b0, const Sample& s) {
          auto tr = [](const Arr& x) {
            Arr y{{}, {x.shape[1], x.shape[0]}};
            for (int64_t j = 0; j < x.shape[1]; ++j)
              for (int64_t i = 0; i < x.shape[0]; ++i) y.v.push_back(x.v[i * x.shape[1] + j]);
            return y;
          };
          bool ta = !s.ints.empty() && s.ints[0], tb = !s.ints.empty() && s.ints[1];
          return ref_matmul(ta ? tr(a0) : a0, tb ? tr(b0) : b0);
        }));
    r.errors.push_back({"mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", [] {
                          mm(zeros({2, 3}), zeros({4, 5}));
                        }});
    r.errors.push_back(
        {"expected m1 and m2 to have the same dtype, but got: float32 != float64", [] {
           mm(zeros({2, 3}), zeros({3, 2}, DType::Float64));
         }});
    r.errors.push_back({"[mm] expected 2-D matrices", [] { mm(zeros({3}), zeros({3, 2})); }});
    r.errors.push_back({"[mm] not implemented for dtype bool", [] {
                          mm(zeros({2, 2}, DType::Bool), zeros({2, 2}, DType::Bool));
                        }});
    r.errors.push_back(
        {"[mm] not implemented for dtype float8_e4m3fn", [] {
           mm(zeros({2, 2}).to(DType::Float8_e4m3fn), zeros({2, 2}).to(DType::Float8_e4m3fn));
         }});
    r.errors.push_back({"expected out tensor to have dtype float32, but got float64", [] {
                          Tensor o = empty({2, 2}, DType::Float64);
                          mm_out(o, zeros({2, 3}), zeros({3, 2}));
                        }});
    rows.push_back(r);
  }
  {  // mm_out into a transposed output (BLAS writes the transposed product)
    OpRow r = gemm_row(
        "mm_out.transposed_out",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 4}, {4, 5}}, dt), sample({{6, 2}, {2, 1}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) {
          Tensor out = empty({in[1].size(1), in[0].size(0)}, in[0].dtype()).t();
          mm_out(out, in[0], in[1]);
          return out;
        },
        mat_ref);
    rows.push_back(r);
  }
  {  // bmm; ints {ta, tb}: batches of transposed matrices
    OpRow r = gemm_row(
        "bmm",
        [](DType dt) {
          return std::vector<Sample>{sample({{2, 3, 4}, {2, 4, 5}}, dt),
                                     sample({{1, 1, 1}, {1, 1, 1}}, dt),
                                     sample({{3, 0, 2}, {3, 2, 4}}, dt, "M=0"),
                                     sample({{0, 2, 3}, {0, 3, 4}}, dt, "B=0"),
                                     sample({{4, 3, 0}, {4, 0, 2}}, dt, "K=0"),
                                     sample({{5, 4, 3}, {5, 2, 4}}, dt, "mT mT", {1, 1}),
                                     sample({{40, 2, 3}, {40, 3, 2}}, dt, "many small")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          bool ta = !s.ints.empty() && s.ints[0], tb = !s.ints.empty() && s.ints[1];
          return bmm(maybe_t(in[0], ta), maybe_t(in[1], tb));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          bool ta = !s.ints.empty() && s.ints[0], tb = !s.ints.empty() && s.ints[1];
          // transposes written as index maps on the values
          auto tr = [](const Arr& x, bool t) {
            if (!t) return x;
            int64_t nb = x.shape[0], r0 = x.shape[1], c0 = x.shape[2];
            Arr y{{}, {nb, c0, r0}};
            for (int64_t b = 0; b < nb; ++b)
              for (int64_t j = 0; j < c0; ++j)
                for (int64_t i = 0; i < r0; ++i) y.v.push_back(x.v[(b * r0 + i) * c0 + j]);
            return y;
          };
          return to_tensor(ref_matmul(tr(arr(in[0]), ta), tr(arr(in[1]), tb)), master_of(in));
        });
    r.errors.push_back({"[bmm] expected 3-D tensors", [] {
                          bmm(zeros({2, 3}), zeros({2, 3, 4}));
                        }});
    r.errors.push_back({"[bmm] expected batch2 of shape [2, 3, *]", [] {
                          bmm(zeros({2, 2, 3}), zeros({3, 3, 4}));
                        }});
    r.errors.push_back(
        {"[bmm] expected batch2 of shape [2, 3, *] for batch1 of shape [2, 2, 3], "
         "but got [2, 4, 4]",
         [] {
           bmm(zeros({2, 2, 3}), zeros({2, 4, 4}));
         }});
    rows.push_back(r);
  }
  {  // matmul: every case of PyTorch's dispatch
    OpRow r = gemm_row(
        "matmul",
        [](DType dt) {
          return std::vector<Sample>{sample({{5}, {5}}, dt, "1D.1D"),
                                     sample({{3, 4}, {4}}, dt, "2D.1D"),
                                     sample({{4}, {4, 3}}, dt, "1D.2D"),
                                     sample({{3, 4}, {4, 2}}, dt, "2D.2D"),
                                     sample({{2, 3, 4}, {4, 5}}, dt, "3D.2D"),
                                     sample({{2, 3, 4}, {4}}, dt, "3D.1D"),
                                     sample({{4}, {2, 4, 5}}, dt, "1D.3D"),
                                     sample({{3, 4}, {2, 4, 5}}, dt, "2D.3D"),
                                     sample({{2, 1, 3, 4}, {5, 4, 2}}, dt, "4D.3D broadcast"),
                                     sample({{1, 3, 4}, {2, 4, 5}}, dt, "batch 1 vs 2"),
                                     sample({{2, 3, 4}, {2, 4, 5}}, dt, "3D.3D"),
                                     sample({{0}, {0}}, dt, "empty dot"),
                                     sample({{0, 3}, {3}}, dt, "empty mv"),
                                     sample({{2, 0, 3}, {3, 4}}, dt, "empty fold"),
                                     sample({{3, 0}, {0, 2}}, dt, "K=0"),
                                     sample({{1}, {1}}, dt, "1.1")};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return matmul(in[0], in[1]); }, mat_ref);
    r.errors.push_back({"both arguments to matmul need to be at least 1D, but they are 0D and 1D",
                        [] { matmul(zeros({}), zeros({3})); }});
    r.errors.push_back({"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied", [] {
                          matmul(zeros({2, 3}), zeros({4, 5}));
                        }});
    r.errors.push_back({"[matmul] shapes [2, 3, 4] and [3] cannot be multiplied (4 != 3)", [] {
                          matmul(zeros({2, 3, 4}), zeros({3})).numel();
                        }});
    r.errors.push_back(
        {"[matmul] batch dimensions of shapes [2, 3, 4] and [3, 4, 5] cannot be "
         "broadcast",
         [] {
           matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
         }});
    r.errors.push_back({"expected m1 and m2 to have the same dtype", [] {
                          matmul(zeros({2, 3, 4}), zeros({4, 2}, DType::Float64));
                        }});
    r.errors.push_back({"not implemented for dtype bool",
                        [] { matmul(zeros({3}, DType::Bool), zeros({3}, DType::Bool)); }});
    rows.push_back(r);
  }
  {  // non-contiguous operands (every other element of the last dim), optionally transposed
    // after slicing so that neither stride is 1: BLAS cannot read them, the kernel packs them.
    auto strided_ref = [](std::function<Arr(const Arr&, const Arr&)> f) {
      return [f](const std::vector<Tensor>& in, const Sample& s) {
        Arr a = every_other(arr(in[0])), b = every_other(arr(in[1]));
        auto tr = [](const Arr& x) {
          Arr y{{}, {x.shape[1], x.shape[0]}};
          for (int64_t j = 0; j < x.shape[1]; ++j)
            for (int64_t i = 0; i < x.shape[0]; ++i) y.v.push_back(x.v[i * x.shape[1] + j]);
          return y;
        };
        if (!s.ints.empty() && s.ints[0]) a = tr(a);
        if (!s.ints.empty() && s.ints[1]) b = tr(b);
        return to_tensor(f(a, b), master_of(in));
      };
    };
    auto mmul = [](const Arr& a, const Arr& b) { return ref_matmul(a, b); };
    rows.push_back(gemm_row(
        "mm.strided",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 8}, {4, 10}}, dt, "strided"),
                                     sample({{4, 6}, {5, 8}}, dt, "strided, both .t()", {1, 1}),
                                     sample({{4, 6}, {4, 10}}, dt, "strided a.t()", {1, 0})};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          Tensor a = strided(in[0]), b = strided(in[1]);
          if (!s.ints.empty() && s.ints[0]) a = a.t();
          if (!s.ints.empty() && s.ints[1]) b = b.t();
          return mm(a, b);
        },
        strided_ref(mmul)));
    OpRow r = gemm_row(
        "matmul.strided",
        [](DType dt) {
          return std::vector<Sample>{sample({{2, 3, 8}, {4, 10}}, dt, "3D.2D"),
                                     sample({{2, 1, 3, 8}, {5, 4, 4}}, dt, "broadcast"),
                                     sample({{3, 8}, {8}}, dt, "mv"), sample({{8}, {8}}, dt, "dot"),
                                     sample({{8}, {4, 6}}, dt, "vm")};
        },
        [](const std::vector<Tensor>& in, const Sample&) {
          return matmul(strided(in[0]), strided(in[1]));
        },
        strided_ref(mmul));
    rows.push_back(r);
  }
  {  // Tensor::matmul through the method, batched transposed operands
    OpRow r = gemm_row(
        "Tensor.matmul.mT",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 4, 2}, {3, 5, 4}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].mT().matmul(in[1].mT()); },
        [](const std::vector<Tensor>& in, const Sample&) {
          // (A^T B^T) = (B A)^T, checked elementwise from the plain product
          Arr a = arr(in[0]), b = arr(in[1]);
          Arr ba = ref_matmul(b, a);  // [3, 5, 2]
          Arr out{{}, {3, 2, 5}};
          for (int64_t t = 0; t < 3; ++t)
            for (int64_t i = 0; i < 2; ++i)
              for (int64_t j = 0; j < 5; ++j) out.v.push_back(ba.v[(t * 5 + j) * 2 + i]);
          return to_tensor(out, master_of(in));
        });
    rows.push_back(r);
  }
  return rows;
}

KILN_OP_ROWS(product_rows);

// Reference of the add* ops: beta * input + alpha * matmul(a, b); `fold` sums addbmm's batches.
Tensor ref_add_product(const std::vector<Tensor>& in, const Sample& s, bool fold) {
  Arr p = ref_matmul(arr(in[1]), arr(in[2]));
  if (fold) {  // sum over the batch: [B, M, N] -> [M, N]
    int64_t nb = p.shape[0], mn = p.shape[1] * p.shape[2];
    Arr q{std::vector<C>(mn, C(0)), {p.shape[1], p.shape[2]}};
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = 0; i < mn; ++i) q.v[i] += p.v[b * mn + i];
    p = q;
  }
  return to_tensor(ref_axpby(arr(in[0]), p, sc(s, 0), sc(s, 1)), master_of(in));
}

std::vector<OpRow> add_rows() {
  std::vector<OpRow> rows;
  rows.reserve(16);  // add_row hands out pointers into rows
  using Fn3 = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&,
                                   const Scalar&)>;
  // One row per op, functional and in-place (on the possibly non-contiguous input itself).
  auto add_row = [&](std::string name, Fn3 f, std::vector<std::vector<Shape>> shapes, bool fold,
                     bool inplace) {
    OpRow r = gemm_row(
        name,
        [shapes, inplace](DType dt) {
          std::vector<Sample> out;
          for (size_t i = 0; i < shapes.size(); ++i)
            for (int v = 0; v < 2; ++v)
              if (!inplace || shapes[i][0].size() == shapes[0][0].size())
                out.push_back(sample(shapes[i], dt, "", {}, beta_alpha(dt, v)));
          out.back().scalars[0] = 0;  // beta == 0: input ignored
          return out;
        },
        [f, inplace](const std::vector<Tensor>& in, const Sample& s) {
          if (!inplace) return f(in[0], in[1], in[2], s.scalars[0], s.scalars[1]);
          Tensor self = in[0];
          Tensor r = f(self, in[1], in[2], s.scalars[0], s.scalars[1]);
          EXPECT_TRUE(r.is_same(self));
          return self;
        },
        [fold](const std::vector<Tensor>& in, const Sample& s) {
          return ref_add_product(in, s, fold);
        });
    rows.push_back(r);
    return &rows.back();
  };
  Fn3 f_addmm = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                   const Scalar& al) { return addmm(i, a, b, be, al); };
  Fn3 f_addmm_ = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                    const Scalar& al) {
    Tensor self = i;
    return self.addmm_(a, b, be, al);
  };
  Fn3 f_addmv = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                   const Scalar& al) { return addmv(i, a, b, be, al); };
  Fn3 f_addmv_ = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                    const Scalar& al) {
    Tensor self = i;
    return self.addmv_(a, b, be, al);
  };
  Fn3 f_baddbmm = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                     const Scalar& al) { return baddbmm(i, a, b, be, al); };
  Fn3 f_baddbmm_ = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                      const Scalar& al) {
    Tensor self = i;
    return self.baddbmm_(a, b, be, al);
  };
  Fn3 f_addbmm = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                    const Scalar& al) { return addbmm(i, a, b, be, al); };
  Fn3 f_addbmm_ = [](const Tensor& i, const Tensor& a, const Tensor& b, const Scalar& be,
                     const Scalar& al) {
    Tensor self = i;
    return self.addbmm_(a, b, be, al);
  };
  std::vector<std::vector<Shape>> mm_shapes = {{{3, 5}, {3, 4}, {4, 5}},
                                               {{5}, {3, 4}, {4, 5}},
                                               {{1, 1}, {2, 6}, {6, 3}},
                                               {{}, {2, 3}, {3, 2}},
                                               {{2, 3}, {2, 0}, {0, 3}}};
  OpRow* r = add_row("addmm", f_addmm, mm_shapes, false, false);
  r->errors.push_back(
      {"[addmm] input of shape [4] cannot be broadcast to the result shape [3, 5]", [] {
         addmm(zeros({4}), zeros({3, 4}), zeros({4, 5}));
       }});
  r->errors.push_back({"[addmm] expected input and the matrices to have the same dtype", [] {
                         addmm(zeros({3, 5}, DType::Float64), zeros({3, 4}), zeros({4, 5}));
                       }});
  r->errors.push_back({"[addmm] mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)", [] {
                         addmm(zeros({3, 5}), zeros({3, 4}), zeros({3, 5}));
                       }});
  r = add_row("addmm_", f_addmm_, {{{3, 5}, {3, 4}, {4, 5}}, {{2, 3}, {2, 0}, {0, 3}}}, false,
              true);
  r->errors.push_back({"[addmm_] self of shape [1, 5] doesn't match the result shape [3, 5]", [] {
                         zeros({1, 5}).addmm_(zeros({3, 4}), zeros({4, 5}));
                       }});
  r = add_row("addmv", f_addmv, {{{3}, {3, 4}, {4}}, {{1}, {5, 2}, {2}}, {{}, {0, 2}, {2}}}, false,
              false);
  r->errors.push_back({"[addmv] size mismatch", [] {
                         addmv(zeros({3}), zeros({3, 4}), zeros({5}));
                       }});
  add_row("addmv_", f_addmv_, {{{3}, {3, 4}, {4}}, {{4}, {4, 0}, {0}}}, false, true);
  r = add_row("baddbmm", f_baddbmm,
              {{{2, 3, 5}, {2, 3, 4}, {2, 4, 5}},
               {{3, 5}, {2, 3, 4}, {2, 4, 5}},
               {{1}, {3, 2, 2}, {3, 2, 3}}},
              false, false);
  r->errors.push_back({"[baddbmm] input of shape [3, 3, 5] cannot be broadcast", [] {
                         baddbmm(zeros({3, 3, 5}), zeros({2, 3, 4}), zeros({2, 4, 5}));
                       }});
  add_row("baddbmm_", f_baddbmm_, {{{2, 3, 5}, {2, 3, 4}, {2, 4, 5}}}, false, true);
  r = add_row(
      "addbmm", f_addbmm,
      {{{3, 5}, {2, 3, 4}, {2, 4, 5}}, {{5}, {4, 3, 2}, {4, 2, 5}}, {{2, 2}, {0, 2, 3}, {0, 3, 2}}},
      true, false);
  r->errors.push_back({"[addbmm] expected batch2 of shape [2, 4, *]", [] {
                         addbmm(zeros({3, 5}), zeros({2, 3, 4}), zeros({3, 4, 5}));
                       }});
  add_row("addbmm_", f_addbmm_, {{{3, 5}, {2, 3, 4}, {2, 4, 5}}}, true, true);
  {  // beta == 0 must not read the input: NaN/inf there do not reach the result
    OpRow n = gemm_row(
        "addmm.beta0_nan",
        [](DType dt) {
          Sample s = sample({{3, 2}, {3, 4}, {4, 2}}, dt, "nan input", {}, {0, 1});
          s.inputs[0] = full({3, 2}, NAN, DType::Float64);
          return std::vector<Sample>{s};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return addmm(in[0], in[1], in[2], s.scalars[0], s.scalars[1]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return ref_add_product(in, s, false);
        });
    n.dtypes = detail::kFloatMask;
    rows.push_back(n);
  }
  return rows;
}

KILN_OP_ROWS(add_rows);

std::vector<OpRow> vector_rows() {
  std::vector<OpRow> rows;
  auto mat_ref = ref2([](const Arr& a, const Arr& b, const Sample&) { return ref_matmul(a, b); });
  {
    OpRow r = gemm_row(
        "dot",
        [](DType dt) {
          return std::vector<Sample>{sample({{7}, {7}}, dt), sample({{0}, {0}}, dt),
                                     sample({{1}, {1}}, dt), sample({{20}, {20}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].dot(in[1]); }, mat_ref);
    r.errors.push_back({"[dot] 1D tensors expected, but got 2D and 1D tensors", [] {
                          dot(zeros({2, 2}), zeros({2}));
                        }});
    r.errors.push_back({"[dot] inconsistent tensor size, expected tensor [3] and src [4]",
                        [] { dot(zeros({3}), zeros({4})); }});
    r.errors.push_back(
        {"[dot] expected both vectors to have same dtype, but found float32 and "
         "float64",
         [] { dot(zeros({3}), zeros({3}, DType::Float64)); }});
    rows.push_back(r);
  }
  {
    OpRow r = gemm_row(
        "vdot",
        [](DType dt) {
          return std::vector<Sample>{sample({{7}, {7}}, dt), sample({{0}, {0}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].vdot(in[1]); },
        ref2([](const Arr& a, const Arr& b, const Sample&) {
          C s = 0;
          for (size_t i = 0; i < a.v.size(); ++i) s += std::conj(a.v[i]) * b.v[i];
          return Arr{{s}, {}};
        }));
    r.errors.push_back({"[vdot] 1D tensors expected", [] { vdot(zeros({2, 2}), zeros({2})); }});
    rows.push_back(r);
  }
  {
    OpRow r = gemm_row(
        "mv",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 4}, {4}}, dt), sample({{0, 4}, {4}}, dt),
                                     sample({{3, 0}, {0}}, dt), sample({{1, 9}, {9}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].mv(in[1]); }, mat_ref);
    r.errors.push_back(
        {"[mv] size mismatch: matrix of shape [3, 4] cannot be multiplied with a "
         "vector of shape [5]",
         [] {
           mv(zeros({3, 4}), zeros({5}));
         }});
    r.errors.push_back(
        {"[mv] expected a 2-D matrix and a 1-D vector", [] { mv(zeros({3}), zeros({3})); }});
    rows.push_back(r);
  }
  auto outer_ref = ref2([](const Arr& a, const Arr& b, const Sample&) {
    Arr o{{}, {a.shape[0], b.shape[0]}};
    for (C x : a.v)
      for (C y : b.v) o.v.push_back(x * y);
    return o;
  });
  auto outer_samples = [](DType dt) {
    return std::vector<Sample>{sample({{3}, {4}}, dt), sample({{0}, {4}}, dt),
                               sample({{1}, {1}}, dt)};
  };
  for (const char* name : {"outer", "ger"}) {
    bool is_ger = std::string(name) == "ger";
    OpRow r = gemm_row(
        name, outer_samples,
        [is_ger](const std::vector<Tensor>& in, const Sample&) {
          return is_ger ? in[0].ger(in[1]) : in[0].outer(in[1]);
        },
        outer_ref);
    r.covers = {OpId::Mul};
    r.skip_noncontiguous.clear();  // elementwise products: exact in any layout
    r.errors.push_back({"[outer] expected 1-D arguments", [] {
                          outer(zeros({2, 2}), zeros({2}));
                        }});
    rows.push_back(r);
  }
  {
    OpRow r = gemm_row(
        "inner",
        [](DType dt) {
          return std::vector<Sample>{sample({{3, 4}, {5, 4}}, dt), sample({{4}, {4}}, dt),
                                     sample({{}, {3, 4}}, dt), sample({{2, 3, 4}, {4}}, dt),
                                     sample({{2, 0}, {3, 0}}, dt)};
        },
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].inner(in[1]); },
        ref2([](const Arr& a, const Arr& b, const Sample&) {
          if (a.shape.empty() || b.shape.empty()) {  // scalar times tensor
            Arr o = a.shape.empty() ? b : a;
            C k = a.shape.empty() ? a.v[0] : b.v[0];
            for (C& x : o.v) x *= k;
            return o;
          }
          int64_t k = a.shape.back(), p = numel_of(a.shape) / std::max<int64_t>(k, 1),
                  q = numel_of(b.shape) / std::max<int64_t>(k, 1);
          if (k == 0) {
            p = numel_of(Shape(a.shape.begin(), a.shape.end() - 1));
            q = numel_of(Shape(b.shape.begin(), b.shape.end() - 1));
          }
          Arr o{std::vector<C>(p * q, C(0)), Shape(a.shape.begin(), a.shape.end() - 1)};
          o.shape.insert(o.shape.end(), b.shape.begin(), b.shape.end() - 1);
          for (int64_t i = 0; i < p; ++i)
            for (int64_t j = 0; j < q; ++j)
              for (int64_t t = 0; t < k; ++t) o.v[i * q + j] += a.v[i * k + t] * b.v[j * k + t];
          return o;
        }));
    r.errors.push_back(
        {"[inner] the last dimension must match on both input tensors but got "
         "shapes [2, 3] and [4, 5]",
         [] {
           inner(zeros({2, 3}), zeros({4, 5}));
         }});
    rows.push_back(r);
  }
  return rows;
}

KILN_OP_ROWS(vector_rows);

}  // namespace
}  // namespace kiln::testing
