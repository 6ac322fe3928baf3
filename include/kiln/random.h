// kiln::Generator (PyTorch's torch.Generator): a shared (seed, offset) Philox state per device,
// the default generators, and kiln::manual_seed / seed / initial_seed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/device.h"

namespace kiln {

namespace detail {
struct GeneratorImpl;
}

// What a random op gets from Generator::reserve: the Philox key and the first counter it owns.
// The op uses counters [offset, offset + n) as Note [Philox streams] (src/kernels/philox.h)
// describes.
struct PhiloxSeedOffset {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// PyTorch's default seed, so a fresh process draws the same numbers every time.
constexpr uint64_t kDefaultRngSeed = 67280421310721ull;

// A handle to a random-number generator. Copies share the state (like torch.Generator objects
// passed around in Python). Every kiln generator is Philox 4x32-10 with state (seed, offset),
// whatever its device: a cpu and a cuda generator with equal state give the same numbers.
// All member functions are thread-safe.
// Differs from PyTorch: the cpu generator is Philox, not mt19937, so the values differ from
// torch's; the state is kiln's 24-byte layout (get_state), the same for every device.
class Generator {
 public:
  // A new generator on `device` with seed kDefaultRngSeed and offset 0. A cuda device without an
  // index means the current cuda device (see detail::set_current_cuda_device_hook).
  explicit Generator(Device device = Device(DeviceType::CPU));

  // Sets the seed and resets the offset to 0. Returns *this.
  Generator& manual_seed(uint64_t seed);
  // Seeds with a non-deterministic 64-bit value from std::random_device, resets the offset and
  // returns the seed.
  uint64_t seed();
  // The seed last set (by the constructor, manual_seed, seed or set_state).
  uint64_t initial_seed() const;

  // The offset in Philox counters (blocks of four 32-bit words), not in elements.
  uint64_t get_offset() const;
  void set_offset(uint64_t offset);

  // The state as bytes: "kRNG", a little-endian uint32 version (1), the seed and the offset as
  // little-endian uint64 (24 bytes in all). set_state throws kiln::Error on a wrong size or tag.
  std::vector<uint8_t> get_state() const;
  void set_state(const std::vector<uint8_t>& state);

  Device device() const;

  // For ops: returns {seed, offset} and advances the offset by `counters`, atomically, so
  // concurrent callers get disjoint counter ranges. Throws kiln::Error if the 64-bit offset
  // would wrap around.
  PhiloxSeedOffset reserve(uint64_t counters);

  // True if both handles share one generator.
  bool operator==(const Generator& other) const { return impl_ == other.impl_; }
  bool operator!=(const Generator& other) const { return impl_ != other.impl_; }

 private:
  std::shared_ptr<detail::GeneratorImpl> impl_;
};

// The default generator of a device (torch.default_generator, torch.cuda.default_generators).
// Defaults for cuda devices are created on first use, seeded with the last kiln::manual_seed /
// kiln::seed value (kDefaultRngSeed before any); indices are not validated here.
Generator default_generator(Device device = Device(DeviceType::CPU));

// Seeds the cpu default generator and every cuda default generator, including those created
// later (torch.manual_seed). Offsets restart at 0.
void manual_seed(uint64_t seed);
// Seeds them all with one non-deterministic seed and returns it (torch.seed).
uint64_t seed();
// The cpu default generator's initial seed (torch.initial_seed).
uint64_t initial_seed();

namespace detail {
// The GPU runtime registers a function that returns the current cuda device index; until then a
// cuda device without an index means cuda:0.
void set_current_cuda_device_hook(int (*current_device)());
// A cuda device with its index filled in (cpu devices are returned unchanged).
Device resolve_rng_device(Device device);
}  // namespace detail

}  // namespace kiln
