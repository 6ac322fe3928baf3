// Helpers for extra_repr(): numbers, bools and tuples printed the way Python prints them.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/array_ref.h"

namespace kiln::nn::repr {

// Python's repr(float): the shortest digits that read back, "1e-05", "0.5", "1.0".
inline std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::abs(v) < 1e16) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  char buf[40];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

inline std::string py_bool(bool b) { return b ? "True" : "False"; }

// "(a, b)" or "(a,)" for one element.
inline std::string py_tuple(IntArrayRef v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}

}  // namespace kiln::nn::repr
