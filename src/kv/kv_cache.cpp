#include "kv/kv_cache.h"

#include <new>

#include "absl/strings/str_cat.h"

namespace weft {

int64_t KvCacheShape::bytes_per_block() const {
  return 2LL * num_layers * block_size * num_kv_heads * head_dim *
         static_cast<int64_t>(dtype_size(dtype));
}

absl::StatusOr<KvCache> KvCache::allocate(const KvCacheShape& shape, int64_t num_blocks) {
  if (num_blocks < 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the KV-cache budget holds no block of ", shape.bytes_per_block(), " bytes"));
  }
  KvCache cache;
  cache.shape_ = shape;
  cache.num_blocks_ = num_blocks;
  const Shape per_layer{num_blocks, shape.block_size, shape.num_kv_heads, shape.head_dim};
  try {
    for (int i = 0; i < shape.num_layers; ++i) {
      cache.keys_.push_back(Tensor::empty(shape.dtype, per_layer));
      cache.values_.push_back(Tensor::empty(shape.dtype, per_layer));
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate a KV cache of ", num_blocks,
                                                     " blocks (", shape.bytes_per_block(),
                                                     " bytes each)"));
  }
  return cache;
}

size_t KvCache::total_bytes() const {
  size_t total = 0;
  for (const Tensor& t : keys_) total += t.nbytes();
  for (const Tensor& t : values_) total += t.nbytes();
  return total;
}

}  // namespace weft
