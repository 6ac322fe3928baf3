// Elementwise ops: unary math, binary arithmetic and comparisons, ternary ops, C++ operators.
// Broadcasting and type promotion follow PyTorch; scalars promote like Python numbers.
// Every op `f` with an out= form has `f_out(out, ...)`: it writes into `out` (an empty `out` is
// resized; otherwise its shape must be the broadcast shape, and the result dtype must be
// castable to out's dtype) and returns it. In-place forms are Tensor methods `x.f_(...)`.
#pragma once

#include <optional>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

// ---- unary ----
// Integer and bool inputs of the floating functions (exp ... digamma, sigmoid, logit, angle)
// give the default float dtype. Complex inputs are accepted where PyTorch accepts them: abs
// (real result), sgn, exp, exp2, expm1, log*, sqrt, rsqrt, square, reciprocal, the trigonometric
// and hyperbolic functions and their inverses, sigmoid, silu, angle (real result), conj.
Tensor abs(const Tensor& x);  // |x|; complex -> real magnitude; not for bool (as PyTorch)
Tensor& abs_out(Tensor& out, const Tensor& x);
Tensor neg(const Tensor& x);  // -x (not for bool: use logical_not)
Tensor& neg_out(Tensor& out, const Tensor& x);
// -1, 0, 1 (bool stays bool). As PyTorch, sign(NaN) is 0. Complex: an error, use sgn.
Tensor sign(const Tensor& x);
Tensor& sign_out(Tensor& out, const Tensor& x);
Tensor sgn(const Tensor& x);  // complex: z / |z| (0 at 0); real: sign
Tensor& sgn_out(Tensor& out, const Tensor& x);
Tensor exp(const Tensor& x);
Tensor& exp_out(Tensor& out, const Tensor& x);
Tensor exp2(const Tensor& x);  // 2^x
Tensor& exp2_out(Tensor& out, const Tensor& x);
Tensor expm1(const Tensor& x);  // e^x - 1, accurate near 0
Tensor& expm1_out(Tensor& out, const Tensor& x);
Tensor log(const Tensor& x);
Tensor& log_out(Tensor& out, const Tensor& x);
Tensor log2(const Tensor& x);
Tensor& log2_out(Tensor& out, const Tensor& x);
Tensor log10(const Tensor& x);
Tensor& log10_out(Tensor& out, const Tensor& x);
Tensor log1p(const Tensor& x);  // log(1 + x), accurate near 0
Tensor& log1p_out(Tensor& out, const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor& sqrt_out(Tensor& out, const Tensor& x);
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor& rsqrt_out(Tensor& out, const Tensor& x);
Tensor square(const Tensor& x);  // x * x; bool gives int64 (as pow(x, 2))
Tensor& square_out(Tensor& out, const Tensor& x);
Tensor reciprocal(const Tensor& x);  // 1 / x
Tensor& reciprocal_out(Tensor& out, const Tensor& x);
Tensor sin(const Tensor& x);
Tensor& sin_out(Tensor& out, const Tensor& x);
Tensor cos(const Tensor& x);
Tensor& cos_out(Tensor& out, const Tensor& x);
Tensor tan(const Tensor& x);
Tensor& tan_out(Tensor& out, const Tensor& x);
Tensor asin(const Tensor& x);
Tensor& asin_out(Tensor& out, const Tensor& x);
Tensor acos(const Tensor& x);
Tensor& acos_out(Tensor& out, const Tensor& x);
Tensor atan(const Tensor& x);
Tensor& atan_out(Tensor& out, const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor& sinh_out(Tensor& out, const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor& cosh_out(Tensor& out, const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor& tanh_out(Tensor& out, const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor& asinh_out(Tensor& out, const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor& acosh_out(Tensor& out, const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor& atanh_out(Tensor& out, const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + e^-x)
Tensor& sigmoid_out(Tensor& out, const Tensor& x);
// log(x / (1 - x)); with eps, x is first clamped to [eps, 1 - eps].
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor& logit_out(Tensor& out, const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor erf(const Tensor& x);
Tensor& erf_out(Tensor& out, const Tensor& x);
Tensor erfc(const Tensor& x);  // 1 - erf(x), accurate in the tails
Tensor& erfc_out(Tensor& out, const Tensor& x);
Tensor erfinv(const Tensor& x);  // inverse of erf on (-1, 1); +-inf at +-1, NaN outside
Tensor& erfinv_out(Tensor& out, const Tensor& x);
Tensor lgamma(const Tensor& x);  // log |Gamma(x)|
Tensor& lgamma_out(Tensor& out, const Tensor& x);
Tensor digamma(const Tensor& x);  // Gamma'(x) / Gamma(x); NaN at negative integers, -+inf at +-0
Tensor& digamma_out(Tensor& out, const Tensor& x);
// Rounding (identity on integers; not for bool or complex). round: half to even.
Tensor floor(const Tensor& x);
Tensor& floor_out(Tensor& out, const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor& ceil_out(Tensor& out, const Tensor& x);
Tensor round(const Tensor& x);
Tensor& round_out(Tensor& out, const Tensor& x);
// Rounds to `decimals` decimal places (negative: to tens, hundreds, ...); floating only.
Tensor round(const Tensor& x, int64_t decimals);
Tensor& round_out(Tensor& out, const Tensor& x, int64_t decimals);
Tensor trunc(const Tensor& x);
Tensor& trunc_out(Tensor& out, const Tensor& x);
Tensor frac(const Tensor& x);  // x - trunc(x); floating only
Tensor& frac_out(Tensor& out, const Tensor& x);
// ---- activations ----
Tensor relu(const Tensor& x);  // max(x, 0), NaN kept; not for bool or complex
Tensor& relu_out(Tensor& out, const Tensor& x);
// x * Phi(x); approximate = "none" (erf form) or "tanh". Floating only.
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor& gelu_out(Tensor& out, const Tensor& x, std::string_view approximate = "none");
Tensor silu(const Tensor& x);  // x * sigmoid(x)
Tensor& silu_out(Tensor& out, const Tensor& x);
// log(1 + e^(beta x)) / beta, reverting to x where beta x > threshold. Floating only.
Tensor softplus(const Tensor& x, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor& softplus_out(Tensor& out, const Tensor& x, const Scalar& beta = 1,
                     const Scalar& threshold = 20);
// ---- predicates (bool results) ----
Tensor isnan(const Tensor& x);
Tensor& isnan_out(Tensor& out, const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor& isinf_out(Tensor& out, const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor& isfinite_out(Tensor& out, const Tensor& x);
Tensor isposinf(const Tensor& x);  // not for complex
Tensor& isposinf_out(Tensor& out, const Tensor& x);
Tensor isneginf(const Tensor& x);  // not for complex
Tensor& isneginf_out(Tensor& out, const Tensor& x);
Tensor logical_not(const Tensor& x);  // x == 0
Tensor& logical_not_out(Tensor& out, const Tensor& x);
// Replaces NaN by `nan`, +inf by `posinf` and -inf by `neginf` (defaults: 0 and the dtype's
// largest / lowest finite values). Complex: each part separately. Integers: a copy.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = 0.0,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor& nan_to_num_out(Tensor& out, const Tensor& x, std::optional<double> nan = 0.0,
                       std::optional<double> posinf = std::nullopt,
                       std::optional<double> neginf = std::nullopt);
Tensor bitwise_not(const Tensor& x);  // ~x; logical not for bool; integers and bool only
Tensor& bitwise_not_out(Tensor& out, const Tensor& x);
// ---- complex parts ----
// real/imag: views of the parts (real of a real tensor is the tensor itself; imag of a real
// tensor is an error), as PyTorch.
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
// Differs from PyTorch: kiln has no lazy conjugate bit, so conj() of a complex tensor returns a
// new tensor holding the conjugated values (what PyTorch's conj_physical does), never a view;
// writing to it does not change x. conj() of a real tensor returns x itself, as PyTorch.
Tensor conj(const Tensor& x);
Tensor conj_physical(const Tensor& x);
Tensor& conj_physical_out(Tensor& out, const Tensor& x);
Tensor angle(const Tensor& x);  // arg(z); real x: pi for x < 0, else 0 (NaN kept)
Tensor& angle_out(Tensor& out, const Tensor& x);
// abs * (cos(angle) + i sin(angle)); abs and angle: same dtype, float32 or float64.
Tensor polar(const Tensor& abs, const Tensor& angle);

// ---- binary arithmetic ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division (integers give floats)
Tensor div(const Tensor& a, const Scalar& b);
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b);
// rounding_mode "trunc" (toward zero) or "floor" (toward -inf); the dtype is the promoted one.
// Integer division by zero throws kiln::Error (ZeroDivisionError), as PyTorch on the CPU.
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode);
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode);
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, std::string_view rounding_mode);
Tensor true_divide(const Tensor& a, const Tensor& b);   // = div(a, b)
Tensor floor_divide(const Tensor& a, const Tensor& b);  // = div(a, b, "floor")
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor& floor_divide_out(Tensor& out, const Tensor& a, const Tensor& b);
// Python's %: the result has the sign of b. fmod: C's, the sign of a. Integer b == 0 throws.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor remainder(const Scalar& a, const Tensor& b);
Tensor& remainder_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor& fmod_out(Tensor& out, const Tensor& a, const Tensor& b);
// a^b in the promoted dtype. Integer tensors to negative integer scalar powers throw;
// integer tensor exponents that are negative give 0 (or +-1 for bases +-1), as PyTorch.
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor& pow_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor& pow_out(Tensor& out, const Tensor& a, const Scalar& b);
// pow in float64 (complex128 when an operand is complex), whatever the input dtypes.
Tensor float_power(const Tensor& a, const Tensor& b);
Tensor float_power(const Tensor& a, const Scalar& b);
Tensor float_power(const Scalar& a, const Tensor& b);
Tensor& float_power_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);  // angle of (b, a); integers give floats
Tensor& atan2_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);  // sqrt(a^2 + b^2) without overflow; floating
Tensor& hypot_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);  // |a| with b's sign; integers give floats
Tensor copysign(const Tensor& a, const Scalar& b);
Tensor& copysign_out(Tensor& out, const Tensor& a, const Tensor& b);
// ---- min / max ----
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN-propagating
Tensor& maximum_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);  // NaN-propagating
Tensor& minimum_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor fmax(const Tensor& a, const Tensor& b);  // NaN-ignoring (NaN only if both are)
Tensor& fmax_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);  // NaN-ignoring
Tensor& fmin_out(Tensor& out, const Tensor& a, const Tensor& b);
// ---- comparisons (bool results; lt/le/gt/ge reject complex) ----
#define KILN_DECLARE_COMPARISON(name)                                \
  Tensor name(const Tensor& a, const Tensor& b);                     \
  Tensor name(const Tensor& a, const Scalar& b);                     \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b); \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Scalar& b);
