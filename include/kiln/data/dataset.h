// kiln::data datasets (torch.utils.data): Dataset (indexable examples), TensorDataset, and
// default_collate (stacking examples into a batch).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::data {

// One example, or one batch: a tuple of tensors (e.g. {input, target}).
using Example = std::vector<Tensor>;

// A map-style dataset: size() examples, get(i) for 0 <= i < size(). get must be safe to call
// from the data loader's background thread.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  // A whole batch at once, when the dataset can do better than get() + default_collate
  // (TensorDataset gathers rows directly). nullopt: use get() per index.
  virtual std::optional<Example> get_batch(const std::vector<int64_t>& /*indices*/) const {
    return std::nullopt;
  }
};

// Wraps tensors with equal size(0): example i is {t[i] for t in tensors}.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const override;
  Example get(int64_t index) const override;
  std::optional<Example> get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
};

// Stacks field k of every example along a new dim 0 (all examples must have the same number of
// fields, and field k the same shape, dtype and device everywhere).
Example default_collate(const std::vector<Example>& examples);

}  // namespace kiln::data
