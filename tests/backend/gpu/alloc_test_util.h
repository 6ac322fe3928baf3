// Helpers for the caching-allocator tests: stats recomputed from a snapshot (an independent
// reference for the allocator's counters) and a minimal JSON parser to check snapshot output.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/gpu/caching_allocator.h"
#include "backend/gpu/fake_device.h"

namespace kiln::gpu::alloc_test {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

// Stats recomputed by walking a snapshot's segments and blocks; index 0 = all, 1 = small pool,
// 2 = large pool, as StatType.
struct Totals {
  int64_t allocation[3] = {}, allocated_bytes[3] = {}, active[3] = {}, active_bytes[3] = {};
  int64_t requested_bytes[3] = {}, segment[3] = {}, reserved_bytes[3] = {};
  int64_t inactive_split[3] = {}, inactive_split_bytes[3] = {};
};

inline Totals totals_from_snapshot(const Snapshot& snap) {
  Totals t;
  for (const SegmentInfo& seg : snap.segments) {
    for (int k : {0, seg.is_large ? 2 : 1}) {
      t.reserved_bytes[k] += static_cast<int64_t>(seg.total_size);
      if (!seg.is_expandable) t.segment[k] += 1;
      for (const BlockInfo& b : seg.blocks) {
        auto size = static_cast<int64_t>(b.size);
        if (b.state == BlockState::kActiveAllocated) {
          t.allocation[k] += 1;
          t.allocated_bytes[k] += size;
        }
        if (b.state != BlockState::kInactive) {
          t.active[k] += 1;
          t.active_bytes[k] += size;
          t.requested_bytes[k] += static_cast<int64_t>(b.requested_size);
        } else if (seg.blocks.size() > 1 && !seg.is_expandable) {
          t.inactive_split[k] += 1;
          t.inactive_split_bytes[k] += size;
        }
      }
    }
  }
  return t;
}

// Checks every "current" counter of the allocator against the snapshot walk.
inline void expect_stats_match_snapshot(CachingAllocator& a) {
  Snapshot snap = a.memory_snapshot();
  DeviceStats s = a.stats();
  Totals t = totals_from_snapshot(snap);
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("stat type " + std::to_string(k));
    EXPECT_EQ(s.allocation[k].current, t.allocation[k]);
    EXPECT_EQ(s.allocated_bytes[k].current, t.allocated_bytes[k]);
    EXPECT_EQ(s.active[k].current, t.active[k]);
    EXPECT_EQ(s.active_bytes[k].current, t.active_bytes[k]);
    EXPECT_EQ(s.requested_bytes[k].current, t.requested_bytes[k]);
    EXPECT_EQ(s.reserved_bytes[k].current, t.reserved_bytes[k]);
    EXPECT_EQ(s.inactive_split[k].current, t.inactive_split[k]);
    EXPECT_EQ(s.inactive_split_bytes[k].current, t.inactive_split_bytes[k]);
    if (!a.config().expandable_segments) {
      EXPECT_EQ(s.segment[k].current, t.segment[k]);
    }
  }
}

inline int64_t stat_value(const CachingAllocator& a, const std::string& key) {
  for (auto& [k, v] : a.memory_stats())
    if (k == key) return v;
  ADD_FAILURE() << "no stat named " << key;
  return -12345;
}

// ---- A minimal JSON reader (enough to check the snapshot writer independently). ----

struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject } type = Type::kNull;
  bool b = false;
  double num = 0;
  std::string str;  // for numbers, the literal text too
  std::vector<Json> arr;
  std::map<std::string, Json> obj;
  std::vector<std::string> keys;  // object keys in order

  bool has(const std::string& k) const { return type == Type::kObject && obj.count(k) == 1; }
  const Json& operator[](const std::string& k) const {
    static const Json missing;
    auto it = obj.find(k);
    return it == obj.end() ? missing : it->second;
  }
  const Json& operator[](size_t i) const { return arr.at(i); }
  long long integer() const { return std::stoll(str); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  // Returns false (and leaves an error message) on any syntax error or trailing garbage.
  bool parse(Json& out) {
    try {
      out = value();
      ws();
      if (pos_ != s_.size()) throw std::string("trailing characters");
      return true;
    } catch (const std::string& e) {
      error = e + " at offset " + std::to_string(pos_);
      return false;
    }
  }
  std::string error;

 private:
  void ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() {
    ws();
    if (pos_ >= s_.size()) throw std::string("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) throw std::string("expected '") + c + "'";
    ++pos_;
  }
  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  Json value() {
    Json j;
    char c = peek();
    if (c == '{') {
      j.type = Json::Type::kObject;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return j;
      }
      while (true) {
        std::string k = string();
        expect(':');
        if (j.obj.count(k)) throw std::string("duplicate key ") + k;
        j.keys.push_back(k);
        j.obj[k] = value();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return j;
      }
    }
    if (c == '[') {
      j.type = Json::Type::kArray;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return j;
      }
      while (true) {
        j.arr.push_back(value());
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return j;
      }
    }
    if (c == '"') {
      j.type = Json::Type::kString;
      j.str = string();
      return j;
    }
    if (literal("true")) {
      j.type = Json::Type::kBool;
      j.b = true;
      return j;
    }
    if (literal("false")) {
      j.type = Json::Type::kBool;
      return j;
    }
    if (literal("null")) return j;
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
      throw std::string("bad value");
    while (pos_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
            s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-'))
      ++pos_;
    j.type = Json::Type::kNumber;
    j.str = s_.substr(start, pos_ - start);
    char* end = nullptr;
    j.num = std::strtod(j.str.c_str(), &end);
    if (end != j.str.c_str() + j.str.size()) throw std::string("bad number ") + j.str;
    return j;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) throw std::string("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) throw std::string("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      char e = s_.at(pos_++);
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          int v = std::stoi(s_.substr(pos_, 4), nullptr, 16);
          pos_ += 4;
          if (v >= 0x80) throw std::string("non-ASCII escape not supported by this checker");
          out.push_back(static_cast<char>(v));
          break;
        }
        default:
          throw std::string("bad escape");
      }
    }
  }
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace kiln::gpu::alloc_test
