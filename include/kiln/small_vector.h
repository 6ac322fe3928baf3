// SmallVector: a vector with inline storage for the common case (shapes, strides, op inputs).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <new>
#include <utility>

#include "kiln/array_ref.h"

namespace kiln {

template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, const T& v = T()) { assign(n, v); }
  SmallVector(std::initializer_list<T> il) { append(il.begin(), il.end()); }
  template <class It, class = decltype(*std::declval<It>())>
  SmallVector(It b, It e) {
    append(b, e);
  }
  SmallVector(ArrayRef<T> a) { append(a.begin(), a.end()); }  // NOLINT
  SmallVector(const SmallVector& o) { append(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { move_from(std::move(o)); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) {
      clear();
      append(o.begin(), o.end());
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      destroy();
      move_from(std::move(o));
    }
    return *this;
  }
  ~SmallVector() { destroy(); }

  T* data() { return ptr(); }
  const T* data() const { return ptr(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return ptr(); }
  T* end() { return ptr() + size_; }
  const T* begin() const { return ptr(); }
  const T* end() const { return ptr() + size_; }
  T& operator[](size_t i) { return ptr()[i]; }
  const T& operator[](size_t i) const { return ptr()[i]; }
  T& back() { return ptr()[size_ - 1]; }
  const T& back() const { return ptr()[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(ptr(), size_); }  // NOLINT
  ArrayRef<T> ref() const { return ArrayRef<T>(ptr(), size_); }

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void push_back(const T& v) {
    if (size_ == cap_) grow(cap_ * 2);
    new (ptr() + size_) T(v);
    ++size_;
  }
  void push_back(T&& v) {
    if (size_ == cap_) grow(cap_ * 2);
    new (ptr() + size_) T(std::move(v));
    ++size_;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    if (size_ == cap_) grow(cap_ * 2);
    T* p = new (ptr() + size_) T(std::forward<A>(a)...);
    ++size_;
    return *p;
  }
  void pop_back() { ptr()[--size_].~T(); }
  void clear() {
    for (size_t i = 0; i < size_; ++i) ptr()[i].~T();
    size_ = 0;
  }
  void resize(size_t n, const T& v = T()) {
    if (n < size_) {
      for (size_t i = n; i < size_; ++i) ptr()[i].~T();
      size_ = n;
      return;
    }
    reserve(n);
    for (size_t i = size_; i < n; ++i) new (ptr() + i) T(v);
    size_ = n;
  }
  void assign(size_t n, const T& v) {
    clear();
    resize(n, v);
  }
  template <class It>
  void append(It b, It e) {
    for (; b != e; ++b) push_back(*b);
  }
  T* insert(T* pos, const T& v) {
    size_t idx = pos - begin();
    push_back(v);
    std::rotate(begin() + idx, end() - 1, end());
    return begin() + idx;
  }
  T* erase(T* pos) {
    std::move(pos + 1, end(), pos);
    pop_back();
    return pos;
  }
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  T* ptr() { return heap_ ? heap_ : reinterpret_cast<T*>(inline_); }
  const T* ptr() const { return heap_ ? heap_ : reinterpret_cast<const T*>(inline_); }
  void grow(size_t n) {
    n = std::max<size_t>(n, N + 1);
    T* fresh = static_cast<T*>(::operator new(n * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      new (fresh + i) T(std::move(ptr()[i]));
      ptr()[i].~T();
    }
    if (heap_) ::operator delete(heap_);
    heap_ = fresh;
    cap_ = n;
  }
  void destroy() {
    clear();
    if (heap_) ::operator delete(heap_);
    heap_ = nullptr;
    cap_ = N;
  }
  void move_from(SmallVector&& o) {
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.heap_ = nullptr;
      o.cap_ = N;
      o.size_ = 0;
    } else {
      for (size_t i = 0; i < o.size_; ++i) push_back(std::move(o.ptr()[i]));
      o.clear();
    }
  }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* heap_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = N;
};

// Shapes and strides: 6 dims inline covers nearly every tensor without a heap allocation.
using DimVector = SmallVector<int64_t, 6>;

}  // namespace kiln
