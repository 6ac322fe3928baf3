// Front ends of the random family: rand, randn, randint, *_like, normal, bernoulli, multinomial,
// randperm and the in-place samplers (uniform_, normal_, ...). Argument checks, the generator's
// counter reservation and output allocation live here (Note [Random op contract]).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/meta.h"
#include "backend/gpu/graph_rng.h"
#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/random.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace {

// Note [Random compute precision]: float32, float16 and bfloat16 outputs are computed in float
// from one 32-bit word per element; every other dtype in double from one 64-bit draw (two
// words). Integer samplers (random_, randint) use rng_int_words(range) words instead.
DType compute_for(DType out) {
  return (out == DType::Float32 || out == DType::Float16 || out == DType::BFloat16)
             ? DType::Float32
             : DType::Float64;
}
uint32_t float_words(DType compute) { return compute == DType::Float32 ? 1u : 2u; }

const char* dev_type_name(DeviceType t) { return t == DeviceType::CPU ? "cpu" : "cuda"; }

Generator generator_for(const std::optional<Generator>& g, Device d, const char* op) {
  if (!g) return default_generator(d);
  KILN_CHECK(g->device().type == d.type, "[", op, "] expected a '", dev_type_name(d.type),
             "' generator for a tensor on ", d.str(), ", but got one on ", g->device().str());
  return *g;
}

void check_defined(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined(), "[", op, "] got an undefined tensor");
}

void check_writable(const Tensor& t, const char* op) {
  check_defined(t, op);
  for (int64_t d = 0; d < t.dim(); ++d)
    KILN_CHECK(t.size(d) <= 1 || t.stride(d) != 0, "[", op,
               "] unsupported operation: more than one element of the written-to tensor refers "
               "to a single memory location");
}

void check_size(IntArrayRef size, const char* op) {
  for (int64_t s : size) KILN_CHECK(s >= 0, "[", op, "] negative dimension ", s, " in size ", size);
}

bool is_real_float(DType d) { return is_floating_point(d) && !is_float8(d); }

void check_float(DType d, const char* op, const char* what) {
  KILN_CHECK(is_real_float(d), "[", op, "] expected a floating point ", what,
             " (float16, bfloat16, float32 or float64), got ", dtype_name(d));
}

// Reserves the call's counters on the generator and runs c writing `target` (Note [Random op
// contract]). Every check must come before: a failed call leaves the generator untouched.
void run_random(OpCall& c, const Tensor& target, uint64_t counters,
                const std::optional<Generator>& g) {
  Generator gen = generator_for(g, target.device(), op_name(c.op));
  const PhiloxSeedOffset so = gen.reserve(counters);
  c.attrs.i0 = static_cast<int64_t>(so.seed);
  c.attrs.i1 = static_cast<int64_t>(so.offset);
  if (target.is_cuda()) {
    // Captured into a GPU graph: the kernel reads (seed, offset) at replay time from the graph's
    // state tensor, appended as the last input (Note [Graph-safe random numbers]).
    gpu::CapturedRng cap = gpu::capture_rng(gen, so, target.device().index);
    if (cap.state.defined()) {
      c.in.push_back(cap.state);
      c.attrs.i1 = static_cast<int64_t>(cap.offset);
    }
  }
  c.out.clear();
  c.out.push_back(target);
  c.provided_out = c.inplace = true;
  detail::run(c);
}

// A float tensor viewing a complex one as [..., 2] (real, imaginary), as view_as_real.
Tensor real_pairs(const Tensor& t) {
  DimVector sz(t.sizes()), st(t.strides());
  for (auto& s : st) s *= 2;
  sz.push_back(2);
  st.push_back(1);
  auto impl =
      detail::Ref<detail::TensorImpl>::make(t.impl()->storage(), to_real(t.dtype()), t.device());
  impl->set_sizes_and_strides(sz, st, t.storage_offset() * 2);
  return Tensor(std::move(impl));
}

