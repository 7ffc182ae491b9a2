// A rank's weights in device memory for the CUDA executor: one allocation laid out by
// cuda_weight_layout.h (the compute dtype, fused q/k/v and gate/up, the rank's tensor-parallel
// shard of its pipeline stage's layers).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "model/model_config.h"
#include "engine/cuda/cuda_weight_layout.h"
#include "model/weight_store.h"
#include "weft/kernels/cuda/device_buffer.h"

namespace weft {

// Device pointers into CudaModelWeights::storage; null where the rank has no such tensor (a
// row-parallel bias is held by the TP group's first rank only: it joins the sum once).
struct CudaLayerWeights {
  const void* input_norm = nullptr;  // [hidden]
  const void* qkv = nullptr;         // [(heads + 2 kv_heads) * head_dim, hidden] (this rank's heads)
  const void* qkv_bias = nullptr;    // [(heads + 2 kv_heads) * head_dim]  (attention_bias)
  const void* q_norm = nullptr;      // [head_dim]                         (qk_norm)
  const void* k_norm = nullptr;      // [head_dim]
  const void* o_proj = nullptr;      // [hidden, heads * head_dim] (this rank's heads' columns)
  const void* o_bias = nullptr;      // [hidden]                           (o_proj_bias)
  const void* post_norm = nullptr;   // [hidden]
  const void* gate_up = nullptr;     // [2 * intermediate, hidden] (this rank's intermediate shard)
  const void* gate_up_bias = nullptr;  // [2 * intermediate]               (mlp_bias)
  const void* down = nullptr;        // [hidden, intermediate]
  const void* down_bias = nullptr;   // [hidden]
};

struct CudaModelWeights {
  DType dtype = DType::kBF16;
  kernels::cuda::DeviceBuffer storage;
  const void* embedding = nullptr;   // [vocab_rows, hidden]: ids [vocab_begin, vocab_begin + vocab_rows)
  const void* final_norm = nullptr;  // [hidden]
  const void* lm_head = nullptr;     // [vocab_rows, hidden] (the embedding when tied)
  int64_t vocab_begin = 0;
  int64_t vocab_rows = 0;            // the vocabulary shard, padded past vocab_size on the last ranks
  int first_layer = 0;               // layers[i] is model layer first_layer + i
  std::vector<CudaLayerWeights> layers;
};

// The compute dtype for a checkpoint dtype: F16 stays F16, everything else BF16.
DType cuda_compute_dtype(DType checkpoint_dtype);

// Reads every tensor of `layout` from `weights` (shapes checked against config.json, errors
// naming the tensor as WeightStore does), packs it in the layout's dtype on the host
// (pack_cuda_weight), and copies it to the current device on `stream` (synchronously: the packing
// buffer is reused). ResourceExhausted when the allocation fails.
absl::StatusOr<CudaModelWeights> upload_cuda_weights(const CudaWeightLayout& layout, const WeightStore& weights,
                                                     cudaStream_t stream);

}  // namespace weft
