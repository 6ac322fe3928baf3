// The multi-tensor kernel table and its host wrappers (Note [Multi-tensor kernels] in
// optim/multi_tensor.h): dtype grouping, contiguous stand-ins, device and length checks.
#include "optim/multi_tensor.h"

#include <map>

#include "dispatch/registry.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/shape.h"

namespace kiln::detail {

namespace {

MultiTensorKernels g_tables[kNumDeviceTypes];

bool is_foreach_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

// Contiguous stand-ins for the tensors of the lists given to it; restore() copies the results of
// the written lists back into the originals that were not contiguous.
class ContiguousLists {
 public:
  void add(std::vector<Tensor>& list, bool written) {
    for (Tensor& t : list) {
      if (t.is_contiguous()) continue;
      Tensor c = t.contiguous();
      if (written) back_.emplace_back(t, c);
      t = c;
    }
  }
  void restore() {
    for (auto& [orig, work] : back_) Tensor(orig).copy_(work);
  }

 private:
  std::vector<std::pair<Tensor, Tensor>> back_;
};

void check_one_device(const std::vector<Tensor>& ts, Device d, const char* op) {
  for (const Tensor& t : ts)
    KILN_CHECK(t.device() == d, "[", op, "] tensors on different devices: ", d, " and ",
               t.device());
}

std::map<DType, std::vector<Tensor>> by_dtype(const std::vector<Tensor>& ts, const char* op) {
  std::map<DType, std::vector<Tensor>> m;
  for (const Tensor& t : ts) {
    KILN_CHECK(is_foreach_dtype(t.dtype()), "[", op, "] unsupported dtype ", dtype_name(t.dtype()));
    m[t.dtype()].push_back(t);
  }
  return m;
}

DType acc_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

const MultiTensorKernels& table_for(const Tensor& t, const char* op) {
  const MultiTensorKernels& k = multi_tensor_kernels(t.device().type);
  KILN_CHECK(k.unscale_check != nullptr, "[", op, "] no multi-tensor kernels for device ",
             t.device());
  return k;
}

template <class Args>
void check_fused_lists(const Args& a, const std::vector<const std::vector<Tensor>*>& state,
                       const char* op) {
  const size_t n = a.params.size();
  KILN_ASSERT(n > 0 && a.grads.size() == n, "fused step lists");
  const Device d = a.params[0].device();
  const DType pd = a.params[0].dtype();
  const DType sd = a.masters.empty() ? pd : DType::Float32;
  KILN_ASSERT(a.masters.empty() || a.masters.size() == n, "fused step masters");
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSERT(a.params[i].device() == d && a.grads[i].device() == d, "fused step devices");
    KILN_ASSERT(a.params[i].dtype() == pd && a.grads[i].dtype() == pd, "fused step dtypes");
    KILN_ASSERT(a.grads[i].numel() == a.params[i].numel(), "fused step grad size");
  }
  for (const auto* l : state) {
    KILN_ASSERT(l->size() == n, "[", op, "] state list length");
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = (*l)[i];
      KILN_ASSERT(t.device() == d && t.dtype() == sd && t.numel() == a.params[i].numel(), "[", op,
                  "] state tensor");
    }
  }
  for (const Tensor& m : a.masters) KILN_ASSERT(m.dtype() == DType::Float32, "master dtype");
}

}  // namespace

MultiTensorKernels& mutable_multi_tensor_kernels(DeviceType device) {
  return g_tables[static_cast<int>(device)];
}

const MultiTensorKernels& multi_tensor_kernels(DeviceType device) {
  (void)kernel_registry();  // the backends fill the table while they register their kernels
  return g_tables[static_cast<int>(device)];
}

bool foreach_supported(const Tensor& t) {
  return t.defined() && is_foreach_dtype(t.dtype()) &&
         multi_tensor_kernels(t.device().type).unscale_check != nullptr;
}

