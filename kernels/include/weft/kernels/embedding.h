// Token embedding lookup for a (possibly vocab-sharded) embedding table.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// table: [rows, h] of any float or block-quantized dtype (a looked-up row is dequantized, bit-exact
// with ggml) holding vocabulary ids [vocab_start, vocab_start + rows).
// ids: I32 [tokens]. out: F32 [tokens, h]. A token whose id falls outside this shard's range gets
// a zero row (the vocab-parallel embedding sums shards with an all-reduce).
void embedding_lookup(const TensorView& table, const TensorView& ids, int64_t vocab_start,
                      const TensorView& out, ThreadPool& pool);

}  // namespace weft::kernels
