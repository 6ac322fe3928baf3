// kiln::nn::functional::interpolate: nearest / nearest-exact / (bi,tri)linear / bicubic / area
// resizing (and antialiased bilinear / bicubic) as separable per-dim interpolation matrices
// applied with matmul.
#include <cmath>

#include "kiln/nn/functional/conv.h"
#include "kiln/ops.h"

namespace kiln::nn::functional {

namespace {

// Note [interpolation matrices]: every mode but "area" computes each output coordinate from the
// input along each dim independently (PyTorch's upsample kernels are separable, bicubic
// included: its 4x4 taps are the outer product of 1-D cubic weights with clamped indices), so
// resizing dim d is x @ M_d^T with M_d [out, in] built here in double. The cost is
// O(in * out) per dim, small next to the data for image-sized inputs.

// PyTorch's source-coordinate scale for one dim.
double coord_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0;
  if (scale && *scale > 0) return 1.0 / *scale;
  return static_cast<double>(in) / out;
}

// cubic convolution weights (a = -0.75) for the offsets -1, 0, 1, 2 of fractional t.
void cubic_weights(double t, double w[4]) {
  const double a = -0.75;
  auto near = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1), w[1] = near(t), w[2] = near(1 - t), w[3] = far(2 - t);
}

std::vector<double> interp_matrix(int64_t in, int64_t out, std::string_view mode,
                                  bool align_corners, std::optional<double> scale) {
  std::vector<double> m(out * in, 0.0);
  const double s = coord_scale(in, out, align_corners, scale);
  for (int64_t o = 0; o < out; ++o) {
    double* row = m.data() + o * in;
    if (mode == "nearest" || mode == "nearest-exact") {
      const double src = mode == "nearest" ? std::floor(o * s) : std::floor((o + 0.5) * s);
      row[std::min<int64_t>(static_cast<int64_t>(src), in - 1)] = 1;
    } else if (mode == "bicubic") {
      const double src = align_corners ? o * s : s * (o + 0.5) - 0.5;
      const double f = std::floor(src);
      double w[4];
      cubic_weights(src - f, w);
      for (int k = 0; k < 4; ++k) {
        const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(f) - 1 + k, 0, in - 1);
        row[i] += w[k];
      }
    } else {  // linear
      double src = align_corners ? o * s : s * (o + 0.5) - 0.5;
      if (src < 0) src = 0;
      const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
      const int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
      const double l = src - i0;
      row[i0] += 1 - l;
      row[i1] += l;
    }
  }
  return m;
}

