#include "engine/rank_model.h"

#include <algorithm>

#include "core/status_macros.h"
#include "kv/memory_budget.h"

namespace weft {

KvCacheShape RankModel::kv_shape(const KvCacheOptions& options) const {
  DType dtype = options.dtype.value_or(config.torch_dtype);
  if (!is_float_dtype(dtype) && dtype != DType::kI8) dtype = DType::kF32;
  return model->kv_cache_shape(options.block_size, dtype);
}

int64_t RankModel::blocks_fitting(const KvCacheOptions& options) const {
  const int64_t per_block = std::max<int64_t>(1, kv_shape(options).bytes_per_block());
  int64_t blocks = kv_budget_bytes(options.memory_bytes, options.memory_fraction) / per_block;
  if (options.max_blocks > 0) blocks = std::min(blocks, options.max_blocks);
  return blocks;
}

absl::StatusOr<std::unique_ptr<RankModel>> load_rank_model(const std::filesystem::path& model_dir,
                                                           Communicator& tp,
                                                           const StageLayout& layout,
                                                           const ModelLoadOptions& options) {
  auto rank_model = std::make_unique<RankModel>();
  WEFT_ASSIGN_OR_RETURN(rank_model->config, load_model_config(model_dir));
  WEFT_ASSIGN_OR_RETURN(rank_model->generation, load_generation_config(model_dir, rank_model->config));
  WEFT_ASSIGN_OR_RETURN(rank_model->weights, WeightStore::open(model_dir));
  WEFT_ASSIGN_OR_RETURN(rank_model->model,
                        DecoderModel::load(rank_model->config, rank_model->weights, tp, layout,
                                           options));
  return rank_model;
}

absl::StatusOr<std::unique_ptr<RankModel>> load_whole_model(const std::filesystem::path& model_dir,
                                                            Communicator& tp,
                                                            const ModelLoadOptions& options) {
  WEFT_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(model_dir));
  WEFT_ASSIGN_OR_RETURN(StageLayout layout,
                        stage_layout(static_cast<int>(config.num_hidden_layers), 1, 0));
  return load_rank_model(model_dir, tp, layout, options);
}

}  // namespace weft
