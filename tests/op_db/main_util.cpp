// The op table's test runner: registers one test per (row, dtype) for each suite, then runs.
#include <gtest/gtest.h>

#include "op_db/op_db.h"

namespace kiln::testing {
void register_op_db_suites();
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  kiln::testing::register_op_db_suites();
  return RUN_ALL_TESTS();
}