// Fills self with the floating sampler `id` whose parameters are s0 and s1.
Tensor& sample_into(Tensor& self, OpId id, const Scalar& s0, const Scalar& s1,
                    const std::optional<Generator>& g) {
  OpCall c(id);
  c.attrs.s0 = s0;
  c.attrs.s1 = s1;
  c.attrs.has_s0 = c.attrs.has_s1 = true;
  c.compute = compute_for(self.dtype());
  run_random(c, self, philox_counters(static_cast<uint64_t>(self.numel()), float_words(c.compute)),
             g);
  return self;
}

// The largest finite value of a floating dtype.
double float_max(DType d) {
  switch (d) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.38953138925153547590e+38;
    case DType::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// Integers every value of which a dtype holds exactly: [lowest, highest] (random_, randint,
// randperm). Floats: +-2^digits.
int64_t int_lowest(DType d) {
  switch (d) {
    case DType::Bool:
    case DType::UInt8:
      return 0;
    case DType::Int8:
      return -128;
    case DType::Int16:
      return -32768;
    case DType::Int32:
      return std::numeric_limits<int32_t>::min();
    case DType::Int64:
      return std::numeric_limits<int64_t>::min();
    case DType::Float16:
      return -(int64_t{1} << 11);
    case DType::BFloat16:
      return -(int64_t{1} << 8);
    case DType::Float32:
      return -(int64_t{1} << 24);
    default:
      return -(int64_t{1} << 53);
  }
}
int64_t int_highest(DType d) {
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
      return std::numeric_limits<int32_t>::max();
    case DType::Int64:
      return std::numeric_limits<int64_t>::max();
    default:
      return -int_lowest(d);
  }
}

void check_int_dtype(DType d, const char* op) {
  KILN_CHECK(d == DType::Bool || is_integral(d) || is_real_float(d), "[", op,
             "] not implemented for dtype ", dtype_name(d));
}

// Uniform integers in [from, to_inclusive] into self (checked against self's dtype).
Tensor& random_between(Tensor& self, int64_t from, int64_t to_inclusive,
                       const std::optional<Generator>& g, const char* op) {
  const DType d = self.dtype();
  KILN_CHECK(from >= int_lowest(d) && from <= int_highest(d), "[", op, "] from=", from,
             " is out of bounds for dtype ", dtype_name(d));
  KILN_CHECK(to_inclusive >= int_lowest(d) && to_inclusive <= int_highest(d), "[", op,
             "] to - 1=", to_inclusive, " is out of bounds for dtype ", dtype_name(d));
  const uint64_t range = static_cast<uint64_t>(to_inclusive) - static_cast<uint64_t>(from) + 1u;
  OpCall c(OpId::RandomInt);
  c.attrs.s0 = from;
  c.attrs.has_s0 = true;
  c.attrs.ints.push_back(static_cast<int64_t>(range));
  c.compute = DType::Int64;
  run_random(c, self, philox_counters(static_cast<uint64_t>(self.numel()), rng_int_words(range)),
             g);
  return self;
}

Tensor& finish(Tensor& t, const TensorOptions& o, const char* op) {
  if (o.requires_grad_) {
    KILN_CHECK(is_floating_point(t.dtype()) || is_complex(t.dtype()), "[", op,
               "] only tensors of floating point and complex dtype can require gradients, got ",
               dtype_name(t.dtype()));
    detail::set_requires_grad(t, true);
  }
  return t;
}

// The elements of a tensor as doubles in row-major order, for value checks of CPU arguments;
// empty for tensors without data here (other devices, graph capture): their checks are skipped.
bool host_values(const Tensor& t, std::vector<double>& v) {
  if (!t.is_cpu() || !t.impl()->has_storage()) return false;
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  v.assign(p, p + c.numel());
  return true;
}

Tensor shaped_empty(IntArrayRef size, DType dtype, const TensorOptions& o) {
  return detail::empty_impl(size, dtype, o.device_);
}

}  // namespace

// ---- in-place samplers -----------------------------------------------------------------------

