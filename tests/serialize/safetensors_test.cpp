// safetensors save/load: round trips of every dtype, the byte layout, atomic writes, and
// corrupt/truncated files (every prefix, random byte flips, hand-made bad headers).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "kiln/ops.h"
#include "kiln/serialize.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kiln_st_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    path_ = mkdtemp(buf.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t count() const {
    size_t n = 0;
    for (auto& e : fs::directory_iterator(path_)) n += e.is_regular_file();
    return n;
  }

 private:
  fs::path path_;
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A file made by hand: header text + raw data.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int k = 0; k < 8; ++k) out[k] = static_cast<uint8_t>(n >> (8 * k));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  if (x.nbytes() == 0) return true;
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

OrderedDict<Tensor> sample_tensors() {
  OrderedDict<Tensor> d;
  d.insert("f32", kiln::randn({3, 4}));
  d.insert("f64", kiln::randn({5}, TensorOptions(kFloat64)));
  d.insert("f16", kiln::randn({2, 3}).to(kFloat16));
  d.insert("bf16", kiln::randn({7}).to(kBFloat16));
  d.insert("i64", kiln::arange(-5, 6));
  d.insert("i32", kiln::arange(0, 9, 1, TensorOptions(kInt32)).reshape({3, 3}));
  d.insert("i16", kiln::arange(-3, 3, 1, TensorOptions(kInt16)));
  d.insert("i8", kiln::arange(-4, 4, 1, TensorOptions(kInt8)));
  d.insert("u8", kiln::arange(250, 256, 1, TensorOptions(kUInt8)));
  d.insert("bool", kiln::arange(6).remainder(2).eq(0));
  d.insert("c64", kiln::randn({4}, TensorOptions(kComplex64)));
  d.insert("f8e4m3", kiln::randn({3}).to(kFloat8_e4m3fn));
  d.insert("f8e5m2", kiln::randn({3}).to(kFloat8_e5m2));
  d.insert("scalar", kiln::full({}, 3.5));
  d.insert("empty", kiln::zeros({0, 3}));
  d.insert("strided", kiln::randn({4, 6}).t());  // non-contiguous input
  return d;
}

}  // namespace

TEST(Safetensors, RoundTripEveryDType) {
  TempDir dir;
  auto d = sample_tensors();
  save(d, dir.file("a.safetensors"), {{"format", "pt"}, {"note", "quote\" and \\ and \n"}});
  auto back = load(dir.file("a.safetensors"));
  ASSERT_EQ(back.keys(), d.keys());  // header order is insertion order
  for (auto& it : d) EXPECT_TRUE(same_bytes(it.value, back[it.key])) << it.key;
  auto meta = load_metadata(dir.file("a.safetensors"));
  EXPECT_EQ(meta.at("format"), "pt");
  EXPECT_EQ(meta.at("note"), "quote\" and \\ and \n");
  EXPECT_EQ(dir.count(), 1u);  // no temporary file left behind
}

TEST(Safetensors, ByteLayout) {
  OrderedDict<Tensor> d;
  d.insert("x", kiln::tensor({1.0f, -2.0f, 0.5f}));
  d.insert("flag", kiln::tensor({true, false}));
  d.insert("y", kiln::tensor({7.0, 8.0}, TensorOptions(kFloat64)));
  auto bytes = save_to_bytes(d);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | bytes[k];
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u);  // data starts 8-aligned
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  EXPECT_EQ(header.front(), '{');
  const size_t data_size = bytes.size() - 8 - n;
  EXPECT_EQ(data_size, 3u * 4 + 2u * 1 + 2u * 8);
  // Find each tensor's offsets in the header text and check its bytes.
  auto offsets = [&](const std::string& name) {
    size_t k = header.find("\"" + name + "\"");
    EXPECT_NE(k, std::string::npos);
    size_t o = header.find("\"data_offsets\":[", k);
    EXPECT_NE(o, std::string::npos);
    o += 16;
    size_t comma = header.find(',', o), close = header.find(']', o);
    return std::make_pair(std::stoull(header.substr(o, comma - o)),
                          std::stoull(header.substr(comma + 1, close - comma - 1)));
  };
  EXPECT_NE(header.find("\"x\":{\"dtype\":\"F32\",\"shape\":[3]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"flag\":{\"dtype\":\"BOOL\",\"shape\":[2]"), std::string::npos);
  EXPECT_NE(header.find("\"y\":{\"dtype\":\"F64\",\"shape\":[2]"), std::string::npos);
  const uint8_t* data = bytes.data() + 8 + n;
  auto [xb, xe] = offsets("x");
  ASSERT_EQ(xe - xb, 12u);
  float xs[3];
  std::memcpy(xs, data + xb, 12);
  EXPECT_EQ(xs[0], 1.0f);
  EXPECT_EQ(xs[1], -2.0f);
  EXPECT_EQ(xs[2], 0.5f);
  auto [yb, ye] = offsets("y");
  ASSERT_EQ(ye - yb, 16u);
  EXPECT_EQ(yb % 8, 0u);
  double ys[2];
  std::memcpy(ys, data + yb, 16);
  EXPECT_EQ(ys[0], 7.0);
  EXPECT_EQ(ys[1], 8.0);
  auto [fb, fe] = offsets("flag");
  ASSERT_EQ(fe - fb, 2u);
  EXPECT_EQ(data[fb], 1);
  EXPECT_EQ(data[fb + 1], 0);
}

