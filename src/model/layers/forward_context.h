// What every layer's forward reads besides its input: the batch metadata, shared rotary
// frequencies, the TP group and the kernel threads. Passed explicitly (no hidden globals).
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "parallel/communicator.h"

namespace weft {

struct ForwardContext {
  const ForwardBatch& batch;
  const Tensor& rope_inv_freq;  // F32 [head_dim / 2]
  float rope_attention_scaling = 1.0f;
  Communicator& tp;
  ThreadPool& pool;
};

}  // namespace weft
