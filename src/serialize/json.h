// A small, defensive JSON reader/writer for file headers (safetensors): bounded recursion,
// every read bounds-checked, duplicate object keys rejected; errors are kiln::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::detail::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool b = false;
  double num = 0;
  bool is_integer = false;  // written without fraction/exponent and fits int64
  int64_t i = 0;
  std::string str;
  std::vector<Value> arr;
  std::vector<std::pair<std::string, Value>> obj;  // in document order

  const Value* find(std::string_view key) const;
};

// Parses one JSON document (surrounding whitespace allowed). `what` names the op in errors.
Value parse(std::string_view text, const char* what);

// A JSON string literal (with quotes) for s.
std::string quote(std::string_view s);
// A number that reads back to the same double ("%.17g"); non-finite values are an error.
std::string number(double v);

}  // namespace kiln::detail::json
