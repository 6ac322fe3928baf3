// kiln::data::DataLoader (torch.utils.data.DataLoader): batches a Dataset in order or in a seeded
// random order, optionally dropping the last partial batch, preparing batches ahead on a
// background thread and pinning them for fast copies to a GPU.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "kiln/data/dataset.h"
#include "kiln/random.h"

namespace kiln::data {

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  // The shuffle's randomness: each epoch draws a permutation from this generator (so a seeded
  // generator repeats the epochs' orders). Without one, each epoch seeds a private generator
  // from kiln's default cpu generator (as PyTorch's RandomSampler does).
  std::optional<Generator> generator;
  bool drop_last = false;
  // Batches prepared ahead by one background thread; 0 loads each batch on the calling thread.
  int64_t prefetch = 2;
  // Page-locks batches on the background thread (when a GPU is present; otherwise a no-op) so
  // copies to `device` can be asynchronous. A cuda `device` implies it.
  bool pin_memory = false;
  // Where batches are delivered (copied with non_blocking when pinned); nullopt: left on the
  // dataset's device. Differs from PyTorch, whose loader never moves batches itself.
  std::optional<Device> device;
  // Builds a batch from examples; default_collate when empty.
  std::function<Example(const std::vector<Example>&)> collate_fn;

  DataLoaderOptions& set_batch_size(int64_t v) {
    batch_size = v;
    return *this;
  }
  DataLoaderOptions& set_shuffle(bool v) {
    shuffle = v;
    return *this;
  }
  DataLoaderOptions& set_generator(Generator g) {
    generator = g;
    return *this;
  }
  DataLoaderOptions& set_drop_last(bool v) {
    drop_last = v;
    return *this;
  }
  DataLoaderOptions& set_prefetch(int64_t v) {
    prefetch = v;
    return *this;
  }
  DataLoaderOptions& set_pin_memory(bool v) {
    pin_memory = v;
    return *this;
  }
  DataLoaderOptions& set_device(Device d) {
    device = d;
    return *this;
  }
};

namespace detail {
class Epoch;
}

// for (auto& batch : loader) { batch[0] ... }. Each begin() starts a new epoch (a new order
// when shuffling) and ends the previous one. Errors thrown while loading a batch (also on the
// background thread) are rethrown where that batch is taken.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches per epoch (len(loader)).
  int64_t size() const;
  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

  class Iterator {
   public:
    using value_type = Example;
    Iterator() = default;
    const Example& operator*() const { return current_; }
    const Example* operator->() const { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& o) const { return done() == o.done(); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::Epoch> epoch);
    bool done() const { return !epoch_; }
    std::shared_ptr<detail::Epoch> epoch_;
    Example current_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

 private:
  std::vector<int64_t> epoch_order();
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<detail::Epoch> current_;
};

}  // namespace kiln::data
