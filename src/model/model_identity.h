// A 64-bit name of a model's weights, for keys that must not match another model's (the disk KV
// tier's files, kv/kv_block_file.h). It hashes what distinguishes checkpoints without reading
// the weights: config.json, and for each *.safetensors file (by name order) its name, size and
// header (tensor names, dtypes, shapes, offsets); for a GGUF file its size and its first MiB (the
// metadata and tensor table). Two checkpoints that differ only inside tensor data of equal
// layout hash alike: retrain-in-place users should clear their disk cache.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/statusor.h"

namespace weft {

absl::StatusOr<uint64_t> model_identity(const std::filesystem::path& model);

}  // namespace weft
