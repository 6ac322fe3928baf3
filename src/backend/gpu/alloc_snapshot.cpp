// Serialization of allocator snapshots: a small value tree written as JSON or as a protocol-2
// pickle, and atomic file writes.
#include "backend/gpu/alloc_snapshot.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kiln/error.h"

namespace kiln::gpu {

// Note [Snapshot formats]
// PyTorch's memory_viz (pytorch.org/memory_viz) reads pickles only, so dump_snapshot writes a
// pickle when the file name ends in .pickle or .pkl and JSON otherwise; both hold the same tree,
// built once below. Key names, state and action strings follow torch/csrc/cuda/memory_snapshot:
// segments carry "is_expandable", an OOM trace entry carries "device_free" instead of "addr",
// and "device_traces" is indexed by device.

const char* to_string(BlockState s) {
  switch (s) {
    case BlockState::kActiveAllocated:
      return "active_allocated";
    case BlockState::kActivePendingFree:
      return "active_pending_free";
    case BlockState::kInactive:
      return "inactive";
  }
  return "inactive";
}

const char* to_string(TraceAction a) {
  switch (a) {
    case TraceAction::kAlloc:
      return "alloc";
    case TraceAction::kFreeRequested:
      return "free_requested";
    case TraceAction::kFreeCompleted:
      return "free_completed";
    case TraceAction::kSegmentAlloc:
      return "segment_alloc";
    case TraceAction::kSegmentFree:
      return "segment_free";
    case TraceAction::kSegmentMap:
      return "segment_map";
    case TraceAction::kSegmentUnmap:
      return "segment_unmap";
    case TraceAction::kSnapshot:
      return "snapshot";
    case TraceAction::kOom:
      return "oom";
  }
  return "snapshot";
}

namespace {

// A JSON-like value: what both writers consume.
struct Value {
  enum class Kind { kNull, kBool, kInt, kReal, kStr, kList, kTuple, kDict } kind = Kind::kNull;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
  std::string s;
  std::vector<Value> items;                           // list, tuple
  std::vector<std::pair<std::string, Value>> fields;  // dict, in insertion order

