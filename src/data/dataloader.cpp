// DataLoader: epoch orders, batching, and the background prefetch thread (detail::Epoch).
#include "kiln/data/dataloader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "kiln/cuda.h"
#include "kiln/ops/random.h"
#include "nn/grad_scope.h"

namespace kiln::data {

namespace detail {

// One pass over the data. With prefetch > 0 a thread loads batches into a queue of at most
// `prefetch` entries; the consumer takes them in order. Destruction stops and joins the thread.
class Epoch {
 public:
  Epoch(std::shared_ptr<Dataset> ds, const DataLoaderOptions& o, std::vector<int64_t> order,
        int64_t num_batches)
      : ds_(std::move(ds)), o_(o), order_(std::move(order)), num_batches_(num_batches) {
    pin_ = (o_.pin_memory || (o_.device && o_.device->is_cuda())) && cuda::is_available();
    if (o_.prefetch > 0 && num_batches_ > 0) thread_ = std::thread([this] { run(); });
  }
  ~Epoch() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // The next batch, or nullopt after the last one.
  std::optional<Example> next() {
    if (taken_ >= num_batches_) return std::nullopt;
    Example batch;
    if (o_.prefetch <= 0) {
      int64_t b = taken_++;
      batch = load(b);
    } else {
      Item item;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return !queue_.empty(); });
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      cv_.notify_all();
      ++taken_;
      if (item.error) {
        taken_ = num_batches_;
        std::rethrow_exception(item.error);
      }
      batch = std::move(item.batch);
    }
    if (o_.device) {
      for (auto& t : batch)
        if (t.defined() && t.device() != *o_.device) t = t.to(*o_.device, pin_);
    }
    return batch;
  }

 private:
  struct Item {
    Example batch;
    std::exception_ptr error;
  };

  Example load(int64_t b) {
    kiln::detail::NoGradScope ng;
    const int64_t n = static_cast<int64_t>(order_.size());
    const int64_t begin = b * o_.batch_size, end = std::min(n, begin + o_.batch_size);
    std::vector<int64_t> idx(order_.begin() + begin, order_.begin() + end);
    Example batch;
    std::optional<Example> fast;
    if (!o_.collate_fn) fast = ds_->get_batch(idx);
    if (fast) {
      batch = std::move(*fast);
    } else {
      std::vector<Example> examples;
      examples.reserve(idx.size());
      for (int64_t i : idx) examples.push_back(ds_->get(i));
      batch = o_.collate_fn ? o_.collate_fn(examples) : default_collate(examples);
    }
    if (pin_) {
      for (auto& t : batch)
        if (t.defined() && t.is_cpu()) t = kiln::detail::pin_memory(t);
    }
    return batch;
  }

  void run() {
    for (int64_t b = 0; b < num_batches_; ++b) {
      Item item;
      try {
        item.batch = load(b);
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(item.error);
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || static_cast<int64_t>(queue_.size()) < o_.prefetch; });
        if (stop_) return;
        queue_.push_back(std::move(item));
      }
      cv_.notify_all();
      if (failed) return;
    }
  }

  std::shared_ptr<Dataset> ds_;
  DataLoaderOptions o_;
  std::vector<int64_t> order_;
  int64_t num_batches_;
  bool pin_ = false;
  int64_t taken_ = 0;  // consumer side only
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace detail

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  KILN_CHECK(dataset_, "[DataLoader] dataset is null");
  KILN_CHECK(options_.batch_size > 0, "[DataLoader] batch_size should be a positive integer, got ",
             options_.batch_size);
  KILN_CHECK(options_.prefetch >= 0, "[DataLoader] prefetch must be >= 0, got ", options_.prefetch);
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::size() const {
  const int64_t n = dataset_->size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::epoch_order() {
  const int64_t n = dataset_->size();
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (!options_.shuffle) {
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    return order;
  }
  Generator g;
  if (options_.generator) {
    g = *options_.generator;
  } else {
    int64_t seed =
        kiln::randint(0, INT64_MAX, {}, default_generator(), TensorOptions(kInt64)).item<int64_t>();
    g.manual_seed(static_cast<uint64_t>(seed));
  }
  Tensor perm = kiln::randperm(n, g, TensorOptions(kInt64));
  const int64_t* p = perm.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) order[i] = p[i];
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  current_.reset();  // ends the previous epoch (joins its thread)
  current_ = std::make_shared<detail::Epoch>(dataset_, options_, epoch_order(), size());
  return Iterator(current_);
}

DataLoader::Iterator::Iterator(std::shared_ptr<detail::Epoch> epoch) : epoch_(std::move(epoch)) {
  ++*this;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (!epoch_) return *this;
  auto b = epoch_->next();
  if (b) {
    current_ = std::move(*b);
  } else {
    epoch_.reset();
    current_.clear();
  }
  return *this;
}

}  // namespace kiln::data