KILN_DECLARE_COMPARISON(eq)
KILN_DECLARE_COMPARISON(ne)
KILN_DECLARE_COMPARISON(lt)
KILN_DECLARE_COMPARISON(le)
KILN_DECLARE_COMPARISON(gt)
KILN_DECLARE_COMPARISON(ge)
#undef KILN_DECLARE_COMPARISON
// |a - b| <= atol + rtol * |b| elementwise (and a == b, so equal infinities are close); NaNs
// are close to each other only with equal_nan. a and b must have the same dtype.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
// Whether isclose holds everywhere (after broadcasting).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// Same shape and equal elements (NaN != NaN); dtypes must match.
bool equal(const Tensor& a, const Tensor& b);
// ---- logical (bool results; any dtype, nonzero is true) ----
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor& logical_and_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor& logical_or_out(Tensor& out, const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor& logical_xor_out(Tensor& out, const Tensor& a, const Tensor& b);
// ---- bitwise (integers and bool; shifts: integers only) ----
// Shift counts outside [0, bits) give 0 (left) or the sign fill (right), as PyTorch.
#define KILN_DECLARE_BITWISE(name)               \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, const Scalar& b); \
  Tensor name(const Scalar& a, const Tensor& b); \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b);
KILN_DECLARE_BITWISE(bitwise_and)
KILN_DECLARE_BITWISE(bitwise_or)
KILN_DECLARE_BITWISE(bitwise_xor)
KILN_DECLARE_BITWISE(bitwise_left_shift)
KILN_DECLARE_BITWISE(bitwise_right_shift)
#undef KILN_DECLARE_BITWISE

