// The weights of a Hugging Face model directory: model.safetensors, or the shards listed by
// model.safetensors.index.json ({"weight_map": {tensor: file}}); or of a GGUF model
// (model/model_files.h), whose tensors are found under their Hugging Face names, in Hugging Face
// layout (llama's rope-permuted q/k rows are put back in order: a copy of those tensors), in the
// file's dtype (block-quantized ones included, core/dtype.h). Files are memory-mapped; only the
// pages a rank touches are read, so a rank that takes a slice reads only that slice.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "model/checkpoint_quantization.h"
#include "model/gguf_file.h"
#include "model/safetensors.h"

namespace weft {

class WeightStore {
 public:
  // Errors: no model.safetensors nor index; index malformed or naming a missing file; a shard
  // that fails SafetensorsFile validation; the same tensor in two shards; a GGUF file that fails
  // GgufFile validation or holds a tensor weft does not know (named).
  static absl::StatusOr<WeightStore> open(const std::filesystem::path& model_dir);

  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;

  // The whole tensor as a zero-copy view. Errors: missing tensor ("tensor 'x' not found in
  // <dir>"), or a shape other than `expected` ("tensor 'x' in <file> has shape [..], expected
  // [..] from config.json").
  absl::StatusOr<Tensor> get(const std::string& name, const Shape& expected) const;

  // Rows [begin, begin + count) along dimension `dim` of a tensor of full shape `expected`.
  // dim 0 is a zero-copy view; dim 1 copies into a new tensor (only the rows' slices are read).
  // Rows past the tensor's end (padding for uneven tensor-parallel splits) are zero-filled, and
  // a dim-0 slice that runs past the end is a zero-padded copy rather than a view.
  // Block-quantized tensors slice along dim 1 only at block edges (model/weight_slice.h).
  // Errors: those of get() and of slice_weight().
  absl::StatusOr<Tensor> get_slice(const std::string& name, const Shape& expected, int dim,
                                   int64_t begin, int64_t count) const;

  // Weights held once: after a layer has copied `view` (a tensor get() or get_slice() returned as
  // a view of the mapped files) into a fused or sliced weight of its own, this drops the view's
  // pages from the resident set (SafetensorsFile::release_pages). A no-op for tensors that are not
  // in the mapping (copies). Correct even if the bytes are read again, only slower.
  void release(const Tensor& view) const;
  // The same for the bytes [data, data + bytes) of such a view.
  void release(const void* data, size_t bytes) const;

  // Whether `t`'s bytes lie in one of the mapped files (a view get() or get_slice() returned).
  bool is_mapped(const Tensor& t) const;

  // The checkpoint's quantization_config (none for dense checkpoints and GGUF files). Modules it
  // stores quantized (those with a weight_scale) are presented as "<module>.weight" in weft's
  // dtype (model/checkpoint_weights.h): get() converts them from the stored tensors, and for the
  // int8 format "<module>.weight_scale" is the F32 [out] row scale.
  const CheckpointQuantization& checkpoint_quantization() const { return quantization_; }
  // Whether `module` is stored quantized (it has a weight_scale tensor).
  bool is_quantized_module(const std::string& module) const;

 private:
  static absl::StatusOr<WeightStore> open_gguf(const std::filesystem::path& file);
  // A GGUF tensor in Hugging Face layout: the mapped bytes, or a row-reordered copy (rope).
  absl::StatusOr<Tensor> gguf_tensor(const std::string& hf_name) const;

  std::filesystem::path dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::shared_ptr<GgufFile> gguf_;                    // set for a GGUF model (files_ empty)
  std::map<std::string, std::string> gguf_names_;    // Hugging Face name -> GGUF name
  std::map<std::string, size_t> index_;  // tensor name -> files_ index
  CheckpointQuantization quantization_;
  std::set<std::string> quantized_modules_;
  // Finds the quantized modules and checks the ignore list names modules of this checkpoint.
  absl::Status index_quantized_modules();
  // A stored tensor by name, any shape (for the quantized-module conversion).
  absl::StatusOr<Tensor> stored_tensor(const std::string& name) const;
};

}  // namespace weft