Tensor& Tensor::uniform_(double from, double to, std::optional<Generator> generator) {
  check_writable(*this, "uniform_");
  if (is_complex()) {
    Tensor r = real_pairs(*this);
    r.uniform_(from, to, generator);
    impl()->bump_version();
    return *this;
  }
  check_float(dtype(), "uniform_", "tensor");
  KILN_CHECK(std::isfinite(from) && std::isfinite(to),
             "[uniform_] expects from and to to be finite, got from=", from, " and to=", to);
  KILN_CHECK(from <= to, "[uniform_] expects a [from, to) range, but got from=", from,
             " > to=", to);
  const double m = float_max(dtype());
  KILN_CHECK(std::abs(from) <= m && std::abs(to) <= m && to - from <= m, "[uniform_] from=", from,
             " and to=", to, " are out of the range of dtype ", dtype_name(dtype()));
  return sample_into(*this, OpId::Uniform, from, to, generator);
}

Tensor& Tensor::normal_(double mean, double std, std::optional<Generator> generator) {
  check_writable(*this, "normal_");
  KILN_CHECK(std >= 0.0, "[normal_] expects std >= 0.0, but got std=", std);
  if (is_complex()) {
    Tensor r = real_pairs(*this);
    r.normal_(mean, std / std::sqrt(2.0), generator);
    impl()->bump_version();
    return *this;
  }
  check_float(dtype(), "normal_", "tensor");
  return sample_into(*this, OpId::Normal, mean, std, generator);
}

Tensor& Tensor::log_normal_(double mean, double std, std::optional<Generator> generator) {
  check_writable(*this, "log_normal_");
  check_float(dtype(), "log_normal_", "tensor");
  KILN_CHECK(std > 0.0, "[log_normal_] expects std > 0.0, but got std=", std);
  return sample_into(*this, OpId::LogNormal, mean, std, generator);
}

Tensor& Tensor::exponential_(double lambd, std::optional<Generator> generator) {
  check_writable(*this, "exponential_");
  check_float(dtype(), "exponential_", "tensor");
  KILN_CHECK(lambd > 0.0, "[exponential_] expects lambda > 0.0, but got lambda=", lambd);
  return sample_into(*this, OpId::Exponential, lambd, 0, generator);
}

Tensor& Tensor::geometric_(double p, std::optional<Generator> generator) {
  check_writable(*this, "geometric_");
  KILN_CHECK(is_integral(dtype()) || is_real_float(dtype()),
             "[geometric_] not implemented for dtype ", dtype_name(dtype()));
  KILN_CHECK(p > 0.0 && p < 1.0, "[geometric_] expects p to be in (0, 1), but got p=", p);
  return sample_into(*this, OpId::Geometric, p, 0, generator);
}

Tensor& Tensor::cauchy_(double median, double sigma, std::optional<Generator> generator) {
  check_writable(*this, "cauchy_");
  check_float(dtype(), "cauchy_", "tensor");
  KILN_CHECK(std::isfinite(median) && std::isfinite(sigma) && sigma > 0.0,
             "[cauchy_] expects a finite median and a finite sigma > 0.0, but got median=", median,
             " and sigma=", sigma);
  return sample_into(*this, OpId::Cauchy, median, sigma, generator);
}

Tensor& Tensor::bernoulli_(double p, std::optional<Generator> generator) {
  check_writable(*this, "bernoulli_");
  KILN_CHECK(dtype() == DType::Bool || is_integral(dtype()) || is_real_float(dtype()),
             "[bernoulli_] not implemented for dtype ", dtype_name(dtype()));
  KILN_CHECK(p >= 0.0 && p <= 1.0, "[bernoulli_] expects p to be in [0, 1], but got p=", p);
  return sample_into(*this, OpId::Bernoulli, p, 0, generator);
}

