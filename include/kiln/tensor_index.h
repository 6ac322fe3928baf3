// TensorIndex, Slice and Ellipsis: the pieces of PyTorch-style C++ tensor indexing
// (x.index({Slice(1, None, 2), idx, None, Ellipsis, mask}) is Python's x[1::2, idx, None, ...,
// mask]).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "kiln/tensor.h"

namespace kiln {

// Python's start:stop:step. Missing ends are the tensor's bounds; step must be > 0.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  std::optional<int64_t> step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_, step_;
};

// Python's `...`: as many full slices as needed to index every dim.
struct EllipsisIndexType {
  explicit constexpr EllipsisIndexType() = default;
};
inline constexpr EllipsisIndexType Ellipsis{};

// One entry of an index list: None (a new dim of size 1), Ellipsis (or "..."), an integer (selects
// and removes a dim), a bool (a new dim of size 1 or 0), a Slice, or a tensor (integer tensors are
// advanced indices; bool/uint8 tensors are masks over as many dims as they have).
class TensorIndex {
 public:
  enum class Kind : uint8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}                     // NOLINT
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}              // NOLINT
  TensorIndex(const char* s);                                            // NOLINT: only "..."
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}             // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}                // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

// `using namespace kiln::indexing;` brings the names in, as torch::indexing does.
namespace indexing {
using kiln::Ellipsis;
using kiln::None;
using kiln::Slice;
using kiln::TensorIndex;
}  // namespace indexing

}  // namespace kiln
