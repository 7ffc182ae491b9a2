// A whole model's weights in device memory for the CUDA executor (tp = pp = 1): one allocation,
// every tensor in the compute dtype (the checkpoint's BF16 / F16; F32 checkpoints are rounded to
// BF16, since the GEMM and attention kernels take 16-bit operands). Projections sharing an input
// are fused, in the CPU model's order: qkv = [q_proj; k_proj; v_proj] rows, gate_up =
// [gate_proj; up_proj] rows, so one GEMM serves each group.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "model/model_config.h"
#include "model/weight_store.h"
#include "weft/kernels/cuda/device_buffer.h"

namespace weft {

// Device pointers into CudaModelWeights::storage; null where the model has no such tensor.
struct CudaLayerWeights {
  const void* input_norm = nullptr;  // [hidden]
  const void* qkv = nullptr;         // [(heads + 2 kv_heads) * head_dim, hidden]
  const void* qkv_bias = nullptr;    // [(heads + 2 kv_heads) * head_dim]  (attention_bias)
  const void* q_norm = nullptr;      // [head_dim]                         (qk_norm)
  const void* k_norm = nullptr;      // [head_dim]
  const void* o_proj = nullptr;      // [hidden, heads * head_dim]
  const void* o_bias = nullptr;      // [hidden]                           (o_proj_bias)
  const void* post_norm = nullptr;   // [hidden]
  const void* gate_up = nullptr;     // [2 * intermediate, hidden]
  const void* gate_up_bias = nullptr;  // [2 * intermediate]               (mlp_bias)
  const void* down = nullptr;        // [hidden, intermediate]
  const void* down_bias = nullptr;   // [hidden]
};

struct CudaModelWeights {
  DType dtype = DType::kBF16;
  kernels::cuda::DeviceBuffer storage;
  const void* embedding = nullptr;   // [vocab, hidden]
  const void* final_norm = nullptr;  // [hidden]
  const void* lm_head = nullptr;     // [vocab, hidden] (the embedding when tied)
  std::vector<CudaLayerWeights> layers;
};

// The compute dtype for a checkpoint dtype: F16 stays F16, everything else BF16.
DType cuda_compute_dtype(DType checkpoint_dtype);

// Bytes upload_cuda_weights() allocates for `config` (for the memory plan, before allocating).
int64_t cuda_weight_bytes(const ModelConfig& config, DType dtype);

// Reads every tensor of the model from `weights` (shapes checked against config.json, errors
// naming the tensor as WeightStore does), converts it to `dtype` on the host when it is stored
// otherwise, and copies it to the current device on `stream` (synchronously: the host staging
// is reused). ResourceExhausted when the allocation fails.
absl::StatusOr<CudaModelWeights> upload_cuda_weights(const ModelConfig& config,
                                                     const WeightStore& weights, DType dtype,
                                                     cudaStream_t stream);

}  // namespace weft
