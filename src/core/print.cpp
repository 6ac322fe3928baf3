// Tensor printing: Tensor::str(), operator<<, and the print options (kiln/print.h). The text is
// PyTorch's (torch/_tensor_str.py, 2.x rules), with `kiln.` where PyTorch writes `torch.`.
#include "kiln/print.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "autograd/meta.h"
#include "kernels/convert.h"
#include "kiln/tensor.h"

namespace kiln {

// Note [Printing like PyTorch]
// PyTorch users read kiln output next to PyTorch output, so the layout follows torch's rules
// to the character:
// - One formatter per tensor (two for complex: real and imaginary parts) decides the width of
//   every element from the elements that will be shown (after summarization). Floating
//   formatters look only at finite non-zero values: all integral -> "int mode" ("3."), else
//   fixed "%.{precision}f"; scientific "%.{precision}e" when max/min > 1000, max > 1e8 or
//   min < 1e-4 (absolute values), unless sci_mode forces a choice. nan/inf/0 are then padded to
//   that width.
// - Above `threshold` elements, every dim longer than 2*edgeitems shows edgeitems at each end
//   with "..." between them.
// - Vectors wrap at `linewidth` with a fixed number of elements per line; deeper dims join
//   their slices with ",", dim-1 newlines and one more space of indent per level.
// - Suffixes (device, size, dtype, requires_grad) follow `tensor(...`, wrapping when the last
//   line would pass linewidth. dtype is omitted for the default float dtype, its complex
//   counterpart, int64 and bool (and for empty tensors only the default float dtype).

namespace {

std::mutex g_opts_mutex;
PrintOptions g_opts;

// Python's "{:.Nf}" / "{:.Ne}" / "{:.0f}" for a double: printf, except that nan prints as
// "nan" whatever its sign bit.
std::string format_double(double v, int precision, char conv) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char fmt[8] = {'%', '.', '*', conv, '\0'};
  char buf[64];
  int n = std::snprintf(buf, sizeof(buf), fmt, precision, v);
  if (n >= 0 && n < static_cast<int>(sizeof(buf))) return std::string(buf, n);
  std::string s(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(s.data(), s.size(), fmt, precision, v);
  s.resize(static_cast<size_t>(n));
  return s;
}

std::string pad_left(std::string s, int64_t width) {
  if (static_cast<int64_t>(s.size()) < width)
    s.insert(0, static_cast<size_t>(width) - s.size(), ' ');
  return s;
}

// Element kinds as printed: real floating (double), complex (two doubles), integer, bool.
enum class Kind { Real, Complex, Int, Bool };

Kind kind_of(DType t) {
  if (t == DType::Bool) return Kind::Bool;
  if (is_complex(t)) return Kind::Complex;
  if (is_floating_point(t)) return Kind::Real;
  return Kind::Int;
}

struct Element {
  double re = 0, im = 0;
  int64_t i = 0;
  bool b = false;
};

template <class T>
Element read_as(const char* p) {
  Element e;
  const T v = *reinterpret_cast<const T*>(p);
  if constexpr (detail::is_complex_v<T>) {
    const auto z = detail::convert<complex<double>>(v);
    e.re = z.real();
    e.im = z.imag();
  } else if constexpr (std::is_same_v<T, bool>) {
    e.b = v;
  } else if constexpr (std::is_integral_v<T>) {
    e.i = static_cast<int64_t>(v);
  } else {
    e.re = detail::convert<double>(v);
  }
  return e;
}

Element read_element(const char* p, DType t) {
  switch (t) {
#define KILN_PRINT_READ(T, E, N) \
  case DType::E:                 \
    return read_as<T>(p);
    KILN_FORALL_DTYPES(KILN_PRINT_READ)
#undef KILN_PRINT_READ
  }
  return Element();
}

// torch._tensor_str._Formatter for one stream of values.
class Formatter {
 public:
  // Floating formatter over the values that will be shown.
  Formatter(const std::vector<double>& values, const PrintOptions& o) : precision_(o.precision) {
    double mn = std::numeric_limits<double>::infinity(), mx = 0;
    bool any = false;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      any = true;
      mn = std::min(mn, std::fabs(v));
      mx = std::max(mx, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (!any) return;  // nothing to size from: int mode, width 1
    sci_mode_ =
        o.sci_mode.has_value() ? *o.sci_mode : (mx / mn > 1000.0 || mx > 1.0e8 || mn < 1.0e-4);
    for (double v : values) {
      if (!std::isfinite(v) || v == 0) continue;
      int64_t len;
      if (sci_mode_)
        len = static_cast<int64_t>(format_double(v, precision_, 'e').size());
      else if (int_mode_)
        len = static_cast<int64_t>(format_double(v, 0, 'f').size()) + 1;  // the trailing "."
      else
        len = static_cast<int64_t>(format_double(v, precision_, 'f').size());
      width_ = std::max(width_, len);
    }
  }
  // Integer / bool formatter: the width of the longest value text.
  explicit Formatter(const std::vector<std::string>& texts) {
    for (const auto& s : texts) width_ = std::max(width_, static_cast<int64_t>(s.size()));
  }

  int64_t width() const { return width_; }

  std::string format(double v) const {
    std::string s;
    if (sci_mode_) {
      s = format_double(v, precision_, 'e');
    } else if (int_mode_) {
      s = format_double(v, 0, 'f');
      if (std::isfinite(v)) s.push_back('.');
    } else {
      s = format_double(v, precision_, 'f');
    }
    return pad_left(std::move(s), width_);
  }
  std::string format(const std::string& text) const { return pad_left(text, width_); }

 private:
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int precision_ = 4;
  int64_t width_ = 1;
};

std::string int_text(const Element& e, Kind k) {
  if (k == Kind::Bool) return e.b ? "True" : "False";
  return std::to_string(e.i);
}

std::string shape_tuple(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) s += ",";
  return s + ")";
}

class Printer {
 public:
  Printer(const Tensor& t, const PrintOptions& o)
      : o_(o),
        dtype_(t.dtype()),
        kind_(kind_of(t.dtype())),
        base_(static_cast<const char*>(t.data_ptr())),
        esize_(t.element_size()),
        sizes_(t.sizes().begin(), t.sizes().end()),
        strides_(t.strides().begin(), t.strides().end()),
        summarize_(t.numel() > o.threshold) {}