  static Value boolean(bool v) {
    Value x;
    x.kind = Kind::kBool;
    x.b = v;
    return x;
  }
  static Value integer(int64_t v) {
    Value x;
    x.kind = Kind::kInt;
    x.i = v;
    return x;
  }
  static Value real(double v) {
    Value x;
    x.kind = Kind::kReal;
    x.d = v;
    return x;
  }
  static Value str(std::string v) {
    Value x;
    x.kind = Kind::kStr;
    x.s = std::move(v);
    return x;
  }
  static Value list() {
    Value x;
    x.kind = Kind::kList;
    return x;
  }
  static Value tuple() {
    Value x;
    x.kind = Kind::kTuple;
    return x;
  }
  static Value dict() {
    Value x;
    x.kind = Kind::kDict;
    return x;
  }
  Value& add(std::string key, Value v) {
    fields.emplace_back(std::move(key), std::move(v));
    return *this;
  }
};

Value u64(uint64_t v) { return Value::integer(static_cast<int64_t>(v)); }

// A context string becomes a list of frames, one per line: {"name", "filename", "line"}.
Value frames(const std::string& context) {
  Value l = Value::list();
  size_t pos = 0;
  while (pos < context.size()) {
    size_t nl = context.find('\n', pos);
    if (nl == std::string::npos) nl = context.size();
    if (nl > pos) {
      Value f = Value::dict();
      f.add("name", Value::str(context.substr(pos, nl - pos)));
      f.add("filename", Value::str(""));
      f.add("line", Value::integer(0));
      l.items.push_back(std::move(f));
    }
    pos = nl + 1;
  }
  return l;
}

Value build_tree(const Snapshot& snap) {
  Value segments = Value::list();
  for (const SegmentInfo& seg : snap.segments) {
    Value sd = Value::dict();
    sd.add("device", Value::integer(seg.device));
    sd.add("address", u64(seg.address));
    sd.add("total_size", u64(seg.total_size));
    sd.add("allocated_size", u64(seg.allocated_size));
    sd.add("active_size", u64(seg.active_size));
    sd.add("requested_size", u64(seg.requested_size));
    sd.add("stream", u64(seg.stream));
    sd.add("segment_type", Value::str(seg.is_large ? "large" : "small"));
    Value pool = Value::tuple();
    pool.items.push_back(u64(seg.pool_id.first));
    pool.items.push_back(u64(seg.pool_id.second));
    sd.add("segment_pool_id", std::move(pool));
    sd.add("is_expandable", Value::boolean(seg.is_expandable));
    sd.add("frames", frames(seg.context));
    Value blocks = Value::list();
    for (const BlockInfo& b : seg.blocks) {
      Value bd = Value::dict();
      bd.add("address", u64(b.address));
      bd.add("size", u64(b.size));
      bd.add("requested_size", u64(b.requested_size));
      bd.add("state", Value::str(to_string(b.state)));
      bd.add("frames", frames(b.context));
      blocks.items.push_back(std::move(bd));
    }
    sd.add("blocks", std::move(blocks));
    segments.items.push_back(std::move(sd));
  }

  Value traces = Value::list();
  for (const auto& device_trace : snap.device_traces) {
    Value t = Value::list();
    for (const TraceEntry& e : device_trace) {
      Value ed = Value::dict();
      ed.add("action", Value::str(to_string(e.action)));
      ed.add(e.action == TraceAction::kOom ? "device_free" : "addr", u64(e.addr));
      ed.add("size", u64(e.size));
      ed.add("stream", u64(e.stream));
      ed.add("time_us", Value::integer(e.time_us));
      ed.add("frames", frames(e.context));
      t.items.push_back(std::move(ed));
    }
    traces.items.push_back(std::move(t));
  }

  const AllocatorConfig& c = snap.settings;
  Value settings = Value::dict();
  settings.add("PYTORCH_CUDA_ALLOC_CONF", Value::str(c.conf));
  settings.add("KILN_CUDA_ALLOC_CONF", Value::str(c.conf));
  settings.add("max_split_size", u64(c.max_split_size));  // SIZE_MAX shows as -1, as in PyTorch
  settings.add("garbage_collection_threshold", Value::real(c.garbage_collection_threshold));
  settings.add("expandable_segments", Value::boolean(c.expandable_segments));
  settings.add("pinned_num_register_threads", u64(c.pinned_num_register_threads));
  settings.add("release_lock_on_cudamalloc", Value::boolean(c.release_lock_on_cudamalloc));
  settings.add("pinned_use_cuda_host_register", Value::boolean(c.pinned_use_cuda_host_register));
  Value rounding = Value::dict();
  uint64_t mb = 1;
  for (size_t d : c.roundup_power2_divisions) {
    rounding.add(std::to_string(mb), u64(d));
    mb *= 2;
  }
  settings.add("roundup_power2_divisions", std::move(rounding));
  settings.add("caching_enabled", Value::boolean(c.caching_enabled));

  Value root = Value::dict();
  root.add("segments", std::move(segments));
  root.add("device_traces", std::move(traces));
  root.add("allocator_settings", std::move(settings));
  return root;
}

void json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  for (unsigned char ch : s) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
          out += buf;
        } else {
          out.push_back(static_cast<char>(ch));
        }
    }
  }
  out.push_back('"');
}

void write_json(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNull:
      out += "null";
      break;
    case Value::Kind::kBool:
      out += v.b ? "true" : "false";
      break;
    case Value::Kind::kInt:
      out += std::to_string(v.i);
      break;
    case Value::Kind::kReal: {
      if (!std::isfinite(v.d)) {
        out += "null";
        break;
      }
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", v.d);
      out += buf;
      // Keep reals recognizable as reals ("0" -> "0.0").
      if (std::strpbrk(buf, ".eE") == nullptr) out += ".0";
      break;
    }
    case Value::Kind::kStr:
      json_string(out, v.s);
      break;
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      out.push_back('[');
      for (size_t k = 0; k < v.items.size(); ++k) {
        if (k) out.push_back(',');
        write_json(out, v.items[k]);
      }
      out.push_back(']');
      break;
    }
    case Value::Kind::kDict: {
      out.push_back('{');
      for (size_t k = 0; k < v.fields.size(); ++k) {
        if (k) out.push_back(',');
        json_string(out, v.fields[k].first);
        out.push_back(':');
        write_json(out, v.fields[k].second);
      }
      out.push_back('}');
      break;
    }
  }
}