void foreach_unscale_check(const std::vector<Tensor>& ts, double inv_scale,
                           const Tensor& found_inf) {
  if (ts.empty()) return;
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_one_device(ts, found_inf.device(), op);
  KILN_ASSERT(found_inf.dtype() == DType::Float32 && found_inf.numel() == 1, "found_inf");
  const auto& k = table_for(ts[0], op);
  for (auto& [dt, list] : by_dtype(ts, op)) {
    ContiguousLists contig;
    contig.add(list, /*written=*/inv_scale != 1.0);
    k.unscale_check(list, inv_scale, found_inf);
    contig.restore();
  }
}

Tensor foreach_norms(const std::vector<Tensor>& ts, double norm_type) {
  KILN_ASSERT(!ts.empty(), "foreach_norms of nothing");
  const char* op = "_foreach_norm";
  KILN_CHECK(norm_type > 0, "[", op, "] norm_type must be > 0 here, got ", norm_type);
  const Device d = ts[0].device();
  check_one_device(ts, d, op);
  const auto& k = table_for(ts[0], op);
  auto groups = by_dtype(ts, op);
  const DType out_dt = groups.count(DType::Float64) ? DType::Float64 : DType::Float32;
  std::vector<Tensor> parts;
  for (auto& [dt, list] : groups) {
    ContiguousLists contig;
    contig.add(list, false);
    Tensor out = empty({static_cast<int64_t>(list.size())}, TensorOptions(acc_dtype(dt)).device(d));
    k.norms(list, norm_type, out);
    parts.push_back(out.to(out_dt));
  }
  return parts.size() == 1 ? parts[0] : kiln::cat(parts);
}

void foreach_scale(const std::vector<Tensor>& ts, const Tensor& coef) {
  if (ts.empty()) return;
  const char* op = "_foreach_mul_";
  check_one_device(ts, coef.device(), op);
  KILN_ASSERT(coef.numel() == 1, "foreach_scale coef");
  const auto& k = table_for(ts[0], op);
  for (auto& [dt, list] : by_dtype(ts, op)) {
    ContiguousLists contig;
    contig.add(list, true);
    Tensor c = coef.reshape({1}).to(acc_dtype(dt)).contiguous();
    k.scale(list, c);
    contig.restore();
  }
}

void foreach_fused_adam(FusedAdamArgs& a) {
  if (a.params.empty()) return;
  std::vector<const std::vector<Tensor>*> state = {&a.exp_avgs, &a.exp_avg_sqs};
  if (a.amsgrad) state.push_back(&a.max_exp_avg_sqs);
  check_fused_lists(a, state, "_fused_adam_");
  KILN_ASSERT(a.neg_step.size() == a.params.size() && a.bc2_sqrt.size() == a.params.size(),
              "fused adam scalars");
  const auto& k = table_for(a.params[0], "_fused_adam_");
  ContiguousLists contig;
  contig.add(a.params, true);
  contig.add(a.grads, a.inv_grad_scale != 1.0);
  contig.add(a.exp_avgs, true);
  contig.add(a.exp_avg_sqs, true);
  contig.add(a.max_exp_avg_sqs, true);
  contig.add(a.masters, true);
  k.fused_adam(a);
  contig.restore();
}

void foreach_fused_sgd(FusedSgdArgs& a) {
  if (a.params.empty()) return;
  std::vector<const std::vector<Tensor>*> state;
  if (a.momentum != 0) state.push_back(&a.momentum_buffers);
  check_fused_lists(a, state, "_fused_sgd_");
  KILN_ASSERT(a.momentum == 0 || a.first.size() == a.params.size(), "fused sgd flags");
  const auto& k = table_for(a.params[0], "_fused_sgd_");
  ContiguousLists contig;
  contig.add(a.params, true);
  contig.add(a.grads, a.inv_grad_scale != 1.0);
  contig.add(a.momentum_buffers, true);
  contig.add(a.masters, true);
  k.fused_sgd(a);
  contig.restore();
}

}  // namespace kiln::detail
