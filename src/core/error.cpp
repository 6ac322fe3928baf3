// Out-of-line throw helpers so that KILN_CHECK stays small at every call site.
#include "kiln/error.h"

namespace kiln::detail {

void throw_error(const std::string& msg) { throw Error(msg); }

void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  throw Error(str_cat("[internal] kiln invariant failed: ", cond, " at ", file, ":", line,
                      msg.empty() ? "" : ": ", msg, " (this is a kiln bug; please report it)"));
}

}  // namespace kiln::detail
