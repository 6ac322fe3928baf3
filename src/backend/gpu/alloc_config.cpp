// Parsing of KILN_CUDA_ALLOC_CONF (same grammar and rules as PYTORCH_CUDA_ALLOC_CONF) and the
// request rounding rules of the caching allocator.
#include "backend/gpu/alloc_config.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <vector>

#include "kiln/error.h"

namespace kiln::gpu {

namespace {

constexpr size_t kMB = size_t{1} << 20;
constexpr const char* kKnownOptions =
    "backend, max_split_size_mb, max_non_split_rounding_mb, garbage_collection_threshold, "
    "roundup_power2_divisions, expandable_segments, release_lock_on_cudamalloc, "
    "pinned_use_cuda_host_register, pinned_num_register_threads";

bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Splits "a:b,[c:d]" into tokens; ',', ':', '[' and ']' are tokens of their own and spaces are
// dropped, as PyTorch's lexer does.
std::vector<std::string> lex(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
      out.emplace_back(1, c);
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view conf) : conf_(conf), tok_(lex(conf)) {}

  AllocatorConfig run() {
    AllocatorConfig c;
    c.conf = std::string(conf_);
    for (size_t i = 0; i < tok_.size(); ++i) {
      const std::string key = tok_[i];
      if (key == "," || key == ":" || key == "[" || key == "]") fail("unexpected '", key, "'");
      if (!known(key)) fail("unrecognized option '", key, "'; known options: ", kKnownOptions);
      expect(++i, ":", key);
      if (key == "max_split_size_mb") {
        size_t mb = integer(++i, key);
        KILN_CHECK(mb >= kLargeBuffer / kMB, where(),
                   "max_split_size_mb must be >= ", kLargeBuffer / kMB, ", got ", mb);
        c.max_split_size = std::min(mb, std::numeric_limits<size_t>::max() / kMB) * kMB;
      } else if (key == "max_non_split_rounding_mb") {
        size_t mb = integer(++i, key);
        KILN_CHECK(mb >= kLargeBuffer / kMB, where(),
                   "max_non_split_rounding_mb must be >= ", kLargeBuffer / kMB, ", got ", mb);
        c.max_non_split_rounding_size =
            std::min(mb, std::numeric_limits<size_t>::max() / kMB) * kMB;
      } else if (key == "garbage_collection_threshold") {
        double v = real(++i, key);
        KILN_CHECK(v > 0.0 && v < 1.0, where(),
                   "garbage_collection_threshold must be in (0.0, 1.0), got ", tok_[i]);
        c.garbage_collection_threshold = v;
      } else if (key == "roundup_power2_divisions") {
        i = divisions(i + 1, c);
      } else if (key == "expandable_segments") {
        c.expandable_segments = boolean(++i, key);
      } else if (key == "release_lock_on_cudamalloc" || key == "release_lock_on_hipmalloc") {
        c.release_lock_on_cudamalloc = boolean(++i, key);
      } else if (key == "pinned_use_cuda_host_register" || key == "pinned_use_hip_host_register") {
        c.pinned_use_cuda_host_register = boolean(++i, key);
      } else if (key == "pinned_num_register_threads") {
        size_t v = integer(++i, key);
        KILN_CHECK(is_pow2(v) && v <= 128, where(),
                   "pinned_num_register_threads must be a power of 2 <= 128, got ", v);
        c.pinned_num_register_threads = v;
      } else {  // backend
        value(++i, key);
        KILN_CHECK(tok_[i] == "native", where(), "backend '", tok_[i],
                   "' is not supported; kiln has only backend:native");
      }
      if (i + 1 < tok_.size()) expect(++i, ",", key);
    }
    return c;
  }

