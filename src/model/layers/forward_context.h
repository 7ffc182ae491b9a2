// What every layer's forward reads besides its input: the batch metadata, shared rotary
// frequencies, the TP group and the kernel threads. Passed explicitly (no hidden globals).
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/layers/attention_probe.h"
#include "parallel/communicator.h"

namespace weft {

struct ForwardContext {
  const ForwardBatch& batch;
  // F32 [rotary_dim / 2], or [tables, rotary_dim / 2] (LongRoPE, dynamic NTK)
  const Tensor& rope_inv_freq;
  float rope_attention_scaling = 1.0f;
  Communicator& tp;
  ThreadPool& pool;
  // I32 [num_tokens]: each token's row of rope_inv_freq; null when it has one row. Set by
  // DecoderModel::run_layers for LongRoPE and dynamic NTK (model/rope.h).
  const Tensor* rope_table = nullptr;
  // Set (weft inspect): the attention layers it selects record their weights into it.
  AttentionProbe* attention_probe = nullptr;
};

}  // namespace weft
