// Tests of memory snapshots and history: the JSON parses and has PyTorch's keys and values,
// trace entries come in the expected order, the ring buffer keeps the newest entries, the
// pickle holds the same tree (checked with Python when present), files are written atomically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "alloc_test_util.h"
#include "kiln/error.h"

namespace kiln::gpu {
namespace {

using alloc_test::Json;
using alloc_test::JsonParser;
using alloc_test::MiB;

Json parse_json(const std::string& text) {
  Json j;
  JsonParser p(text);
  EXPECT_TRUE(p.parse(j)) << p.error;
  return j;
}

std::set<std::string> keys(const Json& j) { return {j.keys.begin(), j.keys.end()}; }

std::vector<std::string> actions(const Snapshot& s, int device = 0) {
  std::vector<std::string> out;
  for (const TraceEntry& e : s.device_traces.at(static_cast<size_t>(device)))
    out.push_back(to_string(e.action));
  return out;
}

TEST(AllocSnapshot, JsonHasPyTorchLayout) {
  FakeDevice::Options o;
  o.device_index = 1;
  o.capacity = 256 * MiB;
  FakeDevice dev(o);
  CachingAllocator a(dev, AllocatorConfig::parse("max_split_size_mb:64"));
  int calls = 0;
  a.record_memory_history(
      true, 1000, [&] { return "model.cpp:" + std::to_string(++calls) + " fwd\n\"main\""; });
  void* small = a.malloc(1000, 3);
  void* large = a.malloc(30 * MiB, 3);
  EXPECT_THROW(a.malloc(300 * MiB, 3), Error);  // leaves an "oom" entry
  const size_t free_at_oom = dev.mem_get_info().free;
  // (After the OOM: its ladder would have waited for this one's event.)
  void* pending = a.malloc(12 * MiB, 3);
  a.record_stream(pending, 4);
  a.free(pending);
  PoolId pool = new_pool_id();
  a.begin_allocate_to_pool(pool);
  void* pooled = a.malloc(2 * MiB, 3);
  a.end_allocate_to_pool(pool);

  Snapshot snap = a.memory_snapshot();
  Json j = parse_json(snapshot_to_json(snap));
  EXPECT_EQ(keys(j), (std::set<std::string>{"segments", "device_traces", "allocator_settings"}));

  const Json& segs = j["segments"];
  ASSERT_EQ(segs.type, Json::Type::kArray);
  ASSERT_EQ(segs.arr.size(), snap.segments.size());
  ASSERT_EQ(segs.arr.size(), 4u);
  const std::set<std::string> seg_keys = {"device",         "address",      "total_size",
                                          "allocated_size", "active_size",  "requested_size",
                                          "stream",         "segment_type", "segment_pool_id",
                                          "is_expandable",  "frames",       "blocks"};
  const std::set<std::string> block_keys = {"address", "size", "requested_size", "state", "frames"};
  int pending_blocks = 0, pool_segments = 0;
  for (size_t i = 0; i < segs.arr.size(); ++i) {
    const Json& seg = segs[i];
    const SegmentInfo& ref = snap.segments[i];
    EXPECT_EQ(keys(seg), seg_keys);
    EXPECT_EQ(seg["device"].integer(), 1);
    EXPECT_EQ(static_cast<uintptr_t>(seg["address"].integer()), ref.address);
    EXPECT_EQ(seg["stream"].integer(), 3);
    EXPECT_EQ(seg["segment_type"].str, ref.is_large ? "large" : "small");
    EXPECT_EQ(seg["is_expandable"].type, Json::Type::kBool);
    ASSERT_EQ(seg["segment_pool_id"].arr.size(), 2u);
    if (seg["segment_pool_id"][1].integer() != 0) {
      ++pool_segments;
      EXPECT_EQ(static_cast<uint64_t>(seg["segment_pool_id"][1].integer()), pool.second);
    }
    // Blocks tile the segment; sizes add up to the totals.
    long long addr = seg["address"].integer(), total = 0, allocated = 0, active = 0;
    for (const Json& b : seg["blocks"].arr) {
      EXPECT_EQ(keys(b), block_keys);
      EXPECT_EQ(b["address"].integer(), addr);
      addr += b["size"].integer();
      total += b["size"].integer();
      const std::string& state = b["state"].str;
      EXPECT_TRUE(state == "active_allocated" || state == "active_pending_free" ||
                  state == "inactive")
          << state;
      if (state == "active_allocated") allocated += b["size"].integer();
      if (state != "inactive") active += b["size"].integer();
      if (state == "active_pending_free") ++pending_blocks;
      if (state != "inactive") {  // the context of an allocation lasts until its free completes
        ASSERT_EQ(b["frames"].arr.size(), 2u);  // two lines of context
        EXPECT_EQ(b["frames"][0]["name"].str.rfind("model.cpp:", 0), 0u);
        EXPECT_EQ(b["frames"][1]["name"].str, "\"main\"");
        EXPECT_EQ(keys(b["frames"][0]), (std::set<std::string>{"name", "filename", "line"}));
      } else {
        EXPECT_TRUE(b["frames"].arr.empty());
      }
    }
    EXPECT_EQ(seg["total_size"].integer(), total);
    EXPECT_EQ(static_cast<size_t>(total), ref.total_size);
    EXPECT_EQ(seg["allocated_size"].integer(), allocated);
    EXPECT_EQ(seg["active_size"].integer(), active);
  }
  EXPECT_EQ(pending_blocks, 1);
  EXPECT_EQ(pool_segments, 1);

  const Json& traces = j["device_traces"];
  ASSERT_EQ(traces.arr.size(), 2u);  // indexed by device: device 0 has no entries
  EXPECT_TRUE(traces[0].arr.empty());
  const std::set<std::string> known = {"alloc",         "free_requested", "free_completed",
                                       "segment_alloc", "segment_free",   "segment_map",
                                       "segment_unmap", "snapshot",       "oom"};
  long long last_time = 0;
  int ooms = 0;
  for (const Json& e : traces[1].arr) {
    EXPECT_EQ(known.count(e["action"].str), 1u) << e["action"].str;
    bool oom = e["action"].str == "oom";
    ooms += oom;
    EXPECT_EQ(keys(e), (std::set<std::string>{"action", oom ? "device_free" : "addr", "size",
                                              "stream", "time_us", "frames"}));
    EXPECT_GE(e["time_us"].integer(), last_time);
    last_time = e["time_us"].integer();
    if (oom) {
      EXPECT_EQ(static_cast<size_t>(e["device_free"].integer()), free_at_oom);
      EXPECT_EQ(e["size"].integer(), static_cast<long long>(300 * MiB));
    }
  }
  EXPECT_EQ(ooms, 1);
  EXPECT_EQ(traces[1].arr.back()["action"].str, "snapshot");

  const Json& settings = j["allocator_settings"];
  EXPECT_EQ(settings["PYTORCH_CUDA_ALLOC_CONF"].str, "max_split_size_mb:64");
  EXPECT_EQ(settings["max_split_size"].integer(), static_cast<long long>(64 * MiB));
  EXPECT_EQ(settings["expandable_segments"].type, Json::Type::kBool);
  EXPECT_EQ(settings["garbage_collection_threshold"].type, Json::Type::kNumber);
  EXPECT_EQ(settings["roundup_power2_divisions"].keys.size(), 16u);
  EXPECT_TRUE(settings["roundup_power2_divisions"].has("32768"));

  a.free(small);
  a.free(large);
  a.free(pooled);
  a.release_pool(pool);
}

TEST(AllocSnapshot, TraceOrder) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  a.record_memory_history(true);
  void* p = a.malloc(1000);
  a.free(p);
  a.empty_cache();
  Snapshot s = a.memory_snapshot();
  EXPECT_EQ(actions(s), (std::vector<std::string>{"segment_alloc", "alloc", "free_requested",
                                                  "free_completed", "segment_free", "snapshot"}));
  const auto& t = s.device_traces[0];
  EXPECT_EQ(t[0].addr, reinterpret_cast<uintptr_t>(p));  // the block starts its segment
  EXPECT_EQ(t[0].size, 2 * MiB);
  EXPECT_EQ(t[1].size, 1000u);  // the request, not the rounded size
  EXPECT_EQ(t[4].size, 2 * MiB);

