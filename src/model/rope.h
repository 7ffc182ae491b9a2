// Rotary position embedding frequencies, computed as transformers' ROPE_INIT_FUNCTIONS do
// (modeling_rope_utils.py) for the rope types ModelConfig supports, and which of them each token
// uses (LongRoPE switches between two sets).
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "model/model_config.h"

namespace weft {

// Dimensions of a head that RoPE rotates: config.rotary_dim, or head_dim when it is unset (0).
int64_t rope_rotary_dim(const ModelConfig& config);

// inv_freq[i] for i in [0, rotary_dim / 2): the angle of position p in rotary pair i is
// p * inv_freq[i]. default: 1 / theta^(2i / rotary_dim); linear: that / factor; llama3: low
// frequencies divided by factor, high ones kept, the band between smoothly interpolated;
// longrope: 1 / (short_factor[i] * theta^(2i / rotary_dim)), the set transformers starts from
// (and uses while a sequence is within original_max_position_embeddings); yarn: a ramp from the
// default frequency (high-frequency pairs) to it divided by factor (low-frequency pairs).
// Arithmetic follows torch's float32 order of operations so values match transformers to within
// an ulp or so (the pow is computed in double and rounded).
std::vector<float> rope_inv_freq(const ModelConfig& config);

// `config` with the sliding layers' RoPE (config.sliding_rope, Gemma 3) as its rope_theta /
// rope_scaling; `config` itself when it has none. rope_inv_freq of it gives those layers' table.
ModelConfig sliding_rope_config(const ModelConfig& config);

// Every set a token may use: row 0 is rope_inv_freq(config); longrope adds row 1, with
// long_factor in place of short_factor. Each row has rotary_dim / 2 entries.
std::vector<std::vector<float>> rope_inv_freq_tables(const ModelConfig& config);

// The factor transformers multiplies cos and sin by: longrope's and yarn's attention_factor (the
// same for both longrope sets); 1.0 for default, linear and llama3.
float rope_attention_scaling(const ModelConfig& config);

// The row of rope_inv_freq_tables a LongRoPE token uses: 1 (long) when
// max(seq_len, position + 1) > original_max_position_embeddings (O), else 0 (short).
//
// transformers picks one set per forward pass (dynamic_rope_update): long when the pass's
// largest position + 1 exceeds O. Phi3's generate() runs the prompt in one pass, then one token
// per pass, and the first time the sequence would pass O tokens it drops the KV cache and
// recomputes the whole sequence with the long set (Phi3ForCausalLM.prepare_inputs_for_generation),
// so at every step all of a sequence's positions use the set its current length selects.
//
// With seq_len 0 (the engine does not track it) the set is a function of the position alone, so
// the KV of a position never depends on how the engine chunked, batched, preempted or shared it
// (prefix caching, forks): exact for every sequence of at most O tokens; past O, every new token
// uses the long set as in transformers, but the keys of positions < O stay short where
// transformers would have recomputed them long (and a prompt longer than O has its first O
// positions short where transformers' single pass uses long).
//
// seq_len = the sequence's length (all its tokens known at this step) makes every token of it
// long once that length exceeds O: exact as transformers if the coordinator also recomputes the
// sequence's KV the step its length first exceeds O and keeps KV computed under the two sets
// apart in its prefix cache.
int32_t longrope_table(const RopeScaling& rope, int64_t position, int64_t seq_len);

// The LongRoPE row of every token of `batch` (I32 [num_tokens]), by longrope_table with
// seq_len = batch.longrope_seq_len[s] for the tokens of sequence s (0 when it is empty).
Tensor longrope_token_tables(const ModelConfig& config, const ForwardBatch& batch);

}  // namespace weft
