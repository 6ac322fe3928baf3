// Tensor printing options (torch.set_printoptions). The printing itself is Tensor::str() and
// operator<<, which produce PyTorch's text with `kiln.` in place of `torch.` in dtype names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

struct PrintOptions {
  int precision = 4;             // digits after the decimal point of floating values
  int64_t threshold = 1000;      // more elements than this: print edgeitems per dim and "..."
  int64_t edgeitems = 3;         // items kept at each end of a summarized dim
  int64_t linewidth = 80;        // characters per line before wrapping
  std::optional<bool> sci_mode;  // nullopt: fixed or scientific chosen per tensor
};

// As torch.set_printoptions: arguments left as nullopt keep their current value, except
// sci_mode, which is always assigned (nullopt restores the automatic choice), as in PyTorch.
void set_printoptions(std::optional<int> precision = std::nullopt,
                      std::optional<int64_t> threshold = std::nullopt,
                      std::optional<int64_t> edgeitems = std::nullopt,
                      std::optional<int64_t> linewidth = std::nullopt,
                      std::optional<bool> sci_mode = std::nullopt);
// Applies one of PyTorch's profiles: "default", "short" (precision 2, edgeitems 2) or "full"
// (no summarization). Also resets sci_mode to automatic.
void set_printoptions_profile(const std::string& profile);
void set_printoptions(const PrintOptions& options);
PrintOptions get_printoptions();

// Restores the print options it found when it goes out of scope (torch.printoptions(...)).
class PrintOptionsGuard {
 public:
  PrintOptionsGuard() : saved_(get_printoptions()) {}
  explicit PrintOptionsGuard(const PrintOptions& options) : saved_(get_printoptions()) {
    set_printoptions(options);
  }
  ~PrintOptionsGuard() { set_printoptions(saved_); }
  PrintOptionsGuard(const PrintOptionsGuard&) = delete;
  PrintOptionsGuard& operator=(const PrintOptionsGuard&) = delete;

 private:
  PrintOptions saved_;
};

}  // namespace kiln