// Note [antialiased interpolation]: PyTorch's antialias=True path (bilinear and bicubic, 4-D)
// widens the filter by the downsampling factor: output i is centred at scale * (i + 0.5) of the
// input, takes the inputs within support = (taps / 2) * max(scale, 1) of the centre, weighs
// each by the filter (triangle, or cubic with a = -0.5) at distance / max(scale, 1), and
// normalizes the weights to sum 1 (so borders renormalize instead of clamping).
double aa_filter(std::string_view mode, double x) {
  x = std::abs(x);
  if (mode == "bilinear") return std::max(0.0, 1.0 - x);
  const double a = -0.5;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

std::vector<double> aa_matrix(int64_t in, int64_t out, std::string_view mode, bool align_corners,
                              std::optional<double> scale) {
  std::vector<double> m(out * in, 0.0);
  const double s = coord_scale(in, out, align_corners, scale);
  const double taps = mode == "bilinear" ? 2.0 : 4.0;
  const double support = s >= 1.0 ? taps * 0.5 * s : taps * 0.5;
  const double inv = s >= 1.0 ? 1.0 / s : 1.0;
  for (int64_t o = 0; o < out; ++o) {
    const double center = s * (o + 0.5);
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    double* row = m.data() + o * in;
    double total = 0;
    for (int64_t j = lo; j < hi; ++j) total += row[j] = aa_filter(mode, (j - center + 0.5) * inv);
    if (total != 0)
      for (int64_t j = lo; j < hi; ++j) row[j] /= total;
  }
  return m;
}

}  // namespace

Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
                   bool antialias) {
  const char* op = "interpolate";
  KILN_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  KILN_CHECK(input.dim() >= 3 && input.dim() <= 5, "[", op,
             "] expected 3-D, 4-D or 5-D input ([N, C, *spatial]), but got ", input.dim(), "-D");
  const int64_t nd = input.dim() - 2;
  const bool interp =
      mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
  KILN_CHECK(interp || mode == "nearest" || mode == "nearest-exact" || mode == "area", "[", op,
             "] unknown mode '", mode, "'");
  KILN_CHECK(!align_corners || interp, "[", op,
             "] align_corners option can only be set with the interpolating modes: linear | "
             "bilinear | bicubic | trilinear");
  KILN_CHECK((mode != "linear" || nd == 1) && (mode != "bilinear" || nd == 2) &&
                 (mode != "bicubic" || nd == 2) && (mode != "trilinear" || nd == 3),
             "[", op, "] mode '", mode, "' does not support ", input.dim(), "-D input");
  KILN_CHECK(!antialias || ((mode == "bilinear" || mode == "bicubic") && nd == 2), "[", op,
             "] Anti-alias option is only supported for bilinear and bicubic modes");
  KILN_CHECK(size.has_value() != scale_factor.has_value(), "[", op,
             "] only one of size or scale_factor should be defined");
  KILN_CHECK(input.is_floating_point(), "[", op, "] expected a floating point input, but got ",
             dtype_name(input.dtype()));
  std::vector<int64_t> out(nd);
  std::vector<std::optional<double>> scales(nd);
  if (size) {
    KILN_CHECK(size->size() == 1 || static_cast<int64_t>(size->size()) == nd, "[", op,
               "] size shape must match input shape. Input is ", nd, "D, size is ", size->size());
    for (int64_t d = 0; d < nd; ++d) out[d] = (*size)[size->size() == 1 ? 0 : d];
  } else {
    KILN_CHECK(scale_factor->size() == 1 || static_cast<int64_t>(scale_factor->size()) == nd, "[",
               op, "] scale_factor shape must match input shape. Input is ", nd,
               "D, scale_factor is ", scale_factor->size());
    for (int64_t d = 0; d < nd; ++d) {
      const double sf = (*scale_factor)[scale_factor->size() == 1 ? 0 : d];
      KILN_CHECK(sf > 0, "[", op, "] scale_factor must be positive, but got ", sf);
      out[d] = static_cast<int64_t>(std::floor(input.size(2 + d) * sf));
      if (!recompute_scale_factor.value_or(false)) scales[d] = sf;
    }
  }
  for (int64_t d = 0; d < nd; ++d)
    KILN_CHECK(out[d] > 0 && input.size(2 + d) > 0, "[", op,
               "] input and output sizes should be greater than 0, but got input ", input.sizes(),
               " and output size ", IntArrayRef(out));
  if (mode == "area") {
    KILN_CHECK(nd <= 2, "[", op, "] mode 'area' supports 3-D and 4-D input only");
    return nd == 1 ? adaptive_avg_pool1d(input, out) : adaptive_avg_pool2d(input, out);
  }
  Tensor y = input;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t in = input.size(2 + d);
    std::vector<double> m =
        antialias ? aa_matrix(in, out[d], mode, align_corners.value_or(false), scales[d])
                  : interp_matrix(in, out[d], mode, align_corners.value_or(false), scales[d]);
    Tensor mt = from_vector(m, {out[d], in}).to(input.dtype()).to(input.device());
    // Move dim 2+d last, contract with M^T, move back.
    y = kiln::matmul(y.movedim(2 + d, -1), mt.t()).movedim(-1, 2 + d);
  }
  return y.contiguous();
}

}  // namespace kiln::nn::functional
