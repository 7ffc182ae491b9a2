// What a model's attention and RoPE demand of the scheduler's KV handling: which blocks may be
// freed (sliding windows), which sequences may share KV through the prefix cache (RoPE that
// depends on the prompt's length), and when a sequence must be recomputed (LongRoPE's switch to
// its long factors). One place, so the one-process and the distributed engine agree.
#pragma once

#include "engine/scheduler.h"
#include "model/model_config.h"

namespace weft {

// Sets SchedulerConfig::attention_window, prompt_dependent_kv_above and longrope_switch from
// the model; leaves the rest of `config` as it is.
void apply_model_kv_rules(const ModelConfig& model, SchedulerConfig& config);

}  // namespace weft