namespace {
// bernoulli with a tensor of probabilities expanded to `out`'s shape (out written in place).
Tensor& bernoulli_tensor(Tensor& out, const Tensor& p, const std::optional<Generator>& g,
                         const char* op) {
  check_defined(p, op);
  check_float(p.dtype(), op, "tensor of probabilities");
  KILN_CHECK(p.device() == out.device(), "[", op, "] expected p on ", out.device().str(),
             ", but it is on ", p.device().str());
  bool ok = p.dim() <= out.dim();
  for (int64_t i = 0; ok && i < p.dim(); ++i) {
    const int64_t s = p.size(p.dim() - 1 - i);
    ok = s == 1 || s == out.size(out.dim() - 1 - i);
  }
  KILN_CHECK(ok, "[", op, "] p of shape ", p.sizes(), " cannot be broadcast to shape ",
             out.sizes());
  std::vector<double> v;
  if (host_values(p, v))
    for (double x : v)
      KILN_CHECK(x >= 0.0 && x <= 1.0, "[", op,
                 "] expects all probabilities to be in [0, 1], but found ", x);
  OpCall c(OpId::BernoulliTensor);
  c.compute = compute_for(out.dtype());
  c.in.push_back(p.to(c.compute).expand(out.sizes()));
  run_random(c, out, philox_counters(static_cast<uint64_t>(out.numel()), float_words(c.compute)),
             g);
  return out;
}
}  // namespace

Tensor& Tensor::bernoulli_(const Tensor& p, std::optional<Generator> generator) {
  check_writable(*this, "bernoulli_");
  KILN_CHECK(dtype() == DType::Bool || is_integral(dtype()) || is_real_float(dtype()),
             "[bernoulli_] not implemented for dtype ", dtype_name(dtype()));
  return bernoulli_tensor(*this, p, generator, "bernoulli_");
}

Tensor Tensor::bernoulli(std::optional<Generator> generator) const {
  check_defined(*this, "bernoulli");
  check_float(dtype(), "bernoulli", "tensor of probabilities");
  Tensor out = detail::empty_impl(sizes(), dtype(), device());
  return bernoulli_tensor(out, *this, generator, "bernoulli");
}

Tensor Tensor::bernoulli(double p, std::optional<Generator> generator) const {
  check_defined(*this, "bernoulli");
  Tensor out = detail::empty_impl(sizes(), dtype(), device());
  return out.bernoulli_(p, generator);
}

Tensor& Tensor::random_(std::optional<Generator> generator) {
  check_writable(*this, "random_");
  check_int_dtype(dtype(), "random_");
  return random_between(*this, 0, int_highest(dtype()), generator, "random_");
}

Tensor& Tensor::random_(int64_t to, std::optional<Generator> generator) {
  return random_(0, to, generator);
}

Tensor& Tensor::random_(int64_t from, std::optional<int64_t> to,
                        std::optional<Generator> generator) {
  check_writable(*this, "random_");
  check_int_dtype(dtype(), "random_");
  if (!to) return random_between(*this, from, int_highest(dtype()), generator, "random_");
  KILN_CHECK(from < *to, "[random_] expects 'from' to be less than 'to', but got from=", from,
             " >= to=", *to);
  return random_between(*this, from, *to - 1, generator, "random_");
}

// ---- factories ------------------------------------------------------------------------------

Tensor rand(IntArrayRef size, const TensorOptions& options) {
  return rand(size, std::nullopt, options);
}

Tensor rand(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
  check_size(size, "rand");
  const DType d = options.dtype_or_default();
  KILN_CHECK(is_real_float(d) || is_complex(d),
             "[rand] expected a floating point or complex dtype, got ", dtype_name(d));
  Tensor t = shaped_empty(size, d, options);
  t.uniform_(0, 1, generator);
  return finish(t, options, "rand");
}

Tensor randn(IntArrayRef size, const TensorOptions& options) {
  return randn(size, std::nullopt, options);
}

