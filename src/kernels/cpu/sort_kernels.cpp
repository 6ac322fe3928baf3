// CPU kernels of sort, topk, kthvalue, median/nanmedian and mode: one line along dim per task,
// through the order-preserving keys of Note [sort keys] (sort_keys.h).
#include "kernels/cpu/sort_kernels.h"

#include "core/dispatch_dtype.h"
#include "kernels/cpu/scan_lines.h"
#include "kernels/cpu/sort_keys.h"

namespace kiln::cpu {

using namespace kiln::detail;  // dtype masks
using sortk::Item;
using sortk::sort_key_t;

namespace {

int64_t line_len(const Tensor& x, int64_t dim) { return x.dim() == 0 ? 1 : x.size(dim); }

void check_len(int64_t n, const char* op) {
  KILN_CHECK(n < (int64_t(1) << 32), "[", op, "] lines of 2^32 or more elements are not supported");
}

// out = (values, indices): a stable sort of each line (NaN largest).
void sort_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const int64_t dim = c.attrs.i0, n = line_len(x, dim);
  check_len(n, "sort");
  const bool desc = c.attrs.flag;
  LineIter it(x, dim);
  it.add(c.out[0]);
  it.add(c.out[1]);
  it.add(x);
  dispatch_types<kRealMask>(x.dtype(), "sort", [&]<class T>() {
    using K = sort_key_t<T>;
    const int64_t sv = it.stride(0), si = it.stride(1), sx = it.stride(2);
    it.for_lines(n * 4, [&](int64_t b, int64_t e) {
      std::vector<Item<K>> items, tmp;
      for (int64_t l = b; l < e; ++l) {
        T* vo = it.data<T>(0, l);
        int64_t* io = it.data<int64_t>(1, l);
        const T* a = it.data<T>(2, l);
        sortk::load_items(a, sx, n, desc, items);
        sortk::sort_items(items, tmp);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t j = items[i].idx;
          vo[i * sv] = a[j * sx];
          io[i * si] = j;
        }
      }
    });
  });
}

// The k first items of the line in (key, index) order, sorted.
template <class K>
void select_sorted(std::vector<Item<K>>& items, int64_t k) {
  if (k < static_cast<int64_t>(items.size()))
    std::nth_element(items.begin(), items.begin() + k, items.end(), sortk::item_less<K>);
  std::sort(items.begin(), items.begin() + k, sortk::item_less<K>);
}

// out = (values, indices) of the k largest (flag) or smallest per line, sorted.
void topk_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  // A 0-dim input is one line of one element, copied for k = 0 too (as PyTorch).
  const int64_t dim = c.attrs.i0, n = line_len(x, dim), k = x.dim() == 0 ? 1 : c.attrs.i1;
  if (c.out[0].numel() == 0) return;
  check_len(n, "topk");
  LineIter it(c.out[0], dim);
  it.add(c.out[0]);
  it.add(c.out[1]);
  it.add(x);
  dispatch_types<kRealMask>(x.dtype(), "topk", [&]<class T>() {
    using K = sort_key_t<T>;
    const int64_t sv = it.stride(0), si = it.stride(1), sx = it.stride(2);
    it.for_lines(n * 2, [&](int64_t b, int64_t e) {
      std::vector<Item<K>> items;
      for (int64_t l = b; l < e; ++l) {
        T* vo = it.data<T>(0, l);
        int64_t* io = it.data<int64_t>(1, l);
        const T* a = it.data<T>(2, l);
        if (k * 64 <= n) {
          // Few wanted: one pass keeping the k best in a heap whose top is the worst kept.
          // Same (key, index) order as select_sorted, so the same result.
          items.clear();
          for (int64_t i = 0; i < n; ++i) {
            const K key = sortk::make_key(a[i * sx]);
            const Item<K> it{c.attrs.flag ? static_cast<K>(~key) : key, static_cast<uint32_t>(i)};
            if (static_cast<int64_t>(items.size()) < k) {
              items.push_back(it);
              std::push_heap(items.begin(), items.end(), sortk::item_less<K>);
            } else if (sortk::item_less(it, items.front())) {
              std::pop_heap(items.begin(), items.end(), sortk::item_less<K>);
              items.back() = it;
              std::push_heap(items.begin(), items.end(), sortk::item_less<K>);
            }
          }
          std::sort(items.begin(), items.end(), sortk::item_less<K>);
        } else {
          sortk::load_items(a, sx, n, c.attrs.flag, items);
          select_sorted(items, k);
        }
        for (int64_t i = 0; i < k; ++i) {
          vo[i * sv] = a[items[i].idx * sx];
          io[i * si] = items[i].idx;
        }
      }
    });
  });
}

// One (value, index) per line: kthvalue (i1 = k, 1-based), median (flag = ignore NaN), mode.
enum class Pick { Kth, Median, Mode };

template <Pick kPick>
void pick_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  const int64_t dim = c.attrs.i0, n = line_len(x, dim);
  check_len(n, op_name(c.op));
  LineIter it(c.out[0], dim);
  it.add(c.out[0]);
  it.add(c.out[1]);
  it.add(x);
  dispatch_types<kRealMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    using K = sort_key_t<T>;
    const int64_t sx = it.stride(2);
    it.for_lines(n * 2, [&](int64_t b, int64_t e) {
      std::vector<Item<K>> items, tmp;
      for (int64_t l = b; l < e; ++l) {
        const T* a = it.data<T>(2, l);
        int64_t pick = 0;
        if constexpr (kPick == Pick::Mode) {
          sortk::load_items(a, sx, n, false, items);
          sortk::sort_items(items, tmp);
          // The longest run of equal keys (the first, i.e. smallest value, among equally long
          // runs); its last element gives the index. Each NaN is its own run (NaN != NaN).
          int64_t best_len = 0, run = 0;
          for (int64_t i = 0; i < n; ++i) {
            ++run;
            const bool end = i == n - 1 || items[i].key != items[i + 1].key ||
                             sortk::is_nan(a[items[i].idx * sx]);
            if (end) {
              if (run > best_len) best_len = run, pick = items[i].idx;
              run = 0;
            }
          }
        } else {
          int64_t k = c.attrs.i1 - 1;  // kthvalue: 0-based rank
          if constexpr (kPick == Pick::Median) {
            int64_t valid = n, first_nan = -1;
            for (int64_t i = 0; i < n; ++i)
              if (sortk::is_nan(a[i * sx])) {
                --valid;
                if (first_nan < 0) first_nan = i;
              }
            if (first_nan >= 0 && (!c.attrs.flag || valid == 0)) {
              *it.data<T>(0, l) = a[first_nan * sx];
              *it.data<int64_t>(1, l) = first_nan;
              continue;
            }
            k = (valid - 1) / 2;
          }
          sortk::load_items(a, sx, n, false, items);
          std::nth_element(items.begin(), items.begin() + k, items.end(), sortk::item_less<K>);
          pick = items[k].idx;
        }
        *it.data<T>(0, l) = a[pick * sx];
        *it.data<int64_t>(1, l) = pick;
      }
    });
  });
}

}  // namespace

void register_sort_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Sort, kCPU, &sort_kernel);
  r.set(OpId::TopK, kCPU, &topk_kernel);
  r.set(OpId::KthValue, kCPU, &pick_kernel<Pick::Kth>);
  r.set(OpId::Median, kCPU, &pick_kernel<Pick::Median>);
  r.set(OpId::Mode, kCPU, &pick_kernel<Pick::Mode>);
  register_sort_stats_kernels(r);
}

}  // namespace kiln::cpu