// Pickle opcodes (protocol 2; all of them are understood by memory_viz's unpickler too).
constexpr char kProto = '\x80', kStop = '.', kMark = '(', kNone = 'N', kTrue = '\x88',
               kFalse = '\x89', kBinInt = 'J', kLong1 = '\x8a', kBinFloat = 'G', kBinUnicode = 'X',
               kEmptyList = ']', kAppends = 'e', kEmptyDict = '}', kSetItems = 'u', kTuple = 't',
               kTuple2 = '\x86';

void put_le(std::string& out, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

void pickle_str(std::string& out, const std::string& s) {
  out.push_back(kBinUnicode);
  put_le(out, s.size(), 4);
  out += s;
}

void write_pickle(std::string& out, const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNull:
      out.push_back(kNone);
      break;
    case Value::Kind::kBool:
      out.push_back(v.b ? kTrue : kFalse);
      break;
    case Value::Kind::kInt:
      if (v.i >= INT32_MIN && v.i <= INT32_MAX) {
        out.push_back(kBinInt);
        put_le(out, static_cast<uint32_t>(static_cast<int32_t>(v.i)), 4);
      } else {
        out.push_back(kLong1);
        out.push_back('\x08');  // 8 bytes, little-endian two's complement
        put_le(out, static_cast<uint64_t>(v.i), 8);
      }
      break;
    case Value::Kind::kReal: {
      out.push_back(kBinFloat);
      uint64_t bits;
      std::memcpy(&bits, &v.d, sizeof(bits));
      for (int k = 7; k >= 0; --k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
      break;
    }
    case Value::Kind::kStr:
      pickle_str(out, v.s);
      break;
    case Value::Kind::kList:
      out.push_back(kEmptyList);
      if (!v.items.empty()) {
        out.push_back(kMark);
        for (const Value& x : v.items) write_pickle(out, x);
        out.push_back(kAppends);
      }
      break;
    case Value::Kind::kTuple:
      if (v.items.size() == 2) {
        write_pickle(out, v.items[0]);
        write_pickle(out, v.items[1]);
        out.push_back(kTuple2);
      } else {
        out.push_back(kMark);
        for (const Value& x : v.items) write_pickle(out, x);
        out.push_back(kTuple);
      }
      break;
    case Value::Kind::kDict:
      out.push_back(kEmptyDict);
      if (!v.fields.empty()) {
        out.push_back(kMark);
        for (const auto& [k, x] : v.fields) {
          pickle_str(out, k);
          write_pickle(out, x);
        }
        out.push_back(kSetItems);
      }
      break;
  }
}

}  // namespace

std::string snapshot_to_json(const Snapshot& snapshot) {
  std::string out;
  write_json(out, build_tree(snapshot));
  return out;
}

std::string snapshot_to_pickle(const Snapshot& snapshot) {
  std::string out;
  out.push_back(kProto);
  out.push_back('\x02');
  write_pickle(out, build_tree(snapshot));
  out.push_back(kStop);
  return out;
}

void write_file_atomically(const std::string& path, const std::string& data) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  KILN_CHECK(f != nullptr, "[cuda] dump_snapshot: cannot create '", tmp,
             "': ", std::strerror(errno));
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (::fsync(::fileno(f)) == 0) && ok;
  int err = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    KILN_ERROR("[cuda] dump_snapshot: cannot write '", tmp, "': ", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    KILN_ERROR("[cuda] dump_snapshot: cannot rename '", tmp, "' to '", path,
               "': ", std::strerror(err));
  }
}

}  // namespace kiln::gpu
