// safetensors reading and writing (Note [safetensors files] in kiln/serialize.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kiln/ops/factories.h"
#include "kiln/serialize.h"
#include "nn/grad_scope.h"
#include "serialize/json.h"

static_assert(std::endian::native == std::endian::little,
              "kiln's safetensors code assumes a little-endian host");

namespace kiln {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the Python package's limit

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {kBool, "BOOL"},          {kUInt8, "U8"},    {kInt8, "I8"},       {kInt16, "I16"},
    {kInt32, "I32"},          {kInt64, "I64"},   {kFloat16, "F16"},   {kBFloat16, "BF16"},
    {kFloat32, "F32"},        {kFloat64, "F64"}, {kComplex64, "C64"}, {kFloat8_e4m3fn, "F8_E4M3"},
    {kFloat8_e5m2, "F8_E5M2"}};

const char* safetensors_name(DType dt, const std::string& tensor) {
  for (auto& d : kDTypeNames)
    if (d.dtype == dt) return d.name;
  KILN_ERROR("[save] tensor '", tensor, "' has dtype ", dt,
             ", which the safetensors format cannot store");
}

std::optional<DType> dtype_from_name(const std::string& s) {
  for (auto& d : kDTypeNames)
    if (s == d.name) return d.dtype;
  return std::nullopt;
}

// ---------------------------------------------------------------- writing

struct Prepared {
  std::string header;        // JSON, padded
  std::vector<Tensor> data;  // contiguous CPU tensors, in data order
};

Prepared prepare(const OrderedDict<Tensor>& tensors, const Metadata& metadata) {
  kiln::detail::NoGradScope ng;
  std::vector<Tensor> cpu;
  cpu.reserve(tensors.size());
  for (auto& it : tensors) {
    KILN_CHECK(it.key != "__metadata__",
               "[save] '__metadata__' is reserved and cannot name a tensor");
    KILN_CHECK(it.value.defined(), "[save] tensor '", it.key, "' is undefined");
    safetensors_name(it.value.dtype(), it.key);
    cpu.push_back(it.value.detach().to(Device(kCPU)).contiguous());
  }
  // Data order: larger elements first, so every tensor starts aligned to its element size.
  std::vector<size_t> order(cpu.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return cpu[a].element_size() > cpu[b].element_size();
  });
  std::vector<uint64_t> begin(cpu.size());
  uint64_t off = 0;
  Prepared p;
  for (size_t i : order) {
    begin[i] = off;
    off += static_cast<uint64_t>(cpu[i].nbytes());
    p.data.push_back(cpu[i]);
  }
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (auto& kv : metadata) {
      if (!first) h += ',';
      h += detail::json::quote(kv.first);
      h += ':';
      h += detail::json::quote(kv.second);
      first = false;
    }
    h += "}";
    if (!cpu.empty()) h += ",";
  }
  size_t i = 0;
  for (auto& it : tensors) {
    const Tensor& t = cpu[i];
    // Appends piece by piece (GCC 12 warns falsely on long `"..." + std::string` chains).
    if (i) h += ',';
    h += detail::json::quote(it.key);
    h += ":{\"dtype\":\"";
    h += safetensors_name(t.dtype(), it.key);
    h += "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d) h += ',';
      h += std::to_string(t.size(d));
    }
    h += "],\"data_offsets\":[";
    h += std::to_string(begin[i]);
    h += ',';
    h += std::to_string(begin[i] + static_cast<uint64_t>(t.nbytes()));
    h += "]}";
    ++i;
  }
  h += "}";
  while (h.size() % 8 != 0) h += ' ';
  p.header = std::move(h);
  return p;
}

void put_u64(uint8_t* out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out[k] = static_cast<uint8_t>(v >> (8 * k));
}