  std::string body(int64_t indent) {
    build_formatters();
    return rec(0, 0, indent);
  }

 private:
  bool summarized(int64_t d) const { return summarize_ && sizes_[d] > 2 * o_.edgeitems; }

  // Indices of dim d that will be printed (get_summarized_data); none with edgeitems == 0 in
  // a summarized tensor of 2+ dims, as PyTorch 2.x.
  std::vector<int64_t> shown(int64_t d) const {
    std::vector<int64_t> idx;
    if (summarize_ && o_.edgeitems == 0 && sizes_.size() >= 2) return idx;
    if (summarized(d)) {
      for (int64_t i = 0; i < o_.edgeitems; ++i) idx.push_back(i);
      for (int64_t i = sizes_[d] - o_.edgeitems; i < sizes_[d]; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < sizes_[d]; ++i) idx.push_back(i);
    }
    return idx;
  }

  void collect(size_t d, int64_t off, std::vector<Element>& out) const {
    if (d == sizes_.size()) {
      out.push_back(read_element(base_ + off * esize_, dtype_));
      return;
    }
    for (int64_t i : shown(static_cast<int64_t>(d))) collect(d + 1, off + i * strides_[d], out);
  }

  void build_formatters() {
    std::vector<Element> vals;
    collect(0, 0, vals);
    if (kind_ == Kind::Real || kind_ == Kind::Complex) {
      std::vector<double> re, im;
      re.reserve(vals.size());
      for (const auto& e : vals) {
        re.push_back(e.re);
        im.push_back(e.im);
      }
      f1_.emplace(re, o_);
      if (kind_ == Kind::Complex) f2_.emplace(im, o_);
    } else {
      std::vector<std::string> texts;
      texts.reserve(vals.size());
      for (const auto& e : vals) texts.push_back(int_text(e, kind_));
      f1_.emplace(texts);
    }
  }

  std::string element(int64_t off) const {
    const Element e = read_element(base_ + off * esize_, dtype_);
    if (kind_ == Kind::Real) return f1_->format(e.re);
    if (kind_ != Kind::Complex) return f1_->format(int_text(e, kind_));
    std::string re = f1_->format(e.re);
    std::string im = f2_->format(e.im) + "j";
    im.erase(0, im.find_first_not_of(' '));
    if (im[0] == '+' || im[0] == '-') return re + im;
    return re + "+" + im;
  }

  std::string vector_str(int64_t off, int64_t d, int64_t indent) const {
    int64_t element_length = f1_->width() + 2;
    if (f2_) element_length += f2_->width() + 1;
    const int64_t per_line = std::max<int64_t>(
        1, static_cast<int64_t>(std::floor(static_cast<double>(o_.linewidth - indent) /
                                           static_cast<double>(element_length))));
    std::vector<std::string> data;
    const int64_t n = sizes_[d], st = strides_[d];
    if (summarize_ && o_.edgeitems == 0) {
      data.push_back("...");
    } else if (summarized(d)) {
      for (int64_t i = 0; i < o_.edgeitems; ++i) data.push_back(element(off + i * st));
      data.push_back(" ...");
      for (int64_t i = n - o_.edgeitems; i < n; ++i) data.push_back(element(off + i * st));
    } else {
      for (int64_t i = 0; i < n; ++i) data.push_back(element(off + i * st));
    }
    std::string s = "[";
    const std::string line_sep = ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
    for (size_t i = 0; i < data.size(); ++i) {
      if (i > 0) s += (static_cast<int64_t>(i) % per_line == 0) ? line_sep : ", ";
      s += data[i];
    }
    return s + "]";
  }

