// The physical KV cache of one rank: for each of its layers (its pipeline stage), a key and a
// value tensor [num_blocks, block_size, num_kv_heads_local, head_dim]. Block ids are the
// coordinator's logical ids, identical on every rank (DESIGN.md section 1).
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
  DType dtype = DType::kF32;

  // Bytes one block takes over all layers, keys and values.
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
  size_t total_bytes() const;

 private:
  KvCacheShape shape_;
  int64_t num_blocks_ = 0;
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
};

}  // namespace weft