void write_all(int fd, const void* data, size_t n, const std::string& tmp) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    KILN_CHECK(w > 0, "[save] writing '", tmp, "' failed: ", std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void write_file(const Prepared& p, const std::string& path) {
  std::string tmpl = path + ".tmp.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  KILN_CHECK(fd >= 0, "[save] cannot create a temporary file next to '", path,
             "': ", std::strerror(errno));
  std::string tmp(buf.data());
  try {
    ::fchmod(fd, 0644);
    uint8_t len[8];
    put_u64(len, p.header.size());
    write_all(fd, len, 8, tmp);
    write_all(fd, p.header.data(), p.header.size(), tmp);
    for (auto& t : p.data)
      if (t.nbytes() > 0) write_all(fd, t.data_ptr(), static_cast<size_t>(t.nbytes()), tmp);
    KILN_CHECK(::fsync(fd) == 0, "[save] fsync of '", tmp, "' failed: ", std::strerror(errno));
    int rc = ::close(fd);
    fd = -1;
    KILN_CHECK(rc == 0, "[save] closing '", tmp, "' failed: ", std::strerror(errno));
    KILN_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "[save] renaming '", tmp, "' to '", path,
               "' failed: ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

// ---------------------------------------------------------------- reading

class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at off (the caller has checked off + n <= size()).
  virtual void read(uint64_t off, void* dst, uint64_t n) = 0;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    KILN_CHECK(fd_ >= 0, "[load] cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      KILN_ERROR("[load] '", path, "' is not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  void read(uint64_t off, void* dst, uint64_t n) override {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      KILN_CHECK(r > 0, "[load] '", path_, "' is truncated or unreadable (reading ", n,
                 " bytes at offset ", off, ")");
      p += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<uint64_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

class MemorySource : public Source {
 public:
  MemorySource(const void* data, size_t n) : data_(static_cast<const uint8_t*>(data)), n_(n) {}
  uint64_t size() const override { return n_; }
  void read(uint64_t off, void* dst, uint64_t n) override {
    KILN_ASSERT(off <= n_ && n <= n_ - off);
    if (n) std::memcpy(dst, data_ + off, n);
  }

 private:
  const uint8_t* data_;
  uint64_t n_;
};

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;  // header order
  Metadata metadata;
  uint64_t data_start = 0;
};

Header read_header(Source& src, const std::string& what) {
  const uint64_t size = src.size();
  KILN_CHECK(size >= 8, "[load] ", what, " is too small (", size,
             " bytes) to be a safetensors file");
  uint8_t len_bytes[8];
  src.read(0, len_bytes, 8);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | len_bytes[k];
  KILN_CHECK(n <= kMaxHeaderBytes, "[load] ", what, ": header length ", n, " exceeds the limit of ",
             kMaxHeaderBytes, " bytes (corrupt file?)");
  KILN_CHECK(n <= size - 8, "[load] ", what, " is truncated: the header claims ", n,
             " bytes but only ", size - 8, " follow");
  KILN_CHECK(n >= 2, "[load] ", what, ": header too small (", n, " bytes)");
  std::string text(n, '\0');
  src.read(8, text.data(), n);
  KILN_CHECK(text[0] == '{', "[load] ", what, ": the header does not start with '{'");
  detail::json::Value root = detail::json::parse(text, "load");
  KILN_CHECK(root.kind == detail::json::Value::Kind::Object, "[load] ", what,
             ": the header is not a JSON object");
  Header h;
  h.data_start = 8 + n;
  const uint64_t data_size = size - h.data_start;
  using Kind = detail::json::Value::Kind;
  for (auto& kv : root.obj) {
    const std::string& name = kv.first;
    const auto& v = kv.second;
    if (name == "__metadata__") {
      KILN_CHECK(v.kind == Kind::Object, "[load] ", what, ": __metadata__ is not an object");
      for (auto& m : v.obj) {
        KILN_CHECK(m.second.kind == Kind::String, "[load] ", what, ": metadata value '", m.first,
                   "' is not a string");
        h.metadata[m.first] = m.second.str;
      }
      continue;
    }
    KILN_CHECK(v.kind == Kind::Object, "[load] ", what, ": entry '", name, "' is not an object");
    const auto* dt = v.find("dtype");
    const auto* shape = v.find("shape");
    const auto* offs = v.find("data_offsets");
    KILN_CHECK(dt && dt->kind == Kind::String && shape && shape->kind == Kind::Array && offs &&
                   offs->kind == Kind::Array,
               "[load] ", what, ": tensor '", name,
               "' needs a string 'dtype', an array 'shape' and an array 'data_offsets'");
    Entry e;
    e.name = name;
    auto d = dtype_from_name(dt->str);
    KILN_CHECK(d, "[load] ", what, ": tensor '", name, "' has unsupported dtype '", dt->str, "'");
    e.dtype = *d;
    uint64_t numel = 1;
    KILN_CHECK(shape->arr.size() <= 64, "[load] ", what, ": tensor '", name,
               "' has too many dimensions");
    for (auto& s : shape->arr) {
      KILN_CHECK(s.kind == Kind::Number && s.is_integer && s.i >= 0, "[load] ", what, ": tensor '",
                 name, "' has an invalid shape entry");
      e.shape.push_back(s.i);
      KILN_CHECK(!__builtin_mul_overflow(numel, static_cast<uint64_t>(s.i), &numel), "[load] ",
                 what, ": tensor '", name, "' has a shape whose size overflows");
    }
    KILN_CHECK(offs->arr.size() == 2, "[load] ", what, ": tensor '", name,
               "' data_offsets must have two entries");
    for (auto& o : offs->arr)
      KILN_CHECK(o.kind == Kind::Number && o.is_integer && o.i >= 0, "[load] ", what, ": tensor '",
                 name, "' has an invalid data offset");
    e.begin = static_cast<uint64_t>(offs->arr[0].i);
    e.end = static_cast<uint64_t>(offs->arr[1].i);
    KILN_CHECK(e.begin <= e.end && e.end <= data_size, "[load] ", what, ": tensor '", name,
               "' has data offsets [", e.begin, ", ", e.end, "] outside the ", data_size,
               "-byte data section (truncated file?)");
    uint64_t nbytes = 0;
    KILN_CHECK(
        !__builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(e.dtype)), &nbytes) &&
            nbytes == e.end - e.begin,
        "[load] ", what, ": tensor '", name, "' of dtype ", dt->str, " and ", numel,
        " elements needs ", nbytes, " bytes but its data offsets span ", e.end - e.begin);
    h.entries.push_back(std::move(e));
  }
  // The data section must be covered exactly, without holes or overlaps.
  std::vector<const Entry*> sorted;
  for (auto& e : h.entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expected = 0;
  for (const Entry* e : sorted) {
    KILN_CHECK(e->begin == expected, "[load] ", what, ": tensor '", e->name, "' starts at byte ",
               e->begin, " of the data section, expected ", expected,
               " (overlapping or missing data)");
    expected = e->end;
  }
  KILN_CHECK(expected == data_size, "[load] ", what, ": the tensors cover ", expected,
             " bytes but the data section has ", data_size);
  return h;
}

OrderedDict<Tensor> read_tensors(Source& src, const Header& h, const std::string& what,
                                 Device device) {
  OrderedDict<Tensor> out;
  for (auto& e : h.entries) {
    Tensor t = kiln::empty(e.shape, TensorOptions(e.dtype));
    src.read(h.data_start + e.begin, t.data_ptr(), e.end - e.begin);
    if (e.dtype == kBool) {
      const uint8_t* b = static_cast<const uint8_t*>(t.data_ptr());
      for (uint64_t i = 0; i < e.end - e.begin; ++i)
        KILN_CHECK(b[i] <= 1, "[load] ", what, ": bool tensor '", e.name,
                   "' holds a byte other than 0 or 1");
    }
    if (device != t.device()) t = t.to(device);
    out.insert(e.name, t);
  }
  return out;
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace

// ---------------------------------------------------------------- public API

void save(const OrderedDict<Tensor>& tensors, const std::string& path, const Metadata& metadata) {
  write_file(prepare(tensors, metadata), path);
}

void save(const Tensor& tensor, const std::string& path) {
  OrderedDict<Tensor> d;
  d.insert("tensor", tensor);
  save(d, path);
}

void save(const nn::Module& module, const std::string& path) { save(module.state_dict(), path); }

std::vector<uint8_t> save_to_bytes(const OrderedDict<Tensor>& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::vector<uint8_t> out(8 + p.header.size());
  put_u64(out.data(), p.header.size());
  std::memcpy(out.data() + 8, p.header.data(), p.header.size());
  for (auto& t : p.data) {
    const uint8_t* b = static_cast<const uint8_t*>(t.data_ptr());
    if (t.nbytes() > 0) out.insert(out.end(), b, b + t.nbytes());
  }
  return out;
}

OrderedDict<Tensor> load(const std::string& path, Device device) {
  FileSource src(path);
  Header h = read_header(src, quoted(path));
  return read_tensors(src, h, quoted(path), device);
}

Tensor load_tensor(const std::string& path, Device device) {
  auto d = load(path, device);
  KILN_CHECK(d.size() == 1, "[load_tensor] ", quoted(path), " holds ", d.size(),
             " tensors, expected exactly one");
  return d.items()[0].value;
}

Metadata load_metadata(const std::string& path) {
  FileSource src(path);
  return read_header(src, quoted(path)).metadata;
}

OrderedDict<Tensor> load_from_bytes(const void* data, size_t size, Metadata* metadata) {
  KILN_CHECK(data || size == 0, "[load] null buffer");
  MemorySource src(data, size);
  Header h = read_header(src, "buffer");
  if (metadata) *metadata = h.metadata;
  return read_tensors(src, h, "buffer", Device(kCPU));
}

nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict) {
  return module.load_state_dict(load(path), strict);
}

}  // namespace kiln
