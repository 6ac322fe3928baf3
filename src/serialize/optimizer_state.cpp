// kiln::save / kiln::load of optimizer states: tensors "state.<index>.<name>", and the steps and
// param groups as JSON under the metadata key "kiln.optimizer".
#include <cstdlib>

#include "kiln/serialize.h"
#include "serialize/json.h"

namespace kiln {

namespace {
constexpr const char* kKey = "kiln.optimizer";
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  optim::OptimizerStateDict sd = optimizer.state_dict();
  OrderedDict<Tensor> tensors;
  // Appends piece by piece (GCC 12 warns falsely on long `"..." + std::string` chains).
  std::string j = "{\"name\":";
  j += detail::json::quote(optimizer.name());
  j += ",\"steps\":{";
  bool first = true;
  for (auto& kv : sd.state) {
    if (!first) j += ',';
    j += detail::json::quote(std::to_string(kv.first));
    j += ':';
    j += std::to_string(kv.second.step);
    first = false;
    for (auto& b : kv.second.buffers)
      tensors.insert("state." + std::to_string(kv.first) + "." + b.first, b.second);
  }
  j += "},\"param_groups\":[";
  for (size_t g = 0; g < sd.param_groups.size(); ++g) {
    if (g) j += ',';
    j += "{\"options\":{";
    bool f = true;
    for (auto& o : sd.param_groups[g].options) {
      if (!f) j += ',';
      j += detail::json::quote(o.first);
      j += ':';
      j += detail::json::number(o.second);
      f = false;
    }
    j += "},\"params\":[";
    for (size_t i = 0; i < sd.param_groups[g].params.size(); ++i) {
      if (i) j += ',';
      j += std::to_string(sd.param_groups[g].params[i]);
    }
    j += "]}";
  }
  j += "]}";
  save(tensors, path, Metadata{{kKey, j}});
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  Metadata meta = load_metadata(path);
  auto it = meta.find(kKey);
  KILN_CHECK(it != meta.end(), "[load] '", path, "' holds no optimizer state (no '", kKey,
             "' metadata)");
  using Kind = detail::json::Value::Kind;
  detail::json::Value root = detail::json::parse(it->second, "load");
  const auto* name = root.find("name");
  const auto* steps = root.find("steps");
  const auto* groups = root.find("param_groups");
  KILN_CHECK(root.kind == Kind::Object && name && name->kind == Kind::String && steps &&
                 steps->kind == Kind::Object && groups && groups->kind == Kind::Array,
             "[load] '", path, "': malformed optimizer metadata");
  KILN_CHECK(name->str == optimizer.name(), "[load] '", path, "' holds the state of a ", name->str,
             " optimizer, not of a ", optimizer.name());
  optim::OptimizerStateDict sd;
  for (auto& g : groups->arr) {
    const auto* opts = g.find("options");
    const auto* params = g.find("params");
    KILN_CHECK(g.kind == Kind::Object && opts && opts->kind == Kind::Object && params &&
                   params->kind == Kind::Array,
               "[load] '", path, "': malformed param group");
    optim::OptimizerStateDict::Group sg;
    for (auto& o : opts->obj) {
      KILN_CHECK(o.second.kind == Kind::Number, "[load] '", path, "': option '", o.first,
                 "' is not a number");
      sg.options[o.first] = o.second.num;
    }
    for (auto& p : params->arr) {
      KILN_CHECK(p.kind == Kind::Number && p.is_integer && p.i >= 0, "[load] '", path,
                 "': invalid parameter index");
      sg.params.push_back(p.i);
    }
    sd.param_groups.push_back(std::move(sg));
  }
  auto parse_index = [&](const std::string& s) {
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    KILN_CHECK(!s.empty() && end && *end == '\0' && v >= 0, "[load] '", path,
               "': invalid parameter index '", s, "'");
    return static_cast<int64_t>(v);
  };
  for (auto& s : steps->obj) {
    KILN_CHECK(s.second.kind == Kind::Number && s.second.is_integer, "[load] '", path,
               "': invalid step count");
    sd.state[parse_index(s.first)].step = s.second.i;
  }
  for (auto& t : load(path)) {
    const std::string& k = t.key;
    KILN_CHECK(k.rfind("state.", 0) == 0, "[load] '", path, "': unexpected tensor '", k, "'");
    auto dot = k.find('.', 6);
    KILN_CHECK(dot != std::string::npos && dot + 1 < k.size(), "[load] '", path,
               "': malformed state name '", k, "'");
    int64_t idx = parse_index(k.substr(6, dot - 6));
    sd.state[idx].buffers[k.substr(dot + 1)] = t.value;
  }
  optimizer.load_state_dict(sd);
}

}  // namespace kiln
