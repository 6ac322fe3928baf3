// Out-of-line parts of the containers (index checks).
#include "kiln/nn/modules/container.h"

namespace kiln::nn {

const std::shared_ptr<Module>& SequentialImpl::operator[](size_t i) const {
  KILN_CHECK(i < modules_.size(), "[Sequential] index ", i, " out of range for ", modules_.size(),
             " modules");
  return modules_[i];
}

const std::shared_ptr<Module>& ModuleListImpl::operator[](int64_t i) const {
  int64_t n = static_cast<int64_t>(modules_.size());
  KILN_CHECK(i >= -n && i < n, "[ModuleList] index ", i, " out of range for ", n, " modules");
  return modules_[static_cast<size_t>(i < 0 ? i + n : i)];
}

const std::shared_ptr<Module>& ModuleDictImpl::operator[](const std::string& key) const {
  const auto* m = modules_.find(key);
  KILN_CHECK(m, "[ModuleDict] no module '", key, "'");
  return *m;
}

}  // namespace kiln::nn
