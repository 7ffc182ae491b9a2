// The physical KV cache of one rank: for each of its layers (its pipeline stage), a key and a
// value tensor [num_blocks, block_size, num_kv_heads_local, head_dim]. Block ids are the
// coordinator's logical ids, identical on every rank (DESIGN.md section 1).
//
// dtype I8 stores K and V as int8 with one F32 scale per (slot, kv head): key_scales(layer) and
// value_scales(layer) are [num_blocks, block_size, num_kv_heads_local] (kernels/attention.h).
// For float dtypes those tensors are undefined.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace weft {

struct KvCacheShape {
  int num_layers = 0;  // layers on this rank
  int block_size = 16;
  int64_t num_kv_heads = 0;  // on this rank
  int64_t head_dim = 0;
  DType dtype = DType::kF32;  // F32, F16, BF16 or I8

  // Bytes one block takes over all layers, keys and values (and their scales for I8).
  int64_t bytes_per_block() const;
};

class KvCache {
 public:
  // Allocates num_blocks blocks per layer, uninitialised (only written slots are ever read; pages
  // are touched as blocks fill). Errors (ResourceExhausted) when allocation fails.
  static absl::StatusOr<KvCache> allocate(const KvCacheShape& shape, int64_t num_blocks);

  const KvCacheShape& shape() const { return shape_; }
  int64_t num_blocks() const { return num_blocks_; }
  const Tensor& keys(int layer) const { return keys_[layer]; }
  const Tensor& values(int layer) const { return values_[layer]; }
  const Tensor& key_scales(int layer) const { return key_scales_[layer]; }
  const Tensor& value_scales(int layer) const { return value_scales_[layer]; }
  size_t total_bytes() const;

 private:
  KvCacheShape shape_;
  int64_t num_blocks_ = 0;
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
  std::vector<Tensor> key_scales_;    // I8 only; else undefined tensors
  std::vector<Tensor> value_scales_;
};

}  // namespace weft
