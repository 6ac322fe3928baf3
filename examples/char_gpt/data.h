// The char_gpt corpus: a text file read whole, its sorted character vocabulary, a 90/10
// train/validation split, and random [B, T] batches of (input, next-character target).
#pragma once

#include <kiln/kiln.h>

#include <array>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace char_gpt {

class Corpus {
 public:
  explicit Corpus(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    KILN_CHECK(f.good(), "[char_gpt] cannot open corpus '", path, "'");
    std::stringstream ss;
    ss << f.rdbuf();
    text_ = ss.str();
    KILN_CHECK(text_.size() >= 1024, "[char_gpt] corpus '", path, "' has only ", text_.size(),
               " bytes; need at least 1024");
    std::array<bool, 256> seen{};
    for (unsigned char ch : text_) seen[ch] = true;
    for (int ch = 0; ch < 256; ++ch)
      if (seen[ch]) {
        index_[ch] = static_cast<int64_t>(chars_.size());
        chars_.push_back(static_cast<char>(ch));
      }
    ids_.reserve(text_.size());
    for (unsigned char ch : text_) ids_.push_back(index_[ch]);
    split_ = static_cast<int64_t>(ids_.size() * 9 / 10);
  }

  int64_t vocab() const { return static_cast<int64_t>(chars_.size()); }
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }
  int64_t encode(char ch) const { return index_[static_cast<unsigned char>(ch)]; }
  char decode(int64_t id) const { return chars_[static_cast<size_t>(id)]; }

  // B random windows of T+1 characters from the train (or validation) part: inputs and targets.
  std::pair<kiln::Tensor, kiln::Tensor> batch(bool train, int64_t B, int64_t T,
                                              std::mt19937_64& rng, kiln::Device device) const {
    const int64_t lo = train ? 0 : split_, hi = train ? split_ : size();
    KILN_CHECK(hi - lo > T + 1, "[char_gpt] the ", train ? "train" : "validation",
               " split is shorter than the context ", T);
    std::uniform_int_distribution<int64_t> pick(lo, hi - T - 2);
    std::vector<int64_t> x(static_cast<size_t>(B * T)), y(x.size());
    for (int64_t b = 0; b < B; ++b) {
      const int64_t o = pick(rng);
      for (int64_t t = 0; t < T; ++t) {
        x[b * T + t] = ids_[o + t];
        y[b * T + t] = ids_[o + t + 1];
      }
    }
    // To a GPU through pinned memory, asynchronously (the pinned block is reused only after the
    // copy finished).
    auto to = [&](std::vector<int64_t>& v) {
      kiln::Tensor t = kiln::from_vector(v, {B, T});
      return device.is_cuda() ? t.pin_memory().to(device, /*non_blocking=*/true) : t;
    };
    return {to(x), to(y)};
  }

 private:
  std::string text_;
  std::vector<char> chars_;
  std::array<int64_t, 256> index_{};
  std::vector<int64_t> ids_;
  int64_t split_ = 0;
};

}  // namespace char_gpt