Tensor randn(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
  check_size(size, "randn");
  const DType d = options.dtype_or_default();
  KILN_CHECK(is_real_float(d) || is_complex(d),
             "[randn] expected a floating point or complex dtype, got ", dtype_name(d));
  Tensor t = shaped_empty(size, d, options);
  t.normal_(0, 1, generator);
  return finish(t, options, "randn");
}

Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options) {
  return randint(0, high, size, std::nullopt, options);
}
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options) {
  return randint(0, high, size, generator, options);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options) {
  return randint(low, high, size, std::nullopt, options);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options) {
  check_size(size, "randint");
  const DType d = options.dtype_.value_or(DType::Int64);
  check_int_dtype(d, "randint");
  KILN_CHECK(low < high, "[randint] expects 'low' to be less than 'high', but got low=", low,
             " >= high=", high);
  Tensor t = shaped_empty(size, d, options);
  random_between(t, low, high - 1, generator, "randint");
  return finish(t, options, "randint");
}

namespace {
TensorOptions like_options(const Tensor& t, const TensorOptions& o) {
  return o.dtype(o.dtype_.value_or(t.dtype()))
      .device(o.device_.is_cpu() && !t.is_cpu() ? t.device() : o.device_);
}
}  // namespace

Tensor rand_like(const Tensor& t, const TensorOptions& options) {
  check_defined(t, "rand_like");
  return rand(t.sizes(), like_options(t, options));
}
Tensor randn_like(const Tensor& t, const TensorOptions& options) {
  check_defined(t, "randn_like");
  return randn(t.sizes(), like_options(t, options));
}
Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& options) {
  return randint_like(t, 0, high, options);
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options) {
  check_defined(t, "randint_like");
  return randint(low, high, t.sizes(), like_options(t, options));
}

// ---- normal with tensor arguments -----------------------------------------------------------

namespace {
Tensor normal_tensors(const Tensor& mean, const Tensor& std, DType out_dtype,
                      const std::optional<Generator>& g) {
  KILN_CHECK(mean.device() == std.device(),
             "[normal] expected mean and std on the same device, got ", mean.device().str(),
             " and ", std.device().str());
  const DimVector shape = detail::broadcast_shapes("normal", mean.sizes(), std.sizes());
  std::vector<double> v;
  if (host_values(std, v))
    for (double x : v)
      KILN_CHECK(x >= 0.0, "[normal] expects all elements of std >= 0.0, but found ", x);
  Tensor out = detail::empty_impl(shape, out_dtype, mean.device());
  OpCall c(OpId::NormalTensor);
  c.compute = compute_for(out_dtype);
  c.in.push_back(mean.to(c.compute).expand(shape));
  c.in.push_back(std.to(c.compute).expand(shape));
  run_random(c, out, philox_counters(static_cast<uint64_t>(out.numel()), float_words(c.compute)),
             g);
  return out;
}

// A 0-dim tensor of `v` on `device`.
Tensor scalar_tensor(double v, DType dtype, Device device) {
  return full({}, v, TensorOptions(dtype).device(device));
}
}  // namespace

Tensor normal(const Tensor& mean, const Tensor& std, std::optional<Generator> generator) {
  check_defined(mean, "normal");
  check_defined(std, "normal");
  check_float(mean.dtype(), "normal", "mean");
  check_float(std.dtype(), "normal", "std");
  return normal_tensors(mean, std, mean.dtype(), generator);
}

Tensor normal(const Tensor& mean, double std, std::optional<Generator> generator) {
  check_defined(mean, "normal");
  check_float(mean.dtype(), "normal", "mean");
  KILN_CHECK(std >= 0.0, "[normal] expects std >= 0.0, but got std=", std);
  return normal_tensors(mean, scalar_tensor(std, DType::Float64, mean.device()), mean.dtype(),
                        generator);
}

Tensor normal(double mean, const Tensor& std, std::optional<Generator> generator) {
  check_defined(std, "normal");
  check_float(std.dtype(), "normal", "std");
  return normal_tensors(scalar_tensor(mean, DType::Float64, std.device()), std, std.dtype(),
                        generator);
}

Tensor normal(double mean, double std, IntArrayRef size, std::optional<Generator> generator,
              const TensorOptions& options) {
  check_size(size, "normal");
  const DType d = options.dtype_or_default();
  check_float(d, "normal", "dtype");
  KILN_CHECK(std >= 0.0, "[normal] expects std >= 0.0, but got std=", std);
  Tensor t = shaped_empty(size, d, options);
  t.normal_(mean, std, generator);
  return finish(t, options, "normal");
}

