// Op-table rows for the random family. Each kiln call draws from a generator seeded with kSeed;
// the reference recomputes every element from the Philox words (philox_word, Note [Philox
// streams]) with its own formulas (uniform, exponential, bernoulli, integers, randperm,
// multinomial), or with distributions.h's per-element function where the value depends on float
// rounding inside the transform (Box-Muller, geometric, cauchy). Distribution laws: tests/ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/ops/random.h"
#include "op_db/op_db.h"

namespace kiln::testing {
namespace {

using detail::kBoolMask;
using detail::kFloatMask;
using detail::kIntMask;
using u128 = unsigned __int128;

constexpr uint64_t kSeed = 0x0123456789ABCDEFull;

Generator seeded() {
  Generator g;
  g.manual_seed(kSeed);
  return g;
}

// ---- the stream of a call that starts at offset 0 of kSeed ----
uint32_t word(uint64_t j) { return philox_word(kSeed, 0, j); }
uint64_t draw64(uint64_t d) {
  return static_cast<uint64_t>(word(2 * d)) | (static_cast<uint64_t>(word(2 * d + 1)) << 32);
}
// float math (one word per element) for float32/float16/bfloat16, double math (a 64-bit draw).
bool float_math(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}
double ref_unit(DType d, uint64_t i) {
  return float_math(d) ? static_cast<double>(word(i) >> 8) * 0x1p-24
                       : static_cast<double>(draw64(i) >> 11) * 0x1p-53;
}
double ref_std_normal(DType d, uint64_t i) {
  const uint64_t p = i / 2;
  if (float_math(d)) {
    auto z = rng_normal_pair_float(word(2 * p), word(2 * p + 1));
    return (i & 1) ? z.second : z.first;
  }
  auto z = rng_normal_pair_double(draw64(2 * p), draw64(2 * p + 1));
  return (i & 1) ? z.second : z.first;
}
// low + floor(X * range / 2^B): X = the 64-bit draw i (range <= 2^32) or the 128-bit draw made
// of draws 2i (low half) and 2i + 1 (high half); range 0 means 2^64.
int64_t ref_int(uint64_t i, uint64_t range, int64_t low) {
  uint64_t v;
  if (range != 0 && range <= (uint64_t{1} << 32)) {
    v = static_cast<uint64_t>((static_cast<u128>(draw64(i)) * range) >> 64);
  } else {
    const uint64_t lo = draw64(2 * i), hi = draw64(2 * i + 1);
    if (range == 0) {
      v = hi;
    } else {
      const u128 a = static_cast<u128>(hi) * range;
      const u128 b = (static_cast<u128>(lo) * range) >> 64;
      v = static_cast<uint64_t>((a + b) >> 64);
    }
  }
  return static_cast<int64_t>(static_cast<uint64_t>(low) + v);
}

// The largest integer random_() draws for a dtype (exactly representable in it).
int64_t dtype_top(DType d) {
  switch (d) {
    case DType::Bool:
      return 1;
    case DType::UInt8:
      return 255;
    case DType::Int8:
      return 127;
    case DType::Int16:
      return 32767;
    case DType::Int32:
      return 2147483647;
    case DType::Int64:
      return std::numeric_limits<int64_t>::max();
    case DType::Float16:
      return 2048;
    case DType::BFloat16:
      return 256;
    case DType::Float32:
      return int64_t{1} << 24;
    default:
      return int64_t{1} << 53;
  }
}

DType dt_of(const Sample& s) { return static_cast<DType>(s.ints[0]); }
std::vector<int64_t> shape_of(const Sample& s) {
  return std::vector<int64_t>(s.ints.begin() + 1, s.ints.end());
}
int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t x : shape) n *= x;
  return n;
}
std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

// 0-dim, empty, odd sizes (a Box-Muller pair and a Philox block cut at the end), 3-D, and one
// large enough for the parallel path.
const std::vector<std::vector<int64_t>> kShapes = {{}, {0}, {7}, {3, 5}, {2, 3, 4}, {301, 207}};

Tensor f64(const std::vector<double>& v, IntArrayRef shape) {
  return from_vector(v, shape, TensorOptions(DType::Float64));
}

using ElemRef = std::function<double(DType, uint64_t)>;