  // A cross-stream free completes only when its event has.
  void* q = a.malloc(1000, 1);
  a.record_stream(q, 2);
  a.free(q);
  std::vector<std::string> acts = actions(a.memory_snapshot());
  EXPECT_EQ(std::vector<std::string>(acts.end() - 4, acts.end()),
            (std::vector<std::string>{"segment_alloc", "alloc", "free_requested", "snapshot"}));
  dev.complete_stream(2);
  void* r = a.malloc(1000, 1);
  EXPECT_EQ(r, q);
  acts = actions(a.memory_snapshot());
  EXPECT_EQ(std::vector<std::string>(acts.end() - 3, acts.end()),
            (std::vector<std::string>{"free_completed", "alloc", "snapshot"}));
  a.free(r);
}

TEST(AllocSnapshot, RingBufferKeepsTheNewestEntries) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  a.free(a.malloc(4096));  // before recording: not in the history
  a.record_memory_history(true, 5);
  std::vector<uintptr_t> addrs;
  for (int i = 0; i < 10; ++i) {
    void* p = a.malloc(4096 * (i + 1));
    addrs.push_back(reinterpret_cast<uintptr_t>(p));
    a.free(p);
  }
  // Rounds i = 0..9 record alloc, free_requested, free_completed (entries 3i..3i+2), then the
  // snapshot records entry 30. A ring of 5 keeps entries 26..30.
  Snapshot s = a.memory_snapshot();
  ASSERT_EQ(s.device_traces[0].size(), 5u);
  EXPECT_EQ(actions(s), (std::vector<std::string>{"free_completed", "alloc", "free_requested",
                                                  "free_completed", "snapshot"}));
  EXPECT_EQ(s.device_traces[0][0].addr, addrs[8]);
  EXPECT_EQ(s.device_traces[0][0].size, 4096u * 9);
  EXPECT_EQ(s.device_traces[0][1].addr, addrs[9]);
  EXPECT_EQ(s.device_traces[0][1].size, 4096u * 10);
  // Turning history off drops it; turning it on starts afresh.
  a.record_memory_history(false);
  a.free(a.malloc(100));
  EXPECT_TRUE(a.memory_snapshot().device_traces[0].empty());
  a.record_memory_history(true, 100);
  a.free(a.malloc(100));
  EXPECT_EQ(actions(a.memory_snapshot()),
            (std::vector<std::string>{"alloc", "free_requested", "free_completed", "snapshot"}));
}

