// The metadata of one forward pass over a ragged batch: a flat array of tokens from several
// sequences (prefill chunks and decode tokens mixed) plus per-sequence attention metadata.
// Built by the model runner from a step plan; read by every layer. Plain data, CPU memory.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "model/attention_selection.h"
#include "weft/kernels/attention.h"

namespace weft {

struct ForwardBatch {
  int64_t num_tokens = 0;
  Tensor token_ids;  // I32 [num_tokens] (first pipeline stage)
  Tensor positions;  // I32 [num_tokens]
  Tensor slots;      // I64 [num_tokens]: KV-cache slot of each token
  std::vector<int32_t> query_start;   // [num_seqs + 1]
  std::vector<int32_t> context_len;   // [num_seqs]
  std::vector<int64_t> seq_ids;       // [num_seqs]: the plan's sequence ids
  // [num_seqs] or empty: each sequence's prompt length as its RoPE counts it
  // (PlannedChunk::prompt_len; 0 or empty when not known), which selects LongRoPE's set and
  // dynamic NTK's frequencies (model/rope.h: longrope_table, dynamic_ntk_seq_len).
  std::vector<int32_t> prompt_len;
  std::vector<int32_t> block_tables;  // [num_seqs * max_blocks_per_seq], padded with 0
  int max_blocks_per_seq = 0;
  int block_size = 0;
  // Rows of the batch whose logits are wanted (usually each sampling sequence's last token).
  std::vector<int32_t> logit_rows;
  // The sequences whose attention weights this pass records (StepPlan::record_attention).
  std::vector<AttentionRecording> record_attention;

  int num_seqs() const { return static_cast<int>(context_len.size()); }
  kernels::AttentionBatch attention() const {
    kernels::AttentionBatch b;
    b.num_seqs = num_seqs();
    b.query_start = query_start.data();
    b.context_len = context_len.data();
    b.block_tables = block_tables.data();
    b.max_blocks_per_seq = max_blocks_per_seq;
    b.block_size = block_size;
    return b;
  }
};

}  // namespace weft
