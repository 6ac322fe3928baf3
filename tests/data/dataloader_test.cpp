// DataLoader and datasets: order, batch sizes, drop_last, seeded shuffling, the background
// prefetch thread (same batches as loading inline, errors propagated, early exit), collation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "kiln/data/data.h"
#include "kiln/ops.h"

using namespace kiln;
using namespace kiln::data;

namespace {

// Rows i of x are [i, 10 i], targets are i.
std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor i = kiln::arange(n, TensorOptions(kInt64));
  Tensor x = kiln::arange(n, TensorOptions(kFloat32)).unsqueeze(1).mul(kiln::tensor({1.0f, 10.0f}));
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x, i});
}

std::vector<int64_t> ids(const Example& batch) {
  Tensor t = batch[1].contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

std::vector<std::vector<int64_t>> epoch(DataLoader& dl) {
  std::vector<std::vector<int64_t>> out;
  for (auto& b : dl) {
    auto v = ids(b);
    // The features travel with their ids.
    for (size_t k = 0; k < v.size(); ++k) {
      EXPECT_EQ(b[0].select(0, static_cast<int64_t>(k)).select(0, 1).item<double>(),
                10.0 * static_cast<double>(v[k]));
    }
    out.push_back(v);
  }
  return out;
}

// A dataset built from get() only (exercises default_collate), optionally failing at one index.
class Squares : public Dataset {
 public:
  explicit Squares(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  Example get(int64_t i) const override {
    KILN_CHECK(i != fail_at_, "[Squares] broken example ", i);
    return {kiln::full({2}, static_cast<double>(i * i)), kiln::full({}, i, TensorOptions(kInt64))};
  }

 private:
  int64_t n_, fail_at_;
};

}  // namespace

TEST(TensorDataset, Basics) {
  auto ds = numbered(5);
  EXPECT_EQ(ds->size(), 5);
  auto e = ds->get(3);
  EXPECT_EQ(e[1].item<int64_t>(), 3);
  EXPECT_EQ(e[0].select(0, 1).item<double>(), 30.0);
  EXPECT_THROW(ds->get(5), Error);
  EXPECT_THROW(TensorDataset({kiln::zeros({3}), kiln::zeros({4})}), Error);
}

TEST(DataLoader, SequentialBatchesAndLastPartialBatch) {
  for (int64_t prefetch : {0, 1, 3}) {
    DataLoader dl(numbered(10), DataLoaderOptions().set_batch_size(4).set_prefetch(prefetch));
    EXPECT_EQ(dl.size(), 3);
    auto e = epoch(dl);
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[0], (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(e[2], (std::vector<int64_t>{8, 9}));
  }
}

TEST(DataLoader, DropLast) {
  DataLoader dl(numbered(10), DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_EQ(dl.size(), 2);
  auto e = epoch(dl);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1], (std::vector<int64_t>{4, 5, 6, 7}));
  DataLoader tiny(numbered(3), DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_EQ(tiny.size(), 0);
  EXPECT_TRUE(epoch(tiny).empty());
}

TEST(DataLoader, SeededShuffleIsAReproduciblePermutation) {
  auto run = [](uint64_t seed, int64_t prefetch) {
    Generator g;
    g.manual_seed(seed);
    DataLoader dl(
        numbered(23),
        DataLoaderOptions().set_batch_size(5).set_shuffle(true).set_generator(g).set_prefetch(
            prefetch));
    return std::make_pair(epoch(dl), epoch(dl));
  };
  auto [e1, e2] = run(7, 2);
  std::vector<int64_t> all;
  for (auto& b : e1) all.insert(all.end(), b.begin(), b.end());
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(sorted[i], i);  // a permutation
  std::vector<int64_t> identity(23);
  for (int64_t i = 0; i < 23; ++i) identity[i] = i;
  EXPECT_NE(all, identity);
  EXPECT_NE(e1, e2);  // each epoch draws a new order
  auto [f1, f2] = run(7, 0);
  EXPECT_EQ(e1, f1);  // same seed, same orders, with or without the background thread
  EXPECT_EQ(e2, f2);
  auto [g1, g2] = run(8, 2);
  EXPECT_NE(e1, g1);
}

TEST(DataLoader, UnseededShuffleFollowsTheDefaultGenerator) {
  auto run = [] {
    kiln::manual_seed(99);
    DataLoader dl(numbered(12), DataLoaderOptions().set_batch_size(12).set_shuffle(true));
    return epoch(dl);
  };
  EXPECT_EQ(run(), run());
}

TEST(DataLoader, DefaultCollateOfGetExamples) {
  DataLoader dl(std::make_shared<Squares>(7), DataLoaderOptions().set_batch_size(3));
  int64_t seen = 0;
  for (auto& b : dl) {
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].dim(), 2);
    EXPECT_EQ(b[0].size(1), 2);
    for (int64_t k = 0; k < b[1].size(0); ++k) {
      int64_t i = b[1].select(0, k).item<int64_t>();
      EXPECT_EQ(i, seen++);
      EXPECT_EQ(b[0].select(0, k).select(0, 1).item<double>(), static_cast<double>(i * i));
    }
  }
  EXPECT_EQ(seen, 7);
}

TEST(DataLoader, CustomCollate) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.collate_fn = [](const std::vector<Example>& ex) {
    return Example{kiln::full({}, static_cast<int64_t>(ex.size()), TensorOptions(kInt64))};
  };
  DataLoader dl(std::make_shared<Squares>(6), o);
  std::vector<int64_t> sizes;
  for (auto& b : dl) sizes.push_back(b[0].item<int64_t>());
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 2}));
}

TEST(DataLoader, ErrorsFromTheBackgroundThreadAreRethrown) {
  for (int64_t prefetch : {0, 2}) {
    DataLoader dl(std::make_shared<Squares>(10, 6),
                  DataLoaderOptions().set_batch_size(2).set_prefetch(prefetch));
    int batches = 0;
    try {
      for (auto& b : dl) {
        (void)b;
        ++batches;
      }
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("broken example 6"), std::string::npos);
    }
    EXPECT_EQ(batches, 3);  // batches 0..2 came out; batch 3 holds index 6
  }
  EXPECT_THROW(DataLoader(numbered(3), DataLoaderOptions().set_batch_size(0)), Error);
  EXPECT_THROW(DataLoader(nullptr), Error);
}

TEST(DataLoader, EarlyExitAndRestartDoNotHang) {
  DataLoader dl(numbered(100), DataLoaderOptions().set_batch_size(2).set_prefetch(4));
  for (int round = 0; round < 3; ++round) {
    int n = 0;
    for (auto& b : dl) {
      (void)b;
      if (++n == 3) break;
    }
    EXPECT_EQ(n, 3);
  }
  // A loader destroyed mid-epoch joins its thread.
  {
    DataLoader dl2(numbered(100), DataLoaderOptions().set_batch_size(1).set_prefetch(2));
    auto it = dl2.begin();
    EXPECT_EQ(ids(*it), std::vector<int64_t>{0});
  }
}

TEST(DataLoader, PinMemoryWithoutGpuIsANoOp) {
  DataLoader dl(numbered(4), DataLoaderOptions().set_batch_size(2).set_pin_memory(true).set_device(
                                 Device(kCPU)));
  auto e = epoch(dl);
  EXPECT_EQ(e.size(), 2u);
}