TEST(AllocSnapshot, ExpandableSegmentsAreReportedPerMappedRange) {
  FakeDevice::Options o;
  o.capacity = 256 * MiB;
  FakeDevice dev(o);
  CachingAllocator a(dev, AllocatorConfig::parse("expandable_segments:True"));
  a.record_memory_history(true);
  void* p = a.malloc(30 * MiB);
  Snapshot s = a.memory_snapshot();
  ASSERT_EQ(s.segments.size(), 1u);
  EXPECT_TRUE(s.segments[0].is_expandable);
  EXPECT_EQ(s.segments[0].total_size, 40 * MiB);
  EXPECT_EQ(actions(s), (std::vector<std::string>{"segment_map", "alloc", "snapshot"}));
  a.free(p);
  a.empty_cache();
  s = a.memory_snapshot();
  EXPECT_TRUE(s.segments.empty());
  EXPECT_EQ(actions(s).at(actions(s).size() - 2), "segment_unmap");
  Json j = parse_json(snapshot_to_json(s));
  EXPECT_TRUE(j["segments"].arr.empty());
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/kiln_alloc_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST(AllocSnapshot, DumpSnapshotWritesAtomically) {
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig{});
  void* p = a.malloc(5000);
  TempDir dir;
  std::string json_path = dir.path + "/snap.json";
  a.dump_snapshot(json_path);
  Json j = parse_json(read_file(json_path));
  EXPECT_EQ(j["segments"].arr.size(), 1u);
  a.free(p);
  a.empty_cache();
  a.dump_snapshot(json_path);  // replaces the old file
  EXPECT_TRUE(parse_json(read_file(json_path))["segments"].arr.empty());
  a.dump_snapshot(dir.path + "/snap.pickle");
  std::string pickle = read_file(dir.path + "/snap.pickle");
  ASSERT_GE(pickle.size(), 3u);
  EXPECT_EQ(pickle.substr(0, 2), std::string("\x80\x02"));
  EXPECT_EQ(pickle.back(), '.');
  // Only the two files: no temporary left behind.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2);
  try {
    a.dump_snapshot(dir.path + "/no/such/dir/snap.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir"), std::string::npos) << e.what();
  }
}

// The pickle and the JSON must describe the same tree; Python's own readers check both.
TEST(AllocSnapshot, PickleMatchesJsonInPython) {
  if (std::system("python3 -c 'import json, pickle' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 not available";
  }
  FakeDevice dev;
  CachingAllocator a(dev, AllocatorConfig::parse("roundup_power2_divisions:[256:1,>:4]"));
  a.record_memory_history(true, 100, [] { return "ctx \u00e9\t\"q\"\\"; });
  void* p = a.malloc(3000, 0x90000000);  // a value in [2^31, 2^32): pickle's 4-byte ints are signed
  void* q = a.malloc(64 * MiB, 0x7fff00001234);
  a.record_stream(q, 9);
  a.free(q);
  TempDir dir;
  Snapshot snap = a.memory_snapshot();
  write_file_atomically(dir.path + "/s.pickle", snapshot_to_pickle(snap));
  write_file_atomically(dir.path + "/s.json", snapshot_to_json(snap));
  std::string script = dir.path + "/check.py";
  {
    std::ofstream f(script);
    f << "import json, pickle, sys\n"
         "d = sys.argv[1]\n"
         "p = pickle.load(open(d + '/s.pickle', 'rb'))\n"
         "j = json.load(open(d + '/s.json'))\n"
         "def norm(x):\n"
         "    if isinstance(x, (list, tuple)): return [norm(v) for v in x]\n"
         "    if isinstance(x, dict): return {k: norm(v) for k, v in x.items()}\n"
         "    return x\n"
         "assert isinstance(p['segments'][0]['segment_pool_id'], tuple)\n"
         "assert norm(p) == norm(j), 'pickle and json differ'\n"
         "assert any(b['frames'] and b['frames'][0]['name'] == 'ctx \\u00e9\\t\"q\"\\\\'\n"
         "           for s in p['segments'] for b in s['blocks']), 'context lost'\n"
         "print('ok')\n";
  }
  std::string cmd = "python3 " + script + " " + dir.path + " > " + dir.path + "/out.txt 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << read_file(dir.path + "/out.txt");
  a.free(p);
}

}  // namespace
}  // namespace kiln::gpu
