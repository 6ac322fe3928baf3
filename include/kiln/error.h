// kiln::Error, the one exception type users catch, and the checking macros.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

#include "kiln/macros.h"

namespace kiln {

// Thrown for anything a user can cause: bad shapes, dtypes, devices, indices, files.
// The message starts with the op in brackets, e.g. "[add] shapes [2, 3] and [4] ...".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_error(const std::string& msg);
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace kiln

// KILN_CHECK(cond, "[op] message ", value, ...) throws kiln::Error when cond is false.
#define KILN_CHECK(cond, ...)                                                                      \
  do {                                                                                             \
    if (KILN_UNLIKELY(!(cond))) ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__)); \
  } while (0)

// KILN_ERROR("[op] message ", value) throws unconditionally.
#define KILN_ERROR(...) ::kiln::detail::throw_error(::kiln::detail::str_cat(__VA_ARGS__))

// KILN_ASSERT(cond, ...) guards kiln's own invariants; failing it is a kiln bug.
#define KILN_ASSERT(cond, ...)                                              \
  do {                                                                      \
    if (KILN_UNLIKELY(!(cond)))                                             \
      ::kiln::detail::assert_fail(#cond, __FILE__, __LINE__,                \
                                  ::kiln::detail::str_cat("" __VA_ARGS__)); \
  } while (0)
