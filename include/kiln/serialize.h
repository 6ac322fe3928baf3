// kiln::save / kiln::load: tensors, module state dicts and optimizer states in the safetensors
// format (readable by the `safetensors` Python package), written atomically.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/nn/module.h"
#include "kiln/optim/optimizer.h"
#include "kiln/tensor.h"

namespace kiln {

// Note [safetensors files]: 8 bytes little-endian header length N, N bytes of JSON
// ({"__metadata__": {str: str}, name: {"dtype", "shape", "data_offsets"}}, padded with spaces to
// a multiple of 8), then the raw little-endian C-order data of every tensor, back to back with
// no holes. Writing goes to a temporary file in the same directory that is renamed over `path`,
// so a crash never leaves a half-written checkpoint. Reading validates everything (sizes,
// offsets, coverage, dtype names, bool bytes) before touching tensor memory: a corrupt or
// truncated file is a kiln::Error naming the problem. complex128 has no safetensors dtype and
// is an error; complex64 is "C64".

using Metadata = std::map<std::string, std::string>;

// Writes named tensors (any device; copied to the CPU) with optional metadata.
void save(const OrderedDict<Tensor>& tensors, const std::string& path,
          const Metadata& metadata = {});
// One tensor, stored under the name "tensor".
void save(const Tensor& tensor, const std::string& path);
// A module's state_dict().
void save(const nn::Module& module, const std::string& path);
// An optimizer's state: its tensors as "state.<param index>.<name>", steps and param groups in
// the metadata (key "kiln.optimizer").
void save(const optim::Optimizer& optimizer, const std::string& path);

// Reads every tensor, in the header's order, onto `device`.
OrderedDict<Tensor> load(const std::string& path, Device device = Device(kCPU));
// The single tensor of a file written by save(const Tensor&) (or any one-tensor file).
Tensor load_tensor(const std::string& path, Device device = Device(kCPU));
// The "__metadata__" map (empty when absent).
Metadata load_metadata(const std::string& path);
// Loads a state dict into the module (see Module::load_state_dict).
nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict = true);
// Restores an optimizer saved by save(const optim::Optimizer&).
void load(optim::Optimizer& optimizer, const std::string& path);

// In-memory forms of the same format.
std::vector<uint8_t> save_to_bytes(const OrderedDict<Tensor>& tensors,
                                   const Metadata& metadata = {});
OrderedDict<Tensor> load_from_bytes(const void* data, size_t size, Metadata* metadata = nullptr);

}  // namespace kiln
