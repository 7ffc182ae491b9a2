// CUDA embedding gather for a (possibly vocab-sharded) table; the CPU twin is
// weft/kernels/embedding.h. All pointers are device memory; the launch is asynchronous on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// table: [rows, hidden] (F32, F16 or BF16) holding vocabulary ids [vocab_start, vocab_start + rows).
// ids: I32 [tokens]. out: [tokens, hidden] of `out_dtype`, which is table_dtype or F32.
// out[t] = table[ids[t] - vocab_start], or a zero row when that id is outside this shard (the
// vocab-parallel embedding sums shards with an all-reduce).
// InvalidArgument for unsupported dtypes or negative sizes; Internal for a failed launch.
absl::Status embedding_gather(const void* table, DType table_dtype, int64_t rows, int64_t hidden,
                              const int32_t* ids, int64_t tokens, int64_t vocab_start, void* out,
                              DType out_dtype, cudaStream_t stream);

}  // namespace weft::kernels::cuda
