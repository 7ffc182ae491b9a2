#include "parallel/tp_shard.h"

#include "absl/strings/str_cat.h"

namespace weft {

ShardRange padded_shard(int64_t total, int rank, int size) {
  const int64_t per_rank = (total + size - 1) / size;
  return ShardRange{per_rank * rank, per_rank};
}

absl::StatusOr<ShardRange> head_shard(int64_t units, int64_t unit_size, int rank, int size,
                                      const char* what) {
  if (units % size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " = ", units,
                                                   " is not divisible by the tensor-parallel size ",
                                                   size));
  }
  const int64_t per_rank = units / size;
  return ShardRange{per_rank * rank * unit_size, per_rank * unit_size};
}

absl::StatusOr<ShardRange> kv_head_shard(int64_t num_kv_heads, int64_t head_dim, int rank,
                                         int size) {
  if (num_kv_heads >= size) {
    return head_shard(num_kv_heads, head_dim, rank, size, "num_key_value_heads");
  }
  if (size % num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_key_value_heads = ", num_kv_heads, " cannot be replicated evenly over ", size,
        " tensor-parallel ranks (the TP size must be a multiple of it)"));
  }
  const int64_t head = static_cast<int64_t>(rank) * num_kv_heads / size;
  return ShardRange{head * head_dim, head_dim};
}

}  // namespace weft
