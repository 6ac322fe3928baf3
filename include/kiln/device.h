// Device: where a tensor lives ({cpu | cuda, index}). AMD GPUs are also `cuda`, as in PyTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace kiln {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

const char* device_type_name(DeviceType t);

struct Device {
  DeviceType type = DeviceType::CPU;
  // -1 means "the current device" for cuda; the cpu is always index -1 once normalized.
  int8_t index = -1;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = -1) : type(t), index(static_cast<int8_t>(i)) {}
  // Parses "cpu", "cuda", "cuda:1"; throws kiln::Error otherwise.
  Device(const std::string& spec);  // NOLINT: implicit like torch.device("cuda:0")
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT

  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  constexpr bool has_index() const { return index >= 0; }
  std::string str() const;  // "cpu", "cuda:0"

  constexpr bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }
};

std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace kiln

template <>
struct std::hash<kiln::Device> {
  size_t operator()(const kiln::Device& d) const noexcept {
    return (static_cast<size_t>(d.type) << 8) ^ static_cast<size_t>(static_cast<uint8_t>(d.index));
  }
};
