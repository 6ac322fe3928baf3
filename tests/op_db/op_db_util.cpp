// Op-table helpers: value reading, master tensors, comparison, reference maps, standard samples.
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "op_db/op_db.h"

namespace kiln::testing {

std::vector<OpRow>& op_table() {
  static std::vector<OpRow> rows;
  return rows;
}

namespace {
std::complex<double> read_one(const char* p, DType d) {
  switch (d) {
#define KILN_READ_CASE(T, E, N)                   \
  case DType::E: {                                \
    T v;                                          \
    std::memcpy(&v, p, sizeof(T));                \
    auto c = detail::convert<complex<double>>(v); \
    return {c.real(), c.imag()};                  \
  }
    KILN_FORALL_DTYPES(KILN_READ_CASE)
#undef KILN_READ_CASE
  }
  return {};
}
}  // namespace

std::vector<std::complex<double>> values(const Tensor& t0) {
  Tensor t = t0.is_cpu() ? t0 : t0.to(Device(kCPU));
  std::vector<std::complex<double>> out;
  int64_t n = t.numel();
  out.reserve(n);
  if (n == 0) return out;
  int64_t nd = t.dim();
  std::vector<int64_t> idx(nd, 0);
  const char* base = static_cast<const char*>(t.data_ptr());
  int64_t es = t.element_size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * t.strides()[d];
    out.push_back(read_one(base + off * es, t.dtype()));
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor from_values(const std::vector<std::complex<double>>& v, IntArrayRef shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  char* p = static_cast<char*>(t.data_ptr());
  for (size_t i = 0; i < v.size(); ++i) {
    detail::dispatch_types<detail::kAllMask>(dtype, "from_values", [&]<class T>() {
      T x = detail::convert<T>(complex<double>(v[i].real(), v[i].imag()));
      std::memcpy(p + i * sizeof(T), &x, sizeof(T));
    });
  }
  return t;
}

Tensor rand_master(IntArrayRef shape, bool cplx, uint64_t seed, double lo, double hi) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<std::complex<double>> v(n);
  for (auto& x : v) x = cplx ? std::complex<double>(u(g), u(g)) : std::complex<double>(u(g), 0);
  return from_values(v, shape, cplx ? DType::Complex128 : DType::Float64);
}

Tensor noncontiguous(const Tensor& t) {
  if (t.dim() == 0) return t;
  // Place values in every other slot of a buffer with the last two dims swapped in memory.
  DimVector big(t.sizes());
  big.back() *= 2;
  Tensor buf = empty(big, t.dtype());
  Tensor view = buf.slice(t.dim() - 1, 0, std::nullopt, 2);
  auto v = values(t);
  // write row-major through the strided view, independently of kiln's copy
  int64_t nd = view.dim(), n = view.numel();
  std::vector<int64_t> idx(nd, 0);
  char* base = static_cast<char*>(view.data_ptr());
  int64_t es = view.element_size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * view.strides()[d];
    detail::dispatch_types<detail::kAllMask>(t.dtype(), "noncontiguous", [&]<class T>() {
      T x = detail::convert<T>(complex<double>(v[i].real(), v[i].imag()));
      std::memcpy(base + off * es, &x, sizeof(T));
    });
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < view.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  EXPECT_FALSE(view.is_contiguous() && t.numel() > 1);
  return view;
}

double default_atol(DType d) {
  switch (d) {
    case DType::Float64:
    case DType::Complex128:
      return 1e-10;
    case DType::Float32:
    case DType::Complex64:
      return 1e-5;
    case DType::Float16:
      return 1e-3;
    case DType::BFloat16:
      return 1e-2;
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2:
      return 1e-1;
    default:
      return 0;
  }
}

double default_rtol(DType d) {
  switch (d) {
    case DType::Float64:
    case DType::Complex128:
      return 1e-9;
    case DType::Float32:
    case DType::Complex64:
      return 1.3e-5;
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2:
      return 0.25;
    default:
      return 0;
  }
}

::testing::AssertionResult close(const Tensor& got, const Tensor& ref, double atol, double rtol,
                                 bool equal_nan) {
  if (got.sizes() != ref.sizes()) {
    std::ostringstream os;
    os << "shape " << got.sizes() << " != expected " << ref.sizes();
    return ::testing::AssertionFailure() << os.str();
  }
  auto g = values(got), r = values(ref);
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < g.size(); ++i) {
    for (int part = 0; part < 2; ++part) {
      double a = part ? g[i].imag() : g[i].real(), b = part ? r[i].imag() : r[i].real();
      bool ok;
      if (std::isnan(a) || std::isnan(b))
        ok = equal_nan && std::isnan(a) && std::isnan(b);
      else if (std::isinf(a) || std::isinf(b))
        ok = a == b;
      else
        ok = std::abs(a - b) <= atol + rtol * std::abs(b);
      if (!ok && bad++ < 5)
        os << "\n  element " << i << (part ? " (imag)" : "") << ": got " << a << ", expected " << b
           << " (diff " << std::abs(a - b) << ")";
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " mismatches of " << g.size() << os.str();
  return ::testing::AssertionSuccess();
}

std::vector<int64_t> ref_broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t n = 0;
  for (auto& s : shapes) n = std::max(n, s.size());
  std::vector<int64_t> out(n, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[n - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

Tensor ref_map(const std::vector<Tensor>& in, DType out_dtype,
               const std::function<C(const std::vector<C>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  for (auto& t : in) shapes.push_back(t.sizes().vec());
  std::vector<int64_t> shape = ref_broadcast(shapes);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<std::vector<C>> vals;
  for (auto& t : in) vals.push_back(values(t));
  std::vector<C> out(n);
  std::vector<int64_t> idx(shape.size(), 0);
  std::vector<C> args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) {
      const auto& s = shapes[k];
      int64_t lin = 0;
      for (size_t d = 0; d < s.size(); ++d) {
        int64_t id = idx[shape.size() - s.size() + d];
        lin = lin * s[d] + (s[d] == 1 ? 0 : id);
      }
      args[k] = vals[k][lin];
    }
    out[i] = f(args);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return from_values(out, shape, out_dtype);
}

std::vector<Sample> elementwise_samples(int arity, DType dt, double lo, double hi, bool special) {
  bool cplx = is_complex(dt);
  std::vector<std::vector<std::vector<int64_t>>> shape_sets = {
      {{}}, {{0}}, {{7}}, {{3, 4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{1}, {5, 1}}, {{70001}}};
  std::vector<Sample> out;
  uint64_t seed = 1;
  for (auto& set : shape_sets) {
    Sample s;
    std::ostringstream d;
    for (int k = 0; k < arity; ++k) {
      const auto& sh = set[std::min<size_t>(k, set.size() - 1)];
      s.inputs.push_back(rand_master(sh, cplx, seed++ * 7919, lo, hi));
      d << (k ? "x" : "") << IntArrayRef(sh);
    }
    s.desc = d.str();
    out.push_back(std::move(s));
  }
  if (special && (is_floating_point(dt) || cplx)) {
    double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    std::vector<std::complex<double>> sp = {0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 0.5, -2.5, 3.0};
    Sample s;
    for (int k = 0; k < arity; ++k) {
      std::vector<std::complex<double>> v;
      for (size_t i = 0; i < sp.size(); ++i) v.push_back(sp[(i * (k + 1) + k) % sp.size()]);
      s.inputs.push_back(from_values(v, {static_cast<int64_t>(v.size())},
                                     cplx ? DType::Complex128 : DType::Float64));
    }
    s.desc = "special values";
    out.push_back(std::move(s));
  }
  return out;
}

namespace {
DType master_dtype_for(DType dt) { return is_complex(dt) ? DType::Complex128 : DType::Float64; }
}  // namespace

OpRow unary_row(std::string name, OpId id, std::function<Tensor(const Tensor&)> fn,
                std::function<C(C)> ref, uint32_t dtypes, double lo, double hi) {
  OpRow r;
  r.name = std::move(name);
  r.covers = {id};
  r.dtypes = dtypes;
  r.samples = [lo, hi](DType dt) { return elementwise_samples(1, dt, lo, hi); };
  r.op = [fn](const std::vector<Tensor>& in, const Sample&) { return fn(in[0]); };
  r.ref = [ref](const std::vector<Tensor>& in, const Sample&) {
    return ref_map(in, master_dtype_for(in[0].dtype()),
                   [&](const std::vector<C>& a) { return ref(a[0]); });
  };
  return r;
}

OpRow binary_row(std::string name, OpId id, std::function<Tensor(const Tensor&, const Tensor&)> fn,
                 std::function<C(C, C)> ref, uint32_t dtypes, double lo, double hi) {
  OpRow r;
  r.name = std::move(name);
  r.covers = {id};
  r.dtypes = dtypes;
  r.samples = [lo, hi](DType dt) { return elementwise_samples(2, dt, lo, hi); };
  r.op = [fn](const std::vector<Tensor>& in, const Sample&) { return fn(in[0], in[1]); };
  r.ref = [ref](const std::vector<Tensor>& in, const Sample&) {
    DType m = in[0].dtype() == DType::Complex128 || in[1].dtype() == DType::Complex128
                  ? DType::Complex128
                  : DType::Float64;
    return ref_map(in, m, [&](const std::vector<C>& a) { return ref(a[0], a[1]); });
  };
  return r;
}

}  // namespace kiln::testing