  std::string rec(int64_t d, int64_t off, int64_t indent) const {
    const int64_t nd = static_cast<int64_t>(sizes_.size());
    if (nd == 0) return element(off);
    if (d == nd - 1) return vector_str(off, d, indent);
    std::vector<std::string> slices;
    const int64_t n = sizes_[d], st = strides_[d];
    if (summarized(d)) {
      for (int64_t i = 0; i < o_.edgeitems; ++i)
        slices.push_back(rec(d + 1, off + i * st, indent + 1));
      slices.push_back("...");
      for (int64_t i = n - o_.edgeitems; i < n; ++i)
        slices.push_back(rec(d + 1, off + i * st, indent + 1));
    } else {
      for (int64_t i = 0; i < n; ++i) slices.push_back(rec(d + 1, off + i * st, indent + 1));
    }
    const std::string sep = "," + std::string(static_cast<size_t>(nd - d - 1), '\n') +
                            std::string(static_cast<size_t>(indent + 1), ' ');
    std::string s = "[";
    for (size_t i = 0; i < slices.size(); ++i) {
      if (i) s += sep;
      s += slices[i];
    }
    return s + "]";
  }

  const PrintOptions& o_;
  DType dtype_;
  Kind kind_;
  const char* base_;
  int64_t esize_;
  std::vector<int64_t> sizes_, strides_;
  bool summarize_;
  std::optional<Formatter> f1_, f2_;
};

// _add_suffixes: ", suffix" on the last line while it fits in linewidth, else on a new line.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, int64_t indent,
                         int64_t linewidth) {
  const size_t nl = s.rfind('\n');
  // PyTorch's count: len - rfind("\n") + 1 (rfind gives -1 when there is no newline).
  int64_t last = static_cast<int64_t>(s.size()) -
                 (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto& suf : suffixes) {
    const int64_t len = static_cast<int64_t>(suf.size());
    if (last + len + 2 > linewidth) {
      s += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suf;
      last = indent + len;
    } else {
      s += ", " + suf;
      last += len + 2;
    }
  }
  return s + ")";
}

bool has_default_dtype(DType t) {
  const DType def = get_default_dtype();
  const DType def_complex = def == DType::Float64 ? DType::Complex128 : DType::Complex64;
  return t == def || t == def_complex || t == DType::Int64 || t == DType::Bool;
}

}  // namespace

void set_printoptions(std::optional<int> precision, std::optional<int64_t> threshold,
                      std::optional<int64_t> edgeitems, std::optional<int64_t> linewidth,
                      std::optional<bool> sci_mode) {
  KILN_CHECK(!precision || *precision >= 0, "[set_printoptions] precision must be >= 0, got ",
             *precision);
  KILN_CHECK(!threshold || *threshold >= 0, "[set_printoptions] threshold must be >= 0, got ",
             *threshold);
  KILN_CHECK(!edgeitems || *edgeitems >= 0, "[set_printoptions] edgeitems must be >= 0, got ",
             *edgeitems);
  KILN_CHECK(!linewidth || *linewidth >= 0, "[set_printoptions] linewidth must be >= 0, got ",
             *linewidth);
  std::lock_guard<std::mutex> lock(g_opts_mutex);
  if (precision) g_opts.precision = *precision;
  if (threshold) g_opts.threshold = *threshold;
  if (edgeitems) g_opts.edgeitems = *edgeitems;
  if (linewidth) g_opts.linewidth = *linewidth;
  g_opts.sci_mode = sci_mode;
}

void set_printoptions_profile(const std::string& profile) {
  PrintOptions o;
  if (profile == "short") {
    o.precision = 2;
    o.edgeitems = 2;
  } else if (profile == "full") {
    o.threshold = std::numeric_limits<int64_t>::max();
  } else {
    KILN_CHECK(profile == "default", "[set_printoptions_profile] expected 'default', 'short' or ",
               "'full', got '", profile, "'");
  }
  set_printoptions(o);
}

void set_printoptions(const PrintOptions& options) {
  set_printoptions(options.precision, options.threshold, options.edgeitems, options.linewidth,
                   options.sci_mode);
}

PrintOptions get_printoptions() {
  std::lock_guard<std::mutex> lock(g_opts_mutex);
  return g_opts;
}

std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  const PrintOptions o = get_printoptions();
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (is_cuda()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dtype() != get_default_dtype())
      suffixes.push_back(std::string("dtype=kiln.") + dtype_name(dtype()));
    body = "[]";
  } else {
    if (o.edgeitems == 0) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (!has_default_dtype(dtype()))
      suffixes.push_back(std::string("dtype=kiln.") + dtype_name(dtype()));
    const Tensor host = is_cpu() ? *this : to(Device(kCPU));
    body = Printer(host, o).body(indent);
  }
  const AutogradMeta* meta = impl()->autograd_meta();
  if (meta && meta->requires_grad) suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent, o.linewidth);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace kiln
