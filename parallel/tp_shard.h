// How tensor-parallel layers split a dimension over the ranks of a TP group (Megatron-style).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace weft {

// A contiguous range [begin, begin + count) of a dimension held by one rank.
struct ShardRange {
  int64_t begin = 0;
  int64_t count = 0;
};

// Splits `total` into `size` equal parts of ceil(total / size); the last ranks' parts may run past
// `total` and are zero-padded by the loader (vocabulary and intermediate sizes need not divide).
ShardRange padded_shard(int64_t total, int rank, int size);

// Splits `units` heads of `unit_size` rows each: an error naming `what` unless units % size == 0.
absl::StatusOr<ShardRange> head_shard(int64_t units, int64_t unit_size, int rank, int size,
                                      const char* what);

// Key/value heads: split when num_kv_heads >= size (must divide), else replicated so each rank
// holds the single head its query heads use (size must be a multiple of num_kv_heads).
absl::StatusOr<ShardRange> kv_head_shard(int64_t num_kv_heads, int64_t head_dim, int rank,
                                         int size);

}  // namespace weft
