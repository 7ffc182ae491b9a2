#include "engine/model_kv_rules.h"

namespace weft {

void apply_model_kv_rules(const ModelConfig& model, SchedulerConfig& config) {
  config.attention_window = kv_window(model);
  config.prompt_dependent_kv_above = prompt_dependent_kv_above(model);
  config.longrope_switch = model.rope_scaling.type == RopeScalingType::kLongRope
                               ? model.rope_scaling.original_max_position_embeddings
                               : 0;
}

}  // namespace weft
