// One rank's share of a model directory: its config, its weight shard, its pipeline stage of the
// decoder and its slice of the KV cache, loaded together.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "kv/kv_cache.h"
#include "model/decoder_model.h"
#include "model/model_config.h"
#include "model/stage_layout.h"
#include "model/weight_store.h"
#include "parallel/communicator.h"

namespace weft {

struct KvCacheOptions {
  int block_size = 16;
  std::optional<DType> dtype;        // absent: the model's dtype (F32 for F32 models, else BF16/F16);
                                     // I8: int8 with per-token-per-head F32 scales
  int64_t memory_bytes = 1ll << 30;  // this rank's budget for KV blocks
  double memory_fraction = 0;        // > 0: the budget is this fraction of the available memory
                                     // (kv/memory_budget.h) instead of memory_bytes
  int64_t max_blocks = 0;            // > 0: at most this many blocks (tests, small runs)
};

struct RankModel {
  ModelConfig config;
  GenerationConfig generation;
  WeightStore weights;
  std::unique_ptr<DecoderModel> model;

  // Blocks this rank's budget holds (the job agrees on the minimum over ranks).
  int64_t blocks_fitting(const KvCacheOptions& options) const;
  KvCacheShape kv_shape(const KvCacheOptions& options) const;
};

// `options`: expert parallelism and weight quantization (model/layers/load_context.h).
absl::StatusOr<std::unique_ptr<RankModel>> load_rank_model(const std::filesystem::path& model_dir,
                                                           Communicator& tp,
                                                           const StageLayout& layout,
                                                           const ModelLoadOptions& options = {});

// The layout of a single process holding every layer.
absl::StatusOr<std::unique_ptr<RankModel>> load_whole_model(const std::filesystem::path& model_dir,
                                                            Communicator& tp,
                                                            const ModelLoadOptions& options = {});

}  // namespace weft
