// TensorDataset and default_collate.
#include "kiln/data/dataset.h"

#include <sstream>

#include "kiln/ops/factories.h"
#include "nn/grad_scope.h"

namespace kiln::data {

namespace {
std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os.str() + "]";
}
}  // namespace

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  KILN_CHECK(!tensors_.empty(), "[TensorDataset] needs at least one tensor");
  for (size_t i = 0; i < tensors_.size(); ++i) {
    KILN_CHECK(tensors_[i].defined() && tensors_[i].dim() >= 1, "[TensorDataset] tensor ", i,
               " must be defined and have at least one dimension");
    KILN_CHECK(tensors_[i].size(0) == tensors_[0].size(0),
               "[TensorDataset] size mismatch between tensors: tensor 0 has ", tensors_[0].size(0),
               " rows, tensor ", i, " has ", tensors_[i].size(0));
  }
}

int64_t TensorDataset::size() const { return tensors_[0].size(0); }

Example TensorDataset::get(int64_t index) const {
  KILN_CHECK(index >= 0 && index < size(), "[TensorDataset] index ", index,
             " out of range for a dataset of size ", size());
  Example e;
  for (auto& t : tensors_) e.push_back(t.select(0, index));
  return e;
}

std::optional<Example> TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  kiln::detail::NoGradScope ng;
  const int64_t n = size(), b = static_cast<int64_t>(indices.size());
  for (int64_t i : indices)
    KILN_CHECK(i >= 0 && i < n, "[TensorDataset] index ", i, " out of range for a dataset of size ",
               n);
  Example out;
  for (auto& t : tensors_) {
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    shape[0] = b;
    Tensor batch = kiln::empty(shape, t.options());
    // Runs of consecutive indices (the unshuffled case) are copied as one slice.
    int64_t j = 0;
    while (j < b) {
      int64_t k = j + 1;
      while (k < b && indices[k] == indices[k - 1] + 1) ++k;
      batch.narrow(0, j, k - j).copy_(t.narrow(0, indices[j], k - j));
      j = k;
    }
    out.push_back(batch);
  }
  return out;
}

Example default_collate(const std::vector<Example>& examples) {
  KILN_CHECK(!examples.empty(), "[default_collate] no examples");
  kiln::detail::NoGradScope ng;
  const size_t fields = examples[0].size();
  Example out;
  for (size_t f = 0; f < fields; ++f) {
    const Tensor& first = examples[0][f];
    KILN_CHECK(first.defined(), "[default_collate] field ", f, " of example 0 is undefined");
    std::vector<int64_t> shape{static_cast<int64_t>(examples.size())};
    shape.insert(shape.end(), first.sizes().begin(), first.sizes().end());
    Tensor batch = kiln::empty(shape, first.options());
    for (size_t i = 0; i < examples.size(); ++i) {
      KILN_CHECK(examples[i].size() == fields, "[default_collate] example ", i, " has ",
                 examples[i].size(), " fields, example 0 has ", fields);
      const Tensor& t = examples[i][f];
      KILN_CHECK(t.defined() && t.sizes() == first.sizes() && t.dtype() == first.dtype() &&
                     t.device() == first.device(),
                 "[default_collate] field ", f, " of example ", i, " (shape ",
                 t.defined() ? shape_str(t.sizes()) : "undefined", ") does not match example 0 (",
                 shape_str(first.sizes()), ", ", first.dtype(), ")");
      batch.select(0, static_cast<int64_t>(i)).copy_(t);
    }
    out.push_back(batch);
  }
  return out;
}

}  // namespace kiln::data
