// Device parsing and printing.
#include "kiln/device.h"

#include <cctype>

#include "kiln/error.h"

namespace kiln {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::CUDA:
      return "cuda";
  }
  return "unknown";
}

Device::Device(const std::string& spec) {
  std::string kind = spec;
  int idx = -1;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    kind = spec.substr(0, colon);
    std::string num = spec.substr(colon + 1);
    bool ok = !num.empty() && num.size() <= 3;
    for (char c : num) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    KILN_CHECK(ok, "[Device] invalid device index in '", spec, "'");
    idx = std::stoi(num);
    KILN_CHECK(idx < 128, "[Device] device index ", idx, " is too large in '", spec, "'");
  }
  if (kind == "cpu") {
    KILN_CHECK(idx <= 0, "[Device] the cpu device has no index ", idx, " ('", spec, "')");
    type = DeviceType::CPU;
    index = -1;
  } else if (kind == "cuda") {
    type = DeviceType::CUDA;
    index = static_cast<int8_t>(idx);
  } else {
    KILN_ERROR("[Device] expected 'cpu', 'cuda' or 'cuda:N', got '", spec, "'");
  }
}

std::string Device::str() const {
  std::string s = device_type_name(type);
  if (is_cuda() && index >= 0) {
    s.push_back(':');
    s.append(std::to_string(index));
  }
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace kiln
