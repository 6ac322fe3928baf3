// Kernel registry storage and the OpDef table built from ops.def.
#include "dispatch/registry.h"

#include "core/dispatch_dtype.h"
#include "ops/infer.h"

namespace kiln {

namespace {
OpDef g_defs[kNumOps] = {
#define KILN_OP(id, name, kind, rule, flags) \
  {name, OpKind::kind, DTypeRule::rule, static_cast<uint32_t>(flags), nullptr},
#include "ops/ops.def"
#undef KILN_OP
};

bool init_defs() {
  for (auto& d : g_defs) d.infer = detail::default_infer(d.kind);
  return true;
}
}  // namespace

const OpDef& op_def(OpId id) {
  static bool once = init_defs();
  (void)once;
  return g_defs[static_cast<int>(id)];
}

namespace detail {

KernelRegistry& kernel_registry() {
  static KernelRegistry* r = [] {
    auto* reg = new KernelRegistry();
    register_cpu_kernels(*reg);
    register_gpu_kernels(*reg);
    return reg;
  }();
  return *r;
}

void throw_dtype_unsupported(const char* op, DType d) {
  KILN_ERROR("[", op, "] not implemented for dtype ", dtype_name(d));
}

}  // namespace detail
}  // namespace kiln