Tensor bernoulli(const Tensor& p, std::optional<Generator> generator) {
  return p.bernoulli(generator);
}
Tensor bernoulli(const Tensor& self, double p, std::optional<Generator> generator) {
  return self.bernoulli(p, generator);
}

// ---- randperm -------------------------------------------------------------------------------

Tensor randperm(int64_t n, const TensorOptions& options) {
  return randperm(n, std::nullopt, options);
}

Tensor randperm(int64_t n, std::optional<Generator> generator, const TensorOptions& options) {
  KILN_CHECK(n >= 0, "[randperm] n must be non-negative, got n=", n);
  const DType d = options.dtype_.value_or(DType::Int64);
  KILN_CHECK(is_integral(d) || is_real_float(d), "[randperm] not implemented for dtype ",
             dtype_name(d));
  KILN_CHECK(n == 0 || n - 1 <= int_highest(d), "[randperm] n=", n,
             " is too large for result dtype ", dtype_name(d));
  Tensor t = shaped_empty({n}, d, options);
  OpCall c(OpId::Randperm);
  c.compute = DType::Float64;
  run_random(c, t, philox_counters(static_cast<uint64_t>(n), 2), generator);
  return finish(t, options, "randperm");
}

// ---- multinomial ----------------------------------------------------------------------------

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement,
                   std::optional<Generator> generator) {
  check_defined(self, "multinomial");
  KILN_CHECK(self.dim() == 1 || self.dim() == 2,
             "[multinomial] expects a 1-D or 2-D tensor of probabilities, got shape ",
             self.sizes());
  check_float(self.dtype(), "multinomial", "tensor of probabilities");
  KILN_CHECK(num_samples > 0, "[multinomial] cannot draw num_samples=", num_samples,
             " <= 0 samples");
  const Tensor p2 = self.dim() == 1 ? self.unsqueeze(0) : self;
  const int64_t rows = p2.size(0), cats = p2.size(1);
  KILN_CHECK(replacement || num_samples <= cats,
             "[multinomial] cannot draw num_samples=", num_samples, " > ", cats,
             " categories without replacement");
  std::vector<double> v;
  if (host_values(p2, v)) {
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      int64_t positive = 0;
      for (int64_t j = 0; j < cats; ++j) {
        const double x = v[r * cats + j];
        KILN_CHECK(std::isfinite(x), "[multinomial] invalid distribution: row ", r,
                   " has a probability that is inf or NaN (", x, ")");
        KILN_CHECK(x >= 0.0, "[multinomial] invalid distribution: row ", r,
                   " has a negative probability (", x, ")");
        sum += x;
        positive += x > 0.0;
      }
      KILN_CHECK(sum > 0.0, "[multinomial] invalid distribution: the probabilities of row ", r,
                 " sum to 0");
      KILN_CHECK(std::isfinite(sum),
                 "[multinomial] invalid distribution: the probabilities of row ", r, " sum to inf");
      KILN_CHECK(replacement || positive >= num_samples, "[multinomial] cannot draw ", num_samples,
                 " samples without replacement from row ", r, ", which has only ", positive,
                 " categories of nonzero probability");
    }
  }
  Tensor out = detail::empty_impl({rows, num_samples}, DType::Int64, self.device());
  OpCall c(OpId::Multinomial);
  c.in.push_back(p2);
  c.attrs.flag = replacement;
  c.compute = DType::Float64;
  const uint64_t draws =
      static_cast<uint64_t>(rows) * static_cast<uint64_t>(replacement ? num_samples : cats);
  run_random(c, out, philox_counters(draws, 2), generator);
  return self.dim() == 1 ? out.squeeze(0) : out;
}

Tensor Tensor::multinomial(int64_t num_samples, bool replacement,
                           std::optional<Generator> generator) const {
  return kiln::multinomial(*this, num_samples, replacement, generator);
}

}  // namespace kiln