TEST(Safetensors, ReadsHandMadeFile) {
  // Tensors listed out of data order, whitespace in the JSON, metadata, trailing padding.
  std::string h =
      "{ \"b\" : {\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[8,16]},\n"
      "  \"__metadata__\": {\"k\": \"v\\u00e9\"},\n"
      "  \"a\": {\"shape\": [2], \"dtype\": \"F32\", \"data_offsets\": [0, 8]}}   ";
  auto bytes = make_file(h, float_bytes({1, 2, 3, 4}));
  Metadata meta;
  auto d = load_from_bytes(bytes.data(), bytes.size(), &meta);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(d["a"].select(0, 1).item<float>(), 2.0f);
  EXPECT_EQ(d["b"].size(1), 2);
  EXPECT_EQ(d["b"].select(1, 0).item<float>(), 3.0f);
  EXPECT_EQ(meta.at("k"), "v\xc3\xa9");
}

TEST(Safetensors, BadHeadersAreErrors) {
  auto data8 = float_bytes({1, 2});
  const char* bad[] = {
      "",                                                                   // empty header
      "[]",                                                                 // not an object
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",   // size mismatch
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}",  // past the end
      "{\"a\":{\"dtype\":\"F31\",\"shape\":[2],\"data_offsets\":[0,8]}}",   // unknown dtype
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",  // negative dim
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",  // hole at the end
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",  // hole at the start
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",  // overlap
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",  // duplicate key
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}",
      "{\"__metadata__\":{\"k\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}",  // unterminated
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x",
      "{\"a\":\"\\ud800\"}",
  };
  for (const char* h : bad) {
    auto bytes = make_file(h, data8);
    EXPECT_THROW(load_from_bytes(bytes.data(), bytes.size()), Error) << h;
  }
  // Header length larger than the file, and absurdly large.
  auto good = make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data8);
  EXPECT_NO_THROW(load_from_bytes(good.data(), good.size()));
  auto big = good;
  big[0] = 0xff;
  EXPECT_THROW(load_from_bytes(big.data(), big.size()), Error);
  big[7] = 0x7f;
  EXPECT_THROW(load_from_bytes(big.data(), big.size()), Error);
  // A bool byte other than 0/1.
  auto bools =
      make_file("{\"a\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", {1, 2});
  EXPECT_THROW(load_from_bytes(bools.data(), bools.size()), Error);
  // Deep nesting does not overflow the stack.
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto deep_file = make_file(deep, {});
  EXPECT_THROW(load_from_bytes(deep_file.data(), deep_file.size()), Error);
}

TEST(Safetensors, EveryTruncationIsAnError) {
  OrderedDict<Tensor> d;
  d.insert("w", kiln::randn({3, 2}));
  d.insert("b", kiln::arange(4));
  auto bytes = save_to_bytes(d, {{"m", "x"}});
  TempDir dir;
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(len));
    EXPECT_THROW(load_from_bytes(cut.data(), cut.size()), Error) << "length " << len;
    if (len % 7 == 0) {  // also through a file, every 7th length
      write_bytes(dir.file("t"), cut);
      EXPECT_THROW(load(dir.file("t")), Error) << "length " << len;
    }
  }
  // Extra bytes after the data are also rejected (the data section must be covered exactly).
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_THROW(load_from_bytes(longer.data(), longer.size()), Error);
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  OrderedDict<Tensor> d;
  d.insert("w", kiln::randn({4, 3}));
  d.insert("idx", kiln::arange(5));
  d.insert("mask", kiln::arange(3).eq(1));
  auto bytes = save_to_bytes(d, {{"format", "pt"}});
  std::mt19937 rng(1234);
  int loaded = 0, errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto b = bytes;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      // Mostly the length field and header, where structure lives.
      size_t pos = rng() % 3 ? rng() % std::min<size_t>(b.size(), 200) : rng() % b.size();
      b[pos] = static_cast<uint8_t>(rng());
    }
    try {
      auto r = load_from_bytes(b.data(), b.size());
      for (auto& it : r) (void)it.value.numel();
      ++loaded;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_EQ(loaded + errors, 3000);
}

TEST(Safetensors, AtomicOverwriteAndFailedSaveLeavesOldFile) {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  save(kiln::ones({2}), path);
  auto before = read_bytes(path);
  // complex128 cannot be stored: the save fails before touching the old file.
  OrderedDict<Tensor> bad;
  bad.insert("ok", kiln::zeros({3}));
  bad.insert("z", kiln::zeros({2}, TensorOptions(kComplex128)));
  EXPECT_THROW(save(bad, path), Error);
  EXPECT_EQ(read_bytes(path), before);
  OrderedDict<Tensor> undefined;
  undefined.insert("u", Tensor());
  EXPECT_THROW(save(undefined, path), Error);
  EXPECT_EQ(dir.count(), 1u);
  // A successful save replaces the file.
  save(kiln::full({3}, 2.0), path);
  Tensor t = load_tensor(path);
  EXPECT_EQ(t.numel(), 3);
  EXPECT_EQ(t.select(0, 2).item<double>(), 2.0);
  EXPECT_EQ(dir.count(), 1u);
  // Writing into a directory that does not exist is an error, not a crash.
  EXPECT_THROW(save(t, dir.file("no/such/dir/x.safetensors")), Error);
  EXPECT_THROW(load(dir.file("missing.safetensors")), Error);
  EXPECT_THROW(load_tensor(dir.file("missing.safetensors")), Error);
}

TEST(Safetensors, ReservedName) {
  OrderedDict<Tensor> d;
  d.insert("__metadata__", kiln::zeros({1}));
  EXPECT_THROW(save_to_bytes(d), Error);
}
