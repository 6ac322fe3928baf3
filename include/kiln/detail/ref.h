// Ref<T>: an intrusive reference-counted pointer (one atomic increment per copy, no control block).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace kiln::detail {

struct RefCounted {
  mutable std::atomic<int32_t> refcount_{0};
};

template <class T>
class Ref {
 public:
  Ref() = default;
  explicit Ref(T* p) : p_(p) {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(const Ref& o) : p_(o.p_) {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(const Ref& o) {
    Ref(o).swap(*this);
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    Ref(std::move(o)).swap(*this);
    return *this;
  }
  ~Ref() { release(); }

  template <class... A>
  static Ref make(A&&... a) {
    return Ref(new T(std::forward<A>(a)...));
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int32_t use_count() const { return p_ ? p_->refcount_.load(std::memory_order_relaxed) : 0; }
  void swap(Ref& o) noexcept { std::swap(p_, o.p_); }
  void reset() { Ref().swap(*this); }
  bool operator==(const Ref& o) const { return p_ == o.p_; }

 private:
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  T* p_ = nullptr;
};

}  // namespace kiln::detail
