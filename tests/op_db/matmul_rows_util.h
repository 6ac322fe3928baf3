// Shared pieces of the matmul-family op-table rows: value arrays, the PyTorch-semantics matmul
// reference written with plain loops in complex<double>, sample builders and the row template.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "kiln/ops/linalg.h"
#include "op_db/op_db.h"

namespace kiln::testing::matmul_rows {

using Shape = std::vector<int64_t>;

// Values and shape of a reference operand.
struct Arr {
  std::vector<C> v;
  Shape shape;
};

inline Arr arr(const Tensor& t) { return {values(t), t.sizes().vec()}; }

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

inline DType master_of(const std::vector<Tensor>& in) {
  for (const Tensor& t : in)
    if (t.is_complex()) return DType::Complex128;
  return DType::Float64;
}

inline Tensor to_tensor(const Arr& a, DType master) { return from_values(a.v, a.shape, master); }

// Advances a row-major multi-index; false after the last one.
inline bool next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

// x[idx] where x's shape is right-aligned against idx and its size-1 dims broadcast.
inline C bget(const Arr& x, const std::vector<int64_t>& idx) {
  int64_t lin = 0;
  size_t off = idx.size() - x.shape.size();
  for (size_t d = 0; d < x.shape.size(); ++d)
    lin = lin * x.shape[d] + (x.shape[d] == 1 ? 0 : idx[off + d]);
  return x.v[lin];
}

// PyTorch's matmul semantics, written out: 1-D operands become [1, k] / [k, 1] (the added dim is
// dropped from the result), batch dims broadcast.
inline Arr ref_matmul(Arr a, Arr b) {
  bool a1 = a.shape.size() == 1, b1 = b.shape.size() == 1;
  if (a1) a.shape.insert(a.shape.begin(), 1);
  if (b1) b.shape.push_back(1);
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = ref_broadcast({ba, bb});
  Arr out;
  Shape full = batch;
  full.push_back(m);
  full.push_back(n);
  out.v.assign(numel_of(full), C(0));
  if (numel_of(full) > 0) {
    std::vector<int64_t> idx(full.size(), 0);
    size_t pos = 0;
    do {
      std::vector<int64_t> ia(idx.begin(), idx.end() - 1), ib(idx.begin(), idx.end() - 2);
      ia.push_back(0);  // [batch..., i, p]
      ib.push_back(0);  // [batch..., p, j]
      ib.push_back(idx.back());
      C s = 0;
      for (int64_t p = 0; p < k; ++p) {
        ia.back() = p;
        ib[ib.size() - 2] = p;
        s += bget(a, ia) * bget(b, ib);
      }
      out.v[pos++] = s;
    } while (next_index(idx, full));
  }
  out.shape = batch;
  if (!a1) out.shape.push_back(m);
  if (!b1) out.shape.push_back(n);
  return out;
}

// beta * input (broadcast to r's shape) + alpha * r; beta == 0 ignores input.
inline Arr ref_axpby(const Arr& input, const Arr& r, C beta, C alpha) {
  Arr out = r;
  if (numel_of(r.shape) == 0) return out;
  std::vector<int64_t> idx(r.shape.size(), 0);
  size_t pos = 0;
  do {
    C in = beta == C(0) ? C(0) : beta * bget(input, idx);
    out.v[pos] = in + alpha * r.v[pos];
    ++pos;
  } while (next_index(idx, r.shape));
  return out;
}

inline C sc(const Sample& s, size_t i) {
  auto z = s.scalars[i].to<complex<double>>();
  return C(z.real(), z.imag());
}

// Masters whose values suit the dtype: the suite maps x -> trunc(20 x) for integers, so
// |x| < 0.15 keeps integer inputs in [-2, 2] and every sum below far from wrapping in int8.
inline Tensor mst(Shape shape, DType dt, uint64_t seed) {
  bool ints = is_integral(dt);
  return rand_master(shape, is_complex(dt), seed, ints ? -0.149 : -2, ints ? 0.149 : 2);
}

inline Sample sample(std::vector<Shape> shapes, DType dt, std::string desc = "", Shape ints = {},
                     std::vector<Scalar> scalars = {}) {
  Sample s;
  uint64_t seed = 17;
  for (const Shape& sh : shapes) s.inputs.push_back(mst(sh, dt, seed++ * 31));
  if (desc.empty()) {
    std::ostringstream os;
    for (size_t i = 0; i < shapes.size(); ++i) os << (i ? "x" : "") << IntArrayRef(shapes[i]);
    desc = os.str();
  }
  s.desc = desc;
  s.ints = ints;
  s.scalars = scalars;
  return s;
}

// (beta, alpha) that fit the dtype: integers for integer dtypes, complex for complex ones.
inline std::vector<Scalar> beta_alpha(DType dt, int variant) {
  // uint8 results stay non-negative so the reference needs no wrapping (tested in matmul_test).
  if (dt == DType::UInt8)
    return variant == 0 ? std::vector<Scalar>{2, 1} : std::vector<Scalar>{1, 2};
  if (is_integral(dt)) return variant == 0 ? std::vector<Scalar>{2, -1} : std::vector<Scalar>{1, 2};
  if (is_complex(dt) && variant == 0)
    return {complex<double>(0.5, -1.0), complex<double>(-1.5, 0.25)};
  return variant == 0 ? std::vector<Scalar>{0.5, -1.5} : std::vector<Scalar>{1, 2};
}

constexpr uint32_t kGemmTypes = detail::kFloatMask | detail::kComplexMask | detail::kIntMask;

inline OpRow gemm_row(std::string name, std::function<std::vector<Sample>(DType)> samples, OpFn op,
                      OpFn ref) {
  OpRow r;
  r.name = std::move(name);
  r.covers = {OpId::Bmm};
  r.dtypes = kGemmTypes;
  r.samples = std::move(samples);
  r.op = std::move(op);
  r.ref = std::move(ref);
  r.out_dtype = [](DType d) { return d; };
  // Sums of up to ~20 products: float32 accumulation error grows with the length.
  r.tol_scale = 8;
  // Note [BLAS results depend on the layout]: OpenBLAS picks its kernel (GEMM N/T, GEMV N/T) from
  // the strides, so the same values in another layout may differ in the last bits, while the
  // NonContiguous suite compares bit for bit. Strided layouts are checked against the reference
  // instead: the *.strided rows below and tests/ops/matmul_test.cpp (every layout x dtype).
  r.skip_noncontiguous = "BLAS kernel choice depends on strides (last-bit differences)";
  return r;
}

// Every other element of the last dim (the values a .slice(-1, 0, None, 2) view holds), computed
// from the row-major values.
inline Arr every_other(const Arr& x) {
  Arr y{{}, x.shape};
  int64_t last = x.shape.back();
  y.shape.back() = (last + 1) / 2;
  for (size_t i = 0; i < x.v.size(); ++i)
    if ((static_cast<int64_t>(i) % last) % 2 == 0) y.v.push_back(x.v[i]);
  return y;
}

inline Tensor strided(const Tensor& t) { return t.slice(-1, 0, std::nullopt, 2); }

// Reference of a two-input product op.
inline OpFn ref2(std::function<Arr(const Arr&, const Arr&, const Sample&)> f) {
  return [f](const std::vector<Tensor>& in, const Sample& s) {
    return to_tensor(f(arr(in[0]), arr(in[1]), s), master_of(in));
  };
}

inline Tensor maybe_t(const Tensor& t, int64_t flag) { return flag ? t.transpose(-2, -1) : t; }

}  // namespace kiln::testing::matmul_rows