// A row for an in-place sampler: fill(x, gen) writes x; ref(dtype, i) is element i's value.
OpRow fill_row(std::string name, OpId id, uint32_t dtypes,
               std::function<void(Tensor&, Generator)> fill, ElemRef ref) {
  OpRow r;
  r.name = std::move(name);
  r.covers = {id};
  r.dtypes = dtypes;
  r.samples = [](DType dt) {
    std::vector<Sample> v;
    for (const auto& sh : kShapes) {
      Sample s;
      s.inputs = {rand_master(sh, false, 7)};
      s.ints = {static_cast<int64_t>(dt)};
      s.desc = shape_str(sh);
      v.push_back(s);
    }
    return v;
  };
  r.op = [fill](const std::vector<Tensor>& in, const Sample&) {
    Tensor x = in[0];
    fill(x, seeded());
    return x;
  };
  r.ref = [ref](const std::vector<Tensor>& in, const Sample& s) {
    std::vector<double> v(static_cast<size_t>(in[0].numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = ref(dt_of(s), i);
    return f64(v, in[0].sizes());
  };
  r.out_dtype = [](DType d) { return d; };
  return r;
}

// A row for a factory: make(shape, gen, dtype); ref(dtype, i) as above.
OpRow factory_row(std::string name, OpId id, uint32_t dtypes,
                  std::function<Tensor(IntArrayRef, Generator, DType)> make, ElemRef ref) {
  OpRow r;
  r.name = std::move(name);
  r.covers = {id};
  r.dtypes = dtypes;
  r.samples = [](DType dt) {
    std::vector<Sample> v;
    for (const auto& sh : kShapes) {
      Sample s;
      s.ints = {static_cast<int64_t>(dt)};
      s.ints.insert(s.ints.end(), sh.begin(), sh.end());
      s.desc = shape_str(sh);
      v.push_back(s);
    }
    return v;
  };
  r.op = [make](const std::vector<Tensor>&, const Sample& s) {
    return make(shape_of(s), seeded(), dt_of(s));
  };
  r.ref = [ref](const std::vector<Tensor>&, const Sample& s) {
    const auto sh = shape_of(s);
    std::vector<double> v(static_cast<size_t>(numel_of(sh)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = ref(dt_of(s), i);
    return f64(v, sh);
  };
  r.out_dtype = [](DType d) { return d; };
  return r;
}

// Rounds a reference value to dtype d (cauchy in float16 overflows to inf like the kernel).
double round_to(DType d, double v) {
  if (d == DType::Float16) return static_cast<float>(Half(static_cast<float>(v)));
  if (d == DType::BFloat16) return static_cast<float>(BFloat16(static_cast<float>(v)));
  if (d == DType::Float32) return static_cast<float>(v);
  return v;
}

std::vector<OpRow> float_sampler_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r = factory_row(
        "rand", OpId::Uniform, kFloatMask,
        [](IntArrayRef sh, Generator g, DType d) { return rand(sh, g, d); },
        [](DType d, uint64_t i) { return ref_unit(d, i); });
    r.errors.push_back({"[rand] expected a floating point or complex dtype, got int64",
                        [] { rand({2}, DType::Int64); }});
    r.errors.push_back({"[rand] negative dimension -1", [] { rand({2, -1}); }});
    rows.push_back(r);
  }
  {
    OpRow r = fill_row(
        "uniform_", OpId::Uniform, kFloatMask, [](Tensor& x, Generator g) { x.uniform_(-3, 5, g); },
        [](DType d, uint64_t i) { return -3 + 8 * ref_unit(d, i); });
    r.errors.push_back({"[uniform_] expects a [from, to) range, but got from=2 > to=1",
                        [] { empty({3}).uniform_(2, 1); }});
    r.errors.push_back({"[uniform_] expected a floating point tensor",
                        [] { empty({3}, DType::Int32).uniform_(); }});
    r.errors.push_back({"[uniform_] expects from and to to be finite",
                        [] { empty({3}).uniform_(0, std::numeric_limits<double>::infinity()); }});
    r.errors.push_back(
        {"out of the range of dtype float16", [] { empty({3}, DType::Float16).uniform_(0, 1e5); }});
    r.errors.push_back({"more than one element of the written-to tensor refers to a single",
                        [] { empty({1}).expand({4}).uniform_(); }});
    rows.push_back(r);
  }
  {
    OpRow r = factory_row(
        "randn", OpId::Normal, kFloatMask,
        [](IntArrayRef sh, Generator g, DType d) { return randn(sh, g, d); },
        [](DType d, uint64_t i) { return ref_std_normal(d, i); });
    r.errors.push_back({"[randn] expected a floating point or complex dtype, got bool",
                        [] { randn({2}, DType::Bool); }});
    rows.push_back(r);
  }
  {
    OpRow r = fill_row(
        "normal_", OpId::Normal, kFloatMask, [](Tensor& x, Generator g) { x.normal_(1.5, 2.0, g); },
        [](DType d, uint64_t i) { return 1.5 + 2.0 * ref_std_normal(d, i); });
    r.errors.push_back(
        {"[normal_] expects std >= 0.0, but got std=-1", [] { empty({3}).normal_(0, -1); }});
    r.errors.push_back(
        {"[normal_] expected a floating point tensor", [] { empty({3}, DType::Int64).normal_(); }});
    rows.push_back(r);
  }
  rows.push_back(fill_row(
      "log_normal_", OpId::LogNormal, kFloatMask,
      [](Tensor& x, Generator g) { x.log_normal_(0.5, 0.75, g); },
      [](DType d, uint64_t i) { return std::exp(0.5 + 0.75 * ref_std_normal(d, i)); }));
  rows.back().errors.push_back(
      {"[log_normal_] expects std > 0.0", [] { empty({3}).log_normal_(0, 0); }});
  {
    OpRow r = fill_row(
        "exponential_", OpId::Exponential, kFloatMask,
        [](Tensor& x, Generator g) { x.exponential_(2.5, g); },
        [](DType d, uint64_t i) {
          const double u = ref_unit(d, i);
          const double e = u == 0 ? (float_math(d) ? 0x1p-25 : 0x1p-54) : -std::log1p(-u);
          return e / 2.5;
        });
    r.errors.push_back({"[exponential_] expects lambda > 0.0, but got lambda=-1",
                        [] { empty({3}).exponential_(-1); }});
    rows.push_back(r);
  }
  {
    OpRow r = fill_row(
        "geometric_", OpId::Geometric, kFloatMask | kIntMask,
        [](Tensor& x, Generator g) { x.geometric_(0.2, g); },
        [](DType d, uint64_t i) {
          return float_math(d) ? rng_geometric_float(word(i), 0.2f)
                               : rng_geometric_double(draw64(i), 0.2);
        });
    r.errors.push_back({"[geometric_] expects p to be in (0, 1), but got p=1",
                        [] { empty({3}).geometric_(1.0); }});
    r.errors.push_back({"[geometric_] not implemented for dtype bool",
                        [] { empty({3}, DType::Bool).geometric_(0.5); }});
    rows.push_back(r);
  }
  {
    OpRow r = fill_row(
        "cauchy_", OpId::Cauchy, kFloatMask, [](Tensor& x, Generator g) { x.cauchy_(0.5, 2.0, g); },
        [](DType d, uint64_t i) {
          return round_to(d, float_math(d) ? rng_cauchy_float(word(i), 0.5f, 2.0f)
                                           : rng_cauchy_double(draw64(i), 0.5, 2.0));
        });
    r.errors.push_back({"[cauchy_] expects a finite median and a finite sigma > 0.0",
                        [] { empty({3}).cauchy_(0, -2); }});
    rows.push_back(r);
  }
  return rows;
}

// Element (row-major index i of out_shape) of a tensor broadcast to out_shape.
std::complex<double> bcast_at(const std::vector<std::complex<double>>& v,
                              const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& out_shape, int64_t i) {
  int64_t off = 0, stride = 1;
  const int64_t nd = static_cast<int64_t>(out_shape.size()), nd_in = shape.size();
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t idx = i % out_shape[d];
    i /= out_shape[d];
    const int64_t din = d - (nd - nd_in);
    if (din < 0) continue;
    if (shape[din] != 1) off += idx * stride;
    stride *= shape[din];
  }
  return v[off];
}

std::vector<OpRow> tensor_param_rows() {
  std::vector<OpRow> rows;
  {
    // normal with tensors; ints {dtype, variant}: 0 normal(mean, std), 1 normal(mean, 0.75),
    // 2 normal(-0.5, std).
    OpRow r;
    r.name = "normal.tensor";
    r.covers = {OpId::NormalTensor};
    r.dtypes = kFloatMask;
    r.samples = [](DType dt) {
      const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
          {{3, 4}, {3, 4}}, {{2, 3}, {3}}, {{}, {2, 5}},       {{5, 1}, {1, 7}},
          {{0}, {0}},       {{}, {}},      {{211, 300}, {300}}};
      std::vector<Sample> v;
      for (int variant = 0; variant < 3; ++variant)
        for (const auto& [ms, ss] : shapes) {
          Sample s;
          s.inputs = {rand_master(ms, false, 11, -2, 2), rand_master(ss, false, 12, 0.1, 3)};
          s.ints = {static_cast<int64_t>(dt), variant};
          s.desc = shape_str(ms) + " " + shape_str(ss) + " variant " + std::to_string(variant);
          v.push_back(s);
        }
      return v;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      if (s.ints[1] == 1) return normal(in[0], 0.75, seeded());
      if (s.ints[1] == 2) return normal(-0.5, in[1], seeded());
      return normal(in[0], in[1], seeded());
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      const int64_t variant = s.ints[1];
      const auto ms = in[0].sizes().vec(), ss = in[1].sizes().vec();
      const auto out_shape = variant == 1 ? ms : variant == 2 ? ss : ref_broadcast({ms, ss});
      const auto mv = values(in[0]), sv = values(in[1]);
      std::vector<double> v(static_cast<size_t>(numel_of(out_shape)));
      for (size_t i = 0; i < v.size(); ++i) {
        const double m = variant == 2 ? -0.5 : bcast_at(mv, ms, out_shape, i).real();
        const double sd = variant == 1 ? 0.75 : bcast_at(sv, ss, out_shape, i).real();
        v[i] = m + sd * ref_std_normal(dt_of(s), i);
      }
      return f64(v, out_shape);
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors.push_back({"[normal] expects all elements of std >= 0.0, but found -1",
                        [] { normal(zeros({3}), full({3}, -1.0)); }});
    r.errors.push_back({"[normal] shapes [2, 3] and [4] cannot be broadcast", [] {
                          normal(zeros({2, 3}), ones({4}));
                        }});
    r.errors.push_back({"[normal] expected a floating point mean",
                        [] { normal(zeros({3}, DType::Int64), ones({3})); }});
    r.errors.push_back(
        {"[normal] expects std >= 0.0, but got std=-2", [] { normal(zeros({3}), -2.0); }});
    rows.push_back(r);
  }
  {
    // bernoulli(p): p in [0, 1) from the master, rounded to the tested dtype.
    OpRow r;
    r.name = "bernoulli";
    r.covers = {OpId::BernoulliTensor};
    r.dtypes = kFloatMask;
    r.samples = [](DType dt) {
      std::vector<Sample> v;
      for (const auto& sh : kShapes) {
        Sample s;
        s.inputs = {rand_master(sh, false, 13, 0, 1)};
        s.ints = {static_cast<int64_t>(dt)};
        s.desc = shape_str(sh);
        v.push_back(s);
      }
      return v;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample&) { return bernoulli(in[0], seeded()); };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      const auto p = values(in[0]);
      std::vector<double> v(p.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = ref_unit(dt_of(s), i) < p[i].real() ? 1 : 0;
      return f64(v, in[0].sizes());
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors.push_back({"[bernoulli] expects all probabilities to be in [0, 1], but found 1.5",
                        [] { bernoulli(full({3}, 1.5)); }});
    r.errors.push_back({"[bernoulli] expected a floating point tensor of probabilities",
                        [] { bernoulli(zeros({3}, DType::Int64)); }});
    r.errors.push_back({"[bernoulli_] p of shape [4] cannot be broadcast to shape [2, 3]", [] {
                          zeros({2, 3}).bernoulli_(full({4}, 0.5));
                        }});
    rows.push_back(r);
  }
  {
    OpRow r = fill_row(
        "bernoulli_.scalar", OpId::Bernoulli, kFloatMask | kIntMask | kBoolMask,
        [](Tensor& x, Generator g) { x.bernoulli_(0.3, g); },
        [](DType d, uint64_t i) {
          const double p = float_math(d) ? static_cast<double>(0.3f) : 0.3;
          return ref_unit(d, i) < p ? 1.0 : 0.0;
        });
    r.errors.push_back({"[bernoulli_] expects p to be in [0, 1], but got p=-0.5",
                        [] { empty({3}).bernoulli_(-0.5); }});
    r.errors.push_back({"[bernoulli_] not implemented for dtype complex64",
                        [] { empty({3}, DType::Complex64).bernoulli_(0.5); }});
    rows.push_back(r);
  }
  return rows;
}

// [low, high) pairs for randint on a dtype: small, negative, and the widest the dtype holds
// (ranges of 2^32 and above take the 128-bit path).
std::vector<std::pair<int64_t, int64_t>> randint_bounds(DType d) {
  const int64_t top = dtype_top(d);
  std::vector<std::pair<int64_t, int64_t>> b = {{0, 2}};
  if (d == DType::Bool) return b;
  b.push_back({3, 10});
  if (d != DType::UInt8) b.push_back({-7, 4});
  if (d == DType::Int64) {
    b.push_back({-(int64_t{1} << 62), int64_t{1} << 62});
    b.push_back({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()});
  } else if (d == DType::UInt8) {
    b.push_back({0, 256});
  } else {
    b.push_back({is_floating_point(d) ? -top : -top - 1, top + 1});
  }
  return b;
}

std::vector<OpRow> integer_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r;
    r.name = "randint";
    r.covers = {OpId::RandomInt};
    r.dtypes = kIntMask | kBoolMask | kFloatMask;
    r.samples = [](DType dt) {
      std::vector<Sample> v;
      for (const auto& [lo, hi] : randint_bounds(dt))
        for (const auto& sh : kShapes) {
          Sample s;
          s.ints = {static_cast<int64_t>(dt)};
          s.ints.insert(s.ints.end(), sh.begin(), sh.end());
          s.scalars = {lo, hi};
          s.desc = shape_str(sh) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
          v.push_back(s);
        }
      return v;
    };
    r.op = [](const std::vector<Tensor>&, const Sample& s) {
      return randint(s.scalars[0].to_int(), s.scalars[1].to_int(), shape_of(s), seeded(), dt_of(s));
    };
    r.ref = [](const std::vector<Tensor>&, const Sample& s) {
      const int64_t lo = s.scalars[0].to_int(), hi = s.scalars[1].to_int();
      const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
      const auto sh = shape_of(s);
      std::vector<int64_t> v(static_cast<size_t>(numel_of(sh)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = ref_int(i, range, lo);
      return from_vector(v, sh);
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors.push_back({"[randint] expects 'low' to be less than 'high', but got low=5 >= high=5",
                        [] { randint(5, 5, {3}); }});
    r.errors.push_back({"[randint] to - 1=300 is out of bounds for dtype uint8",
                        [] { randint(0, 301, {3}, DType::UInt8); }});
    r.errors.push_back({"[randint] from=-1 is out of bounds for dtype uint8",
                        [] { randint(-1, 3, {3}, DType::UInt8); }});
    r.errors.push_back({"[randint] to - 1=16777217 is out of bounds for dtype float32",
                        [] { randint(0, 16777218, {3}, DType::Float32); }});
    r.errors.push_back({"[randint] not implemented for dtype complex64",
                        [] { randint(0, 3, {3}, DType::Complex64); }});
    rows.push_back(r);
  }
  {
    // random_ variants in ints[1]: 0 random_(), 1 random_(7), 2 random_(3, nullopt),
    // 3 random_(-4, 9) (signed and floating dtypes).
    OpRow r;
    r.name = "random_";
    r.covers = {OpId::RandomInt};
    r.dtypes = kIntMask | kBoolMask | kFloatMask;
    r.samples = [](DType dt) {
      std::vector<Sample> v;
      const int variants = (dt == DType::Bool) ? 1 : (dt == DType::UInt8 ? 3 : 4);
      for (int variant = 0; variant < variants; ++variant)
        for (const auto& sh : kShapes) {
          Sample s;
          s.inputs = {rand_master(sh, false, 17)};
          s.ints = {static_cast<int64_t>(dt), variant};
          s.desc = shape_str(sh) + " variant " + std::to_string(variant);
          v.push_back(s);
        }
      return v;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      Tensor x = in[0];
      switch (s.ints[1]) {
        case 0:
          return x.random_(seeded());
        case 1:
          return x.random_(7, seeded());
        case 2:
          return x.random_(3, std::nullopt, seeded());
        default:
          return x.random_(-4, 9, seeded());
      }
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      const int64_t top = dtype_top(dt_of(s));
      int64_t lo = 0, hi_inc = top;
      if (s.ints[1] == 1) hi_inc = 6;
      if (s.ints[1] == 2) lo = 3;
      if (s.ints[1] == 3) lo = -4, hi_inc = 8;
      const uint64_t range = static_cast<uint64_t>(hi_inc) - static_cast<uint64_t>(lo) + 1;
      std::vector<int64_t> v(static_cast<size_t>(in[0].numel()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = ref_int(i, range, lo);
      return from_vector(v, in[0].sizes());
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors.push_back({"[random_] expects 'from' to be less than 'to', but got from=3 >= to=2",
                        [] { empty({3}, DType::Int64).random_(3, 2); }});
    r.errors.push_back({"[random_] not implemented for dtype complex128",
                        [] { empty({3}, DType::Complex128).random_(); }});
    r.errors.push_back({"[random_] from=-1 is out of bounds for dtype bool",
                        [] { empty({3}, DType::Bool).random_(-1, 1); }});
    rows.push_back(r);
  }
  return rows;
}

std::vector<OpRow> permutation_rows() {
  std::vector<OpRow> rows;
  {
    OpRow r;
    r.name = "randperm";
    r.covers = {OpId::Randperm};
    r.dtypes = kIntMask | kFloatMask;
    r.samples = [](DType dt) {
      std::vector<Sample> v;
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{100},
                        std::min<int64_t>(50000, dtype_top(dt)) + 1}) {
        Sample s;
        s.ints = {static_cast<int64_t>(dt), n};
        s.desc = "n=" + std::to_string(n);
        v.push_back(s);
      }
      return v;
    };
    r.op = [](const std::vector<Tensor>&, const Sample& s) {
      return randperm(s.ints[1], seeded(), dt_of(s));
    };
    r.ref = [](const std::vector<Tensor>&, const Sample& s) {
      const int64_t n = s.ints[1];
      std::vector<std::pair<uint64_t, int64_t>> keys;
      for (int64_t j = 0; j < n; ++j) keys.push_back({draw64(j), j});
      std::stable_sort(keys.begin(), keys.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<int64_t> v;
      for (const auto& k : keys) v.push_back(k.second);
      return from_vector(v, {n});
    };
    r.out_dtype = [](DType d) { return d; };
    r.errors.push_back({"[randperm] n must be non-negative, got n=-3", [] { randperm(-3); }});
    r.errors.push_back({"[randperm] n=3000 is too large for result dtype float16",
                        [] { randperm(3000, DType::Float16); }});
    r.errors.push_back(
        {"[randperm] not implemented for dtype bool", [] { randperm(2, DType::Bool); }});
    rows.push_back(r);
  }
  {
    // multinomial; ints {dtype, num_samples}, flag = replacement. Weights are 0 where
    // j % 3 == 1, else in [0.05, 1.05).
    OpRow r;
    r.name = "multinomial";
    r.covers = {OpId::Multinomial};
    r.dtypes = kFloatMask;
    r.samples = [](DType dt) {
      struct Case {
        std::vector<int64_t> shape;
        int64_t ns;
        bool repl;
      };
      const std::vector<Case> cases = {
          {{6}, 4, true},     {{6}, 3, false},         {{3, 7}, 10, true},
          {{3, 7}, 5, false}, {{2, 1000}, 5000, true}, {{2, 1000}, 300, false},
          {{0, 5}, 2, true},  {{4, 1}, 3, true},       {{4, 1}, 1, false}};
      std::vector<Sample> v;
      for (const auto& c : cases) {
        Tensor m = rand_master(c.shape, false, 19, 0.05, 1.05);
        double* p = m.data_ptr<double>();
        const int64_t cats = c.shape.back();
        for (int64_t i = 0; i < m.numel(); ++i)
          if (cats > 1 && (i % cats) % 3 == 1) p[i] = 0;
        Sample s;
        s.inputs = {m};
        s.ints = {static_cast<int64_t>(dt), c.ns};
        s.flag = c.repl;
        s.desc = shape_str(c.shape) + " n=" + std::to_string(c.ns) + (c.repl ? " repl" : "");
        v.push_back(s);
      }
      return v;
    };
    r.op = [](const std::vector<Tensor>& in, const Sample& s) {
      return multinomial(in[0], s.ints[1], s.flag, seeded());
    };
    r.ref = [](const std::vector<Tensor>& in, const Sample& s) {
      const auto p = values(in[0]);
      const int64_t cats = in[0].size(-1), rows = in[0].dim() == 1 ? 1 : in[0].size(0);
      const int64_t ns = s.ints[1];
      std::vector<int64_t> v;
      for (int64_t r = 0; r < rows; ++r) {
        if (s.flag) {
          std::vector<double> cdf(cats);
          double sum = 0;
          for (int64_t j = 0; j < cats; ++j) cdf[j] = sum += p[r * cats + j].real();
          for (auto& c : cdf) c /= sum;
          for (int64_t k = 0; k < ns; ++k) {
            const double u = static_cast<double>(draw64(r * ns + k) >> 11) * 0x1p-53;
            int64_t j = 0;
            while (!(cdf[j] > u)) ++j;
            v.push_back(j);
          }
        } else {
          std::vector<std::pair<double, int64_t>> keys;
          for (int64_t j = 0; j < cats; ++j) {
            const double pj = p[r * cats + j].real();
            const double u = static_cast<double>(draw64(r * cats + j) >> 11) * 0x1p-53;
            const double e = u == 0 ? 0x1p-54 : -std::log(1.0 - u);
            keys.push_back(
                {pj > 0 ? std::log(e) - std::log(pj) : std::numeric_limits<double>::infinity(), j});
          }
          std::sort(keys.begin(), keys.end());
          for (int64_t k = 0; k < ns; ++k) v.push_back(keys[k].second);
        }
      }
      std::vector<int64_t> shape =
          in[0].dim() == 1 ? std::vector<int64_t>{ns} : std::vector<int64_t>{rows, ns};
      return from_vector(v, shape);
    };
    r.out_dtype = [](DType) { return DType::Int64; };
    auto err = [&r](std::string msg, std::function<void()> f) {
      r.errors.push_back({std::move(msg), std::move(f)});
    };
    err("[multinomial] expects a 1-D or 2-D tensor of probabilities, got shape [2, 2, 2]", [] {
      multinomial(ones({2, 2, 2}), 1);
    });
    err("[multinomial] expected a floating point tensor of probabilities",
        [] { multinomial(ones({3}, DType::Int64), 1); });
    err("[multinomial] cannot draw num_samples=0 <= 0 samples", [] { multinomial(ones({3}), 0); });
    err("[multinomial] cannot draw num_samples=4 > 3 categories without replacement",
        [] { multinomial(ones({3}), 4); });
    err("row 1 has a negative probability (-1)", [] {
      multinomial(tensor({{1.0, 1.0}, {1.0, -1.0}}), 1, true);
    });
    err("row 0 has a probability that is inf or NaN", [] {
      multinomial(tensor({1.0, std::numeric_limits<double>::infinity()}), 1, true);
    });
    err("row 0 has a probability that is inf or NaN", [] {
      multinomial(tensor({std::numeric_limits<double>::quiet_NaN(), 1.0}), 1, true);
    });
    err("the probabilities of row 1 sum to 0", [] {
      multinomial(tensor({{1.0, 2.0}, {0.0, 0.0}}), 1, true);
    });
    err("which has only 1 categories of nonzero probability", [] {
      multinomial(tensor({0.0, 3.0, 0.0}), 2, false);
    });
    rows.push_back(r);
  }
  return rows;
}

std::vector<OpRow> random_rows() {
  std::vector<OpRow> rows = float_sampler_rows();
  for (auto* part : {tensor_param_rows, integer_rows, permutation_rows})
    for (auto& r : part()) rows.push_back(std::move(r));
  return rows;
}

KILN_OP_ROWS(random_rows);

}  // namespace
}  // namespace kiln::testing
