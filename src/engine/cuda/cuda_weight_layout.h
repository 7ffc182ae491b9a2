// What a CUDA rank holds of a dense decoder's weights and how they lie in its one device
// allocation: every tensor in the compute dtype (the checkpoint's BF16 / F16; F32 checkpoints
// rounded to BF16), projections sharing an input fused in the CPU model's order (qkv = [q; k; v]
// rows, gate_up = [gate; up] rows), each cut to the rank's tensor-parallel shard by the same
// description the CPU layers load from (model/layers/layer_shards.h), and only the layers, the
// embedding and the head of the rank's pipeline stage.
//
// Plain host code, built with or without CUDA: the layout and the packed bytes of each tensor
// are checked on CPU-only machines (cuda_weight_layout_test); upload_cuda_weights copies them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "model/layers/layer_shards.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace weft {

// One rank's share of the model.
struct CudaRankShare {
  int tp_rank = 0;
  int tp_size = 1;
  int first_layer = 0;  // this pipeline stage's layers [first_layer, end_layer)
  int end_layer = -1;   // -1: through the last layer
  bool first_stage = true;  // holds the embedding
  bool last_stage = true;   // holds the final norm and the LM head (and the embedding when tied)
};

// Which device tensor an entry is.
enum class CudaWeightSlot {
  kEmbedding, kFinalNorm, kLmHead,
  kInputNorm, kQkv, kQkvBias, kQNorm, kKNorm, kOProj, kOBias, kPostNorm, kGateUp, kGateUpBias, kDown, kDownBias,
};

// One device tensor and where its rows come from: the column parts of the shared description
// (whole tensors are parts of one full shard), stacked by rows, or the input columns of a
// row-parallel weight.
struct CudaWeightEntry {
  CudaWeightSlot slot = CudaWeightSlot::kEmbedding;
  int layer = -1;      // model layer index; -1 for the embedding, final norm and head
  int64_t rows = 0;
  int64_t cols = 0;    // 0: a vector of `rows`
  int64_t offset = 0;  // bytes into the allocation (aligned)
  std::vector<ColumnPart> parts;  // read with read_part_rows(..., suffix, cols)
  std::string suffix = ".weight";
  bool row_parallel = false;  // instead: columns row.shard of row.name's weight
  RowPart row;
};

struct CudaWeightLayout {
  DType dtype = DType::kBF16;            // every entry's
  int first_layer = 0;                   // the share's layers [first_layer, end_layer)
  int end_layer = 0;
  bool last_stage = true;                // holds the final norm and the LM head
  std::vector<CudaWeightEntry> entries;  // in upload order
  int64_t total_bytes = 0;
  int64_t vocab_begin = 0;  // the embedding's / head's vocabulary rows [vocab_begin, + vocab_rows)
  int64_t vocab_rows = 0;   // (padded past vocab_size on the last ranks)
  bool tied_head = false;   // the head reads the embedding entry
};

// The layout of `share` for `config` in `dtype` (F16 or BF16). Errors: a share outside the
// model (layers, ranks), heads that do not split over the ranks.
absl::StatusOr<CudaWeightLayout> cuda_weight_layout(const ModelConfig& config, DType dtype,
                                                    const CudaRankShare& share = {});

// The entry's rows * max(cols, 1) elements in `dtype`, read from `weights` (shapes checked,
// errors naming the tensor) and converted on the host: F32 / F16 / BF16, and FP8 (F8B64)
// dequantized and rounded once. Block-quantized tensors are refused by name.
absl::Status pack_cuda_weight(const CudaWeightEntry& entry, const WeightStore& weights, DType dtype,
                              std::vector<uint16_t>& out);

}  // namespace weft
