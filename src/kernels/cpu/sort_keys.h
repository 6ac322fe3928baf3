// Note [sort keys]: every real dtype maps to an unsigned key whose order is PyTorch's sort order:
// NaN is the largest value (all NaNs equal), -0.0 equals +0.0, and ~key reverses the order
// (descending) while keeping equal keys equal, so one stable key sort (LSD radix for long lines,
// std::stable_sort for short ones) serves ascending and descending sorts alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/convert.h"

namespace kiln::cpu::sortk {

template <size_t N>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = uint8_t;
};
template <>
struct UIntOf<2> {
  using type = uint16_t;
};
template <>
struct UIntOf<4> {
  using type = uint32_t;
};
template <>
struct UIntOf<8> {
  using type = uint64_t;
};

template <class T>
using sort_key_t = typename UIntOf<sizeof(T)>::type;

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || detail::is_reduced_float_v<T>;

template <class T>
inline bool is_nan(T v) {
  if constexpr (is_float_v<T>)
    return std::isnan(detail::convert<double>(v));
  else
    return false;
}

// Order-preserving unsigned key of v (ascending).
template <class T>
inline sort_key_t<T> make_key(T v) {
  using K = sort_key_t<T>;
  constexpr K sign = K(1) << (sizeof(K) * 8 - 1);
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<K>(v ? 1 : 0);
  } else if constexpr (is_float_v<T>) {
    if (is_nan(v)) return static_cast<K>(~K(0));
    if (detail::convert<double>(v) == 0.0) return sign;  // -0.0 == +0.0
    K u;
    std::memcpy(&u, &v, sizeof(K));
    return (u & sign) ? static_cast<K>(~u) : static_cast<K>(u | sign);
  } else if constexpr (std::is_signed_v<T>) {
    K u;
    std::memcpy(&u, &v, sizeof(K));
    return static_cast<K>(u ^ sign);
  } else {
    return static_cast<K>(v);
  }
}

template <class K>
struct Item {
  K key;
  uint32_t idx;
};

// Stable sort of items by key (ties keep their order). `tmp` is scratch of the same size.
template <class K>
void sort_items(std::vector<Item<K>>& items, std::vector<Item<K>>& tmp) {
  const size_t n = items.size();
  if (n < 2) return;
  if (n < 256) {
    std::stable_sort(items.begin(), items.end(),
                     [](const Item<K>& a, const Item<K>& b) { return a.key < b.key; });
    return;
  }
  // LSD radix, 8 bits per pass; passes where every key shares the digit are skipped.
  constexpr int kPasses = sizeof(K);
  std::vector<uint32_t> hist(static_cast<size_t>(kPasses) * 256, 0);
  for (const Item<K>& it : items)
    for (int p = 0; p < kPasses; ++p) ++hist[p * 256 + ((it.key >> (8 * p)) & 0xFF)];
  tmp.resize(n);
  Item<K>* src = items.data();
  Item<K>* dst = tmp.data();
  for (int p = 0; p < kPasses; ++p) {
    uint32_t* h = &hist[p * 256];
    bool trivial = false;
    for (int d = 0; d < 256; ++d)
      if (h[d] == n) trivial = true;
    if (trivial) continue;
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      const uint32_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    const int shift = 8 * p;
    for (size_t i = 0; i < n; ++i) {
      const Item<K> it = src[i];
      dst[h[(it.key >> shift) & 0xFF]++] = it;
    }
    std::swap(src, dst);
  }
  if (src != items.data()) std::memcpy(items.data(), src, n * sizeof(Item<K>));
}

// Fills items with the keys of line a (n elements, stride s); descending flips the keys.
template <class T>
void load_items(const T* a, int64_t s, int64_t n, bool descending,
                std::vector<Item<sort_key_t<T>>>& items) {
  items.resize(n);
  if (descending) {
    for (int64_t i = 0; i < n; ++i)
      items[i] = {static_cast<sort_key_t<T>>(~make_key(a[i * s])), static_cast<uint32_t>(i)};
  } else {
    for (int64_t i = 0; i < n; ++i) items[i] = {make_key(a[i * s]), static_cast<uint32_t>(i)};
  }
}

// (key, index) order: a total order, so selections are deterministic.
template <class K>
inline bool item_less(const Item<K>& a, const Item<K>& b) {
  return a.key < b.key || (a.key == b.key && a.idx < b.idx);
}

}  // namespace kiln::cpu::sortk