 private:
  static bool known(const std::string& k) {
    for (const char* name : {"backend", "max_split_size_mb", "max_non_split_rounding_mb",
                             "garbage_collection_threshold", "roundup_power2_divisions",
                             "expandable_segments", "release_lock_on_cudamalloc",
                             "release_lock_on_hipmalloc", "pinned_use_cuda_host_register",
                             "pinned_use_hip_host_register", "pinned_num_register_threads"}) {
      if (k == name) return true;
    }
    return false;
  }
  std::string where() const {
    return "[cuda] KILN_CUDA_ALLOC_CONF=\"" + std::string(conf_) + "\": ";
  }
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    KILN_ERROR(where(), args...);
  }
  void expect(size_t i, const char* tok, const std::string& after) const {
    if (i >= tok_.size() || tok_[i] != tok) {
      fail("expected '", tok, "' after '", after, "'",
           i < tok_.size() ? " but found '" + tok_[i] + "'" : std::string(" at the end"));
    }
  }
  const std::string& value(size_t i, const std::string& key) const {
    if (i >= tok_.size()) fail("missing value for ", key);
    return tok_[i];
  }
  size_t integer(size_t i, const std::string& key) const {
    const std::string& s = value(i, key);
    size_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      fail("value '", s, "' of ", key, " is not a non-negative integer");
    }
    return v;
  }
  double real(size_t i, const std::string& key) const {
    const std::string& s = value(i, key);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      fail("value '", s, "' of ", key, " is not a number");
    return v;
  }
  bool boolean(size_t i, const std::string& key) const {
    const std::string& s = value(i, key);
    if (s != "True" && s != "False") fail("value '", s, "' of ", key, " must be True or False");
    return s == "True";
  }

  // roundup_power2_divisions:N or roundup_power2_divisions:[MB:N,...,>:N]. Returns the index of
  // the last token consumed.
  size_t divisions(size_t i, AllocatorConfig& c) const {
    const std::string key = "roundup_power2_divisions";
    auto& d = c.roundup_power2_divisions;
    if (value(i, key) != "[") {
      size_t v = integer(i, key);
      KILN_CHECK(is_pow2(v), where(), key, " must be a power of 2, got ", v);
      d.fill(v);
      return i;
    }
    size_t last_index = 0;
    bool first = true;
    while (true) {
      ++i;
      if (value(i, key) == "]") break;
      std::string interval = tok_[i];
      expect(++i, ":", interval);
      size_t v = integer(++i, key);
      KILN_CHECK(v == 0 || is_pow2(v), where(), key, ": divisions for '", interval,
                 "' must be a power of 2 or 0, got ", v);
      if (interval == ">") {
        // As in PyTorch: '>' sets every interval from the last one named onwards.
        std::fill(d.begin() + static_cast<ptrdiff_t>(last_index), d.end(), v);
      } else {
        size_t mb = integer(i - 2, key);
        KILN_CHECK(is_pow2(mb), where(), key, ": interval '", interval,
                   "' must be a power of 2 (in MiB)");
        size_t index = std::min<size_t>(std::bit_width(mb) - 1, d.size() - 1);
        // The first interval named also covers every smaller size.
        if (first) std::fill(d.begin(), d.begin() + static_cast<ptrdiff_t>(index), v);
        first = false;
        d[index] = v;
        last_index = index;
      }
      if (value(i + 1, key) != "]") expect(++i, ",", interval);
    }
    return i;
  }

  std::string_view conf_;
  std::vector<std::string> tok_;
};

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  std::string s(v);
  if (s.empty() || s == "0" || s == "false" || s == "False" || s == "no") return false;
  KILN_CHECK(s == "1" || s == "true" || s == "True" || s == "yes", "[cuda] ", name,
             " must be 0 or 1, got '", s, "'");
  return true;
}

}  // namespace

AllocatorConfig AllocatorConfig::parse(std::string_view conf) { return Parser(conf).run(); }

AllocatorConfig AllocatorConfig::from_env() {
  const char* conf = std::getenv("KILN_CUDA_ALLOC_CONF");
  AllocatorConfig c = conf != nullptr ? parse(conf) : AllocatorConfig{};
  c.caching_enabled = !env_flag("KILN_NO_CUDA_MEMORY_CACHING");
  return c;
}

size_t AllocatorConfig::divisions_for(size_t size) const {
  // Interval 0 is [1 MiB, 2 MiB) and everything below it; the last also takes all above.
  int log_size = std::bit_width(size) - 1;
  int index = std::clamp(log_size - 20, 0, static_cast<int>(kRoundUpPowerOfTwoIntervals) - 1);
  return roundup_power2_divisions[static_cast<size_t>(index)];
}

size_t roundup_power2_next_division(size_t size, size_t divisions) {
  if (std::has_single_bit(size)) return size;
  KILN_ASSERT(divisions >= 2, "need at least 2 divisions, got ", divisions);
  size_t floor = std::bit_floor(size);
  // floor / divisions, with divisions a power of two.
  size_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1;
  size_t down = size & ~(step - 1);
  return down == size ? size : down + step;
}

size_t round_size(size_t size, const AllocatorConfig& config) {
  if (size < kMinBlockSize) return kMinBlockSize;
  size_t divisions = config.divisions_for(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return roundup_power2_next_division(size, divisions);
  }
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

}  // namespace kiln::gpu