// ---- ternary ----
// cond ? a : b elementwise (broadcasting all three; a and b promote together). cond must be
// bool (uint8 is accepted, as PyTorch's deprecated form).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
Tensor& where_out(Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// min(max(x, min), max) with either bound optional (not both absent). Scalars take part in type
// promotion (int tensor, float bound -> float). NaN in x or a bound gives NaN; min > max gives
// max everywhere. Not for bool or complex.
Tensor clamp(const Tensor& x, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min,
             const std::optional<Tensor>& max = std::nullopt);
Tensor& clamp_out(Tensor& out, const Tensor& x, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max = std::nullopt);
Tensor& clamp_out(Tensor& out, const Tensor& x, const std::optional<Tensor>& min,
                  const std::optional<Tensor>& max = std::nullopt);
Tensor clip(const Tensor& x, const std::optional<Scalar>& min,
            const std::optional<Scalar>& max = std::nullopt);  // = clamp
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_min(const Tensor& x, const Tensor& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
Tensor clamp_max(const Tensor& x, const Tensor& max);
// start + weight * (end - start); start, end (and a tensor weight) must share one floating dtype.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor& lerp_out(Tensor& out, const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor& lerp_out(Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight);
// self + value * t1 * t2 / self + value * t1 / t2 (addcdiv: no integer inputs).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value = 1);

// ---- C++ operators ----
// Arithmetic as add/sub/mul/div/remainder (% is Python's remainder, not C's), with a scalar on
// either side. Comparisons are elementwise and return bool tensors: `a == b` is a tensor, not a
// bool; use kiln::equal(a, b) (or allclose) for one answer. ~ is bitwise_not, & | ^ << >> the
// bitwise ops (logical ones for bool tensors). && and || are not overloaded (they could not
// short-circuit); use logical_and / logical_or.
#define KILN_DECLARE_BINARY_OPERATOR(op)                \
  Tensor operator op(const Tensor& a, const Tensor& b); \
  Tensor operator op(const Tensor& a, const Scalar& b); \
  Tensor operator op(const Scalar& a, const Tensor& b);
KILN_DECLARE_BINARY_OPERATOR(+)
KILN_DECLARE_BINARY_OPERATOR(-)
KILN_DECLARE_BINARY_OPERATOR(*)
KILN_DECLARE_BINARY_OPERATOR(/)
KILN_DECLARE_BINARY_OPERATOR(%)
KILN_DECLARE_BINARY_OPERATOR(==)
KILN_DECLARE_BINARY_OPERATOR(!=)
KILN_DECLARE_BINARY_OPERATOR(<)
KILN_DECLARE_BINARY_OPERATOR(<=)
KILN_DECLARE_BINARY_OPERATOR(>)
KILN_DECLARE_BINARY_OPERATOR(>=)
KILN_DECLARE_BINARY_OPERATOR(&)
KILN_DECLARE_BINARY_OPERATOR(|)
KILN_DECLARE_BINARY_OPERATOR(^)
KILN_DECLARE_BINARY_OPERATOR(<<)
KILN_DECLARE_BINARY_OPERATOR(>>)
#undef KILN_DECLARE_BINARY_OPERATOR
Tensor operator-(const Tensor& a);  // neg
Tensor operator~(const Tensor& a);  // bitwise_not

}  // namespace kiln
