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

// Dynamic NTK (transformers' _compute_dynamic_ntk_parameters): the default frequencies of base
// theta * (factor * L / M - (factor - 1))^(d / (d - 2)), L = max(seq_len, M), M =
// max_position_embeddings, d = rotary_dim; the default set while L = M. Computed in float32 in
// torch's order of operations.
std::vector<float> dynamic_ntk_inv_freq(const ModelConfig& config, int64_t seq_len);

// The length whose dynamic NTK frequencies a token at `position` uses in a sequence whose prompt
// has `prompt_len` tokens: prompt_len for a prompt token, position + 1 for a generated one.
//
// transformers recomputes the frequencies whenever a forward pass's largest position + 1
// exceeds every length seen before (dynamic_rope_update) and cached keys keep theirs. Its
// generate() runs the prompt in one pass (length prompt_len) and then one token per pass, so
// this is exactly what it computes for one sequence on a freshly loaded model, whatever way the
// engine chunks, batches, preempts or speculates. (transformers' own result also depends on the
// longest pass the module saw before and, when batched, on the other sequences' lengths.)
// prompt_len 0 (not known) treats every token as generated.
int64_t dynamic_ntk_seq_len(int64_t position, int64_t prompt_len);

// The dynamic NTK frequencies of one forward pass: one row per length its tokens use, and each
// token's row (model/forward_batch.h: prompt_len per sequence).
struct TokenRopeTables {
  Tensor inv_freq;  // F32 [rows, rotary_dim / 2]
  Tensor rows;      // I32 [num_tokens]
};
TokenRopeTables dynamic_ntk_token_tables(const ModelConfig& config, const ForwardBatch& batch);

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
// The engine passes seq_len = the sequence's prompt length as its RoPE sees it
// (ForwardBatch::prompt_len): a prompt token uses the set of its prompt's length and a generated
// token the set of its own position + 1, so the KV of a position depends on the position and
// that length alone, never on how the engine chunked, batched or preempted. A prompt longer than
// O is long everywhere, as transformers' single pass. A sequence that starts within O and
// generates past it is recomputed at the step it first needs position O with all its tokens
// counted as prompt (Scheduler, SchedulerConfig::longrope_switch), so from then on it is long
// everywhere, as Phi3's generate() makes it. Sequences long everywhere share no KV through the
// prefix cache (model_config.h: prompt_dependent_kv_above). seq_len 0: the position alone
// decides.
int32_t longrope_table(const RopeScaling& rope, int64_t position, int64_t seq_len);

// The LongRoPE row of every token of `batch` (I32 [num_tokens]), by longrope_table with
// seq_len = batch.prompt_len[s] for the tokens of sequence s (0 when it is empty).
Tensor longrope_token_tables(const ModelConfig& config, const ForwardBatch& batch);

}  // namespace weft
