// kiln::OrderedDict<V>: string-keyed map that keeps insertion order (state dicts, parameters,
// submodules). Lookup is O(1) through an index; iteration yields items in insertion order.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/error.h"

namespace kiln {

template <class V>
class OrderedDict {
 public:
  struct Item {
    std::string key;
    V value;
  };

  OrderedDict() = default;
  OrderedDict(std::initializer_list<std::pair<std::string, V>> items) {
    for (auto& kv : items) insert(kv.first, kv.second);
  }

  // Inserts a new key (error if present). Returns the stored value.
  V& insert(std::string key, V value) {
    KILN_CHECK(!index_.count(key), "[OrderedDict] key '", key, "' already present");
    index_.emplace(key, items_.size());
    items_.push_back(Item{std::move(key), std::move(value)});
    return items_.back().value;
  }
  // Inserts or overwrites (keeping the original position).
  V& insert_or_assign(std::string key, V value) {
    auto it = index_.find(key);
    if (it != index_.end()) return items_[it->second].value = std::move(value);
    return insert(std::move(key), std::move(value));
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].value;
  }
  V& operator[](const std::string& key) {
    V* v = find(key);
    KILN_CHECK(v, "[OrderedDict] no key '", key, "'");
    return *v;
  }
  const V& operator[](const std::string& key) const {
    const V* v = find(key);
    KILN_CHECK(v, "[OrderedDict] no key '", key, "'");
    return *v;
  }
  // Removes a key (no-op when absent); later items keep their order.
  void erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return;
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
    reindex();
  }
  void clear() {
    items_.clear();
    index_.clear();
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (auto& it : items_) k.push_back(it.key);
    return k;
  }
  std::vector<V> values() const {
    std::vector<V> v;
    v.reserve(items_.size());
    for (auto& it : items_) v.push_back(it.value);
    return v;
  }
  const std::vector<Item>& items() const { return items_; }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  void reindex() {
    index_.clear();
    for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].key, i);
  }
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace kiln
