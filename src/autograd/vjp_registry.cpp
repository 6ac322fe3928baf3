// register_vjps(): installs every family's vjps into the OpDef table, once.
#include <mutex>

#include "autograd/vjp.h"

namespace kiln::detail {

// Families of the nn / index / shape / scan primitives (vjp_<family>.cpp).
void register_nn_vjps();
void register_index_vjps();
void register_shape_vjps();
void register_scan_vjps();
void register_nn_fused_vjps();   // vjp_nn_fused.cpp
void register_attention_vjps();  // vjp_attention.cpp

void set_vjp(OpId id, VjpFn fn, uint32_t saves) {
  // The OpDef table is a mutable global (dispatch/registry.cpp); op_def hands out const refs.
  auto& d = const_cast<OpDef&>(op_def(id));
  d.vjp = fn;
  d.vjp_saves = saves;
}

void register_vjps() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_core_vjps();
    register_unary_vjps();
    register_binary_vjps();
    register_ternary_vjps();
    register_reduce_vjps();
    register_linalg_vjps();
    register_nn_vjps();
    register_index_vjps();
    register_shape_vjps();
    register_scan_vjps();
    register_nn_fused_vjps();
    register_attention_vjps();
  });
}

}  // namespace kiln::detail
