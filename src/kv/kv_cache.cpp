#include "kv/kv_cache.h"

#include <new>

#include "absl/strings/str_cat.h"

namespace weft {

int64_t KvCacheShape::bytes_per_block() const {
  const int64_t scale_bytes = dtype == DType::kI8 ? static_cast<int64_t>(sizeof(float)) : 0;
  return 2LL * num_layers * block_size * num_kv_heads *
         (head_dim * static_cast<int64_t>(dtype_size(dtype)) + scale_bytes);
}

absl::StatusOr<KvCache> KvCache::allocate(const KvCacheShape& shape, int64_t num_blocks) {
  if (num_blocks < 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the KV-cache budget holds no block of ", shape.bytes_per_block(), " bytes"));
  }
  if (!is_float_dtype(shape.dtype) && shape.dtype != DType::kI8) {
    return absl::InvalidArgumentError(absl::StrCat("KV-cache dtype ", dtype_name(shape.dtype),
                                                   ": expected f32, f16, bf16 or i8"));
  }
  KvCache cache;
  cache.shape_ = shape;
  cache.num_blocks_ = num_blocks;
  const Shape per_layer{num_blocks, shape.block_size, shape.num_kv_heads, shape.head_dim};
  try {
    for (int i = 0; i < shape.num_layers; ++i) {
      cache.keys_.push_back(Tensor::empty(shape.dtype, per_layer));
      cache.values_.push_back(Tensor::empty(shape.dtype, per_layer));
      if (shape.dtype == DType::kI8) {
        const Shape scales{num_blocks, shape.block_size, shape.num_kv_heads};
        cache.key_scales_.push_back(Tensor::empty(DType::kF32, scales));
        cache.value_scales_.push_back(Tensor::empty(DType::kF32, scales));
      } else {
        cache.key_scales_.emplace_back();
        cache.value_scales_.emplace_back();
      }
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
  for (const Tensor& t : key_scales_) total += t.defined() ? t.nbytes() : 0;
  for (const Tensor& t : value_scales_) total += t.defined() ? t.nbytes() : 0;
  return total;
}

}  // namespace weft
