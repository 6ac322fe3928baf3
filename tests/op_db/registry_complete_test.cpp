// registry_complete: every primitive in ops.def has a CPU kernel (unless metadata-only), a GPU
// kernel or an explicit CPU-only flag (GPU builds), and at least one op-table row.
#include <gtest/gtest.h>

#include <set>

#include "dispatch/registry.h"
#include "op_db/op_db.h"

namespace kiln::testing {
namespace {

TEST(RegistryComplete, EveryPrimitiveHasACpuKernel) {
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(static_cast<OpId>(i));
    if (d.flags & kNoKernel) continue;
    if (!detail::find_kernel(static_cast<OpId>(i), kCPU)) missing.push_back(d.name);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a CPU kernel: " << ::testing::PrintToString(missing);
}

TEST(RegistryComplete, EveryPrimitiveHasAGpuKernelOrAReason) {
  if (!detail::find_kernel(OpId::Copy, kCUDA)) GTEST_SKIP() << "built without a GPU backend";
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(static_cast<OpId>(i));
    if (d.flags & (kNoKernel | kCpuOnlyGpu)) continue;
    if (!detail::find_kernel(static_cast<OpId>(i), kCUDA)) missing.push_back(d.name);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a GPU kernel: " << ::testing::PrintToString(missing);
}

TEST(RegistryComplete, EveryPrimitiveHasAnOpTableRow) {
  std::set<OpId> covered;
  for (const auto& r : op_table())
    for (OpId id : r.covers) covered.insert(id);
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i)
    if (!covered.count(static_cast<OpId>(i))) missing.push_back(op_def(static_cast<OpId>(i)).name);
  EXPECT_TRUE(missing.empty()) << "ops without an op-table row: "
                               << ::testing::PrintToString(missing);
}

TEST(RegistryComplete, RowNamesAreUnique) {
  std::set<std::string> names;
  for (const auto& r : op_table())
    EXPECT_TRUE(names.insert(r.name).second) << "duplicate row " << r.name;
}

}  // namespace
}  // namespace kiln::testing
