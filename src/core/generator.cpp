// Generator state (seed, offset) behind a mutex, its byte serialization, and the per-device table
// of default generators behind kiln::manual_seed / seed / initial_seed.
#include <array>
#include <atomic>
#include <limits>
#include <mutex>
#include <random>

#include "kiln/error.h"
#include "kiln/random.h"

namespace kiln {

namespace detail {

struct GeneratorImpl {
  explicit GeneratorImpl(Device d, uint64_t s) : device(d), seed(s) {}
  const Device device;
  mutable std::mutex mu;
  uint64_t seed;
  uint64_t offset = 0;
};

namespace {

std::atomic<int (*)()> g_current_cuda_device{nullptr};

uint64_t nondeterministic_seed() {
  std::random_device rd;
  const uint64_t hi = rd();
  const uint64_t lo = rd();
  return (hi << 32) ^ lo;
}

constexpr uint8_t kStateTag[4] = {'k', 'R', 'N', 'G'};
constexpr uint32_t kStateVersion = 1;
constexpr size_t kStateSize = 24;

void put_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t get_le(const std::vector<uint8_t>& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

// Note [Default generators]: the cpu default lives for the whole process; cuda defaults are
// created on first use (device indices fit in int8_t, so a fixed table covers them all). A cuda
// default created after kiln::manual_seed(s) starts from s, as torch.manual_seed seeds cuda
// devices lazily too.
struct DefaultTable {
  std::mutex mu;
  uint64_t global_seed = kDefaultRngSeed;
  Generator cpu{Device(DeviceType::CPU)};
  std::array<std::unique_ptr<Generator>, 128> cuda;
};

DefaultTable& table() {
  static DefaultTable* t = new DefaultTable();  // never destroyed: usable from static dtors
  return *t;
}

}  // namespace

void set_current_cuda_device_hook(int (*current_device)()) {
  g_current_cuda_device.store(current_device);
}

Device resolve_rng_device(Device device) {
  if (device.is_cpu()) return Device(DeviceType::CPU);
  if (device.has_index()) return device;
  int (*hook)() = g_current_cuda_device.load();
  return Device(DeviceType::CUDA, hook ? hook() : 0);
}

}  // namespace detail

Generator::Generator(Device device)
    : impl_(std::make_shared<detail::GeneratorImpl>(detail::resolve_rng_device(device),
                                                    kDefaultRngSeed)) {}

Generator& Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->seed = seed;
  impl_->offset = 0;
  return *this;
}

uint64_t Generator::seed() {
  const uint64_t s = detail::nondeterministic_seed();
  manual_seed(s);
  return s;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seed;
}

uint64_t Generator::get_offset() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->offset;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->offset = offset;
}

std::vector<uint8_t> Generator::get_state() const {
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    seed = impl_->seed;
    offset = impl_->offset;
  }
  std::vector<uint8_t> out(detail::kStateTag, detail::kStateTag + 4);
  out.reserve(detail::kStateSize);
  detail::put_le(out, detail::kStateVersion, 4);
  detail::put_le(out, seed, 8);
  detail::put_le(out, offset, 8);
  return out;
}

void Generator::set_state(const std::vector<uint8_t>& state) {
  KILN_CHECK(state.size() == detail::kStateSize, "[Generator.set_state] expected a state of ",
             detail::kStateSize, " bytes, got ", state.size());
  bool tag_ok = true;
  for (int i = 0; i < 4; ++i) tag_ok = tag_ok && state[i] == detail::kStateTag[i];
  KILN_CHECK(tag_ok, "[Generator.set_state] the state is not a kiln generator state");
  const uint64_t version = detail::get_le(state, 4, 4);
  KILN_CHECK(version == detail::kStateVersion, "[Generator.set_state] unsupported state version ",
             version, " (this kiln reads version ", detail::kStateVersion, ")");
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->seed = detail::get_le(state, 8, 8);
  impl_->offset = detail::get_le(state, 16, 8);
}

Device Generator::device() const { return impl_->device; }

PhiloxSeedOffset Generator::reserve(uint64_t counters) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const uint64_t off = impl_->offset;
  KILN_CHECK(counters <= std::numeric_limits<uint64_t>::max() - off,
             "[Generator.reserve] the generator's offset ", off, " cannot advance by ", counters,
             " counters without wrapping around; reseed it or set_offset");
  impl_->offset = off + counters;
  return {impl_->seed, off};
}

Generator default_generator(Device device) {
  const Device d = detail::resolve_rng_device(device);
  detail::DefaultTable& t = detail::table();
  if (d.is_cpu()) return t.cpu;
  KILN_CHECK(d.index >= 0, "[default_generator] invalid device ", d);
  std::lock_guard<std::mutex> lock(t.mu);
  std::unique_ptr<Generator>& slot = t.cuda[static_cast<size_t>(d.index)];
  if (!slot) {
    slot = std::make_unique<Generator>(d);
    slot->manual_seed(t.global_seed);
  }
  return *slot;
}

void manual_seed(uint64_t seed) {
  detail::DefaultTable& t = detail::table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.global_seed = seed;
  t.cpu.manual_seed(seed);
  for (auto& g : t.cuda)
    if (g) g->manual_seed(seed);
}

uint64_t seed() {
  const uint64_t s = detail::nondeterministic_seed();
  manual_seed(s);
  return s;
}

uint64_t initial_seed() { return detail::table().cpu.initial_seed(); }

}  // namespace kiln
