// The device memory plan of the CUDA executor, decided before anything is allocated: weights, an
// activation workspace sized for the largest step, and a paged KV pool sized from what is left.
// Plain data and arithmetic (no CUDA), so it is unit-tested on the CPU.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace weft {

// Every allocation in the plan starts on this boundary (cuBLASLt and 128-bit loads want >= 16 B;
// 256 B matches cudaMalloc's own alignment).
inline constexpr int64_t kDeviceAlignment = 256;
int64_t align_device_bytes(int64_t bytes);

// The shapes the activation workspace must hold (one rank, tp = 1).
struct ActivationShape {
  int64_t max_tokens = 0;      // tokens of the largest step (max_num_batched_tokens, at least
                               // the largest CUDA-graph batch)
  int64_t max_seqs = 0;        // sequences of the largest step
  int64_t max_logit_rows = 0;  // logits rows computed at once (steps wanting more run in chunks)
  int64_t hidden = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  int64_t act_bytes = 2;  // bytes per activation element (BF16 / F16)
  // paged_attention_decode_workspace_bytes(max_seqs, num_heads, head_dim, max_context_len),
  // computed by the caller (it depends on the kernel's partition size).
  int64_t decode_attention_bytes = 0;
};

// Byte offsets of each activation buffer inside one workspace allocation (all aligned).
struct ActivationLayout {
  int64_t residual = 0;       // [max_tokens, hidden] act
  int64_t normed = 0;         // [max_tokens, hidden] act
  int64_t qkv = 0;            // [max_tokens, (heads + 2 kv_heads) * head_dim] act
  int64_t q = 0;              // [max_tokens, heads * head_dim] act (contiguous q for attention)
  int64_t attn_out = 0;       // [max_tokens, heads * head_dim] act
  int64_t delta = 0;          // [max_tokens, hidden] act (o_proj / down_proj output)
  int64_t gate_up = 0;        // [max_tokens, 2 * intermediate] act
  int64_t mlp_act = 0;        // [max_tokens, intermediate] act
  int64_t selected = 0;       // [max_logit_rows, hidden] act (final-normed logit rows)
  int64_t logits = 0;         // [max_logit_rows, vocab] F32
  int64_t tokens_out = 0;     // [max_logit_rows] I32
  int64_t decode_attention = 0;
  int64_t total_bytes = 0;
};
// InvalidArgument naming the field when a size is not positive.
absl::StatusOr<ActivationLayout> plan_activation_layout(const ActivationShape& shape);

struct DeviceMemoryRequest {
  int64_t free_bytes = 0;          // cudaMemGetInfo's free memory before the executor allocates
  int64_t weight_bytes = 0;
  int64_t workspace_bytes = 0;     // activations + metadata + cuBLAS workspaces
  int64_t reserve_bytes = 0;       // left free for the CUDA context, graphs, cuBLAS internals
  int64_t kv_bytes_per_block = 0;  // one block over all layers, keys and values
  double kv_memory_fraction = 0;   // > 0: KV budget = this fraction of what is free after
                                   // weights, workspace and reserve
  int64_t kv_memory_bytes = 0;     // KV budget when kv_memory_fraction <= 0
  int64_t max_blocks = 0;          // > 0: cap on blocks
  int64_t min_blocks = 1;          // fewer is an error (one max-length sequence needs this many)
};

struct DeviceMemoryPlan {
  int64_t free_bytes = 0;
  int64_t weight_bytes = 0;
  int64_t workspace_bytes = 0;
  int64_t reserve_bytes = 0;
  int64_t available_for_kv = 0;  // free - weights - workspace - reserve
  int64_t kv_budget_bytes = 0;
  int64_t kv_bytes_per_block = 0;
  int64_t kv_blocks = 0;
  int64_t kv_bytes = 0;  // kv_blocks * kv_bytes_per_block

  // Several lines, "device memory plan: ..." (GiB / MiB with the exact bytes).
  std::string describe() const;
};

// Errors: ResourceExhausted when weights + workspace + reserve exceed the free memory, or when the
// KV budget holds fewer than min_blocks blocks (naming --kv-cache-memory-fraction /
// --kv-cache-memory and the numbers); InvalidArgument for negative sizes, a fraction above 1 or a
// non-positive bytes-per-block.
absl::StatusOr<DeviceMemoryPlan> plan_device_memory(const DeviceMemoryRequest& request);

}  // namespace weft
