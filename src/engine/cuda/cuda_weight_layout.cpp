#include "engine/cuda/cuda_weight_layout.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "engine/cuda/device_memory_plan.h"
#include "weft/kernels/block_quant.h"

namespace weft {
namespace {

// A tensor every rank holds whole ([n] or [n, cols]).
ColumnPart whole(const std::string& name, int64_t n) { return ColumnPart{name, n, ShardRange{0, n}}; }

// Converts `n` elements of `src` (F32, F16, BF16 or F8B64) to `dtype` (F16 or BF16) into `dst`.
absl::Status convert(const void* src, DType src_dtype, int64_t n, DType dtype, uint16_t* dst,
                     const std::string& name) {
  auto narrow = [dtype](float f) { return dtype == DType::kF16 ? float_to_f16(f) : float_to_bf16(f); };
  if (src_dtype == dtype) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(uint16_t));
    return absl::OkStatus();
  }
  if (src_dtype == DType::kF8B64) {
    // FP8 checkpoints' weights (F8B64 on the CPU): dequantized (e4m3 * scale, exact in F32 for
    // F16 / BF16 scales) and rounded once to the compute dtype; no CUDA FP8 kernel yet.
    std::vector<float> row(static_cast<size_t>(n));
    kernels::dequantize_row(src_dtype, src, row.data(), n);
    for (int64_t i = 0; i < n; ++i) dst[i] = narrow(row[i]);
    return absl::OkStatus();
  }
  if (is_block_quantized(src_dtype)) {
    // CUDA twins of the block-quantized kernels exist (gemv_quantized) but the executor does not
    // use them yet.
    return absl::UnimplementedError(absl::StrCat(
        "--device cuda: tensor '", name, "' is block-quantized (", dtype_name(src_dtype),
        "); block-quantized weights run on the CPU only for now (--device cpu)"));
  }
  switch (src_dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) dst[i] = narrow(static_cast<const float*>(src)[i]);
      return absl::OkStatus();
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = narrow(f16_to_float(static_cast<const uint16_t*>(src)[i]));
      return absl::OkStatus();
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = narrow(bf16_to_float(static_cast<const uint16_t*>(src)[i]));
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' has dtype ", dtype_name(src_dtype),
                                                     ", expected F32, F16 or BF16"));
  }
}

}  // namespace

absl::StatusOr<CudaWeightLayout> cuda_weight_layout(const ModelConfig& c, DType dtype, const CudaRankShare& share) {
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA weights: compute dtype must be F16 or BF16, got ", dtype_name(dtype)));
  }
  const int layers = static_cast<int>(c.num_hidden_layers);
  const int end_layer = share.end_layer < 0 ? layers : share.end_layer;
  if (share.tp_size < 1 || share.tp_rank < 0 || share.tp_rank >= share.tp_size || share.first_layer < 0 ||
      share.first_layer > end_layer || end_layer > layers) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA weights: tensor-parallel rank ", share.tp_rank, " of ",
                                                   share.tp_size, ", layers [", share.first_layer, ", ", end_layer,
                                                   ") do not describe a share of a ", layers, "-layer model"));
  }
  const int rank = share.tp_rank, size = share.tp_size;
  const int64_t h = c.hidden_size, d = c.head_dim;
  CudaWeightLayout out;
  out.dtype = dtype;
  out.first_layer = share.first_layer;
  out.end_layer = end_layer;
  out.last_stage = share.last_stage;
  const ShardRange vocab = padded_shard(c.vocab_size, rank, size);
  out.vocab_begin = vocab.begin;
  out.vocab_rows = vocab.count;
  out.tied_head = c.tie_word_embeddings;
  auto column = [&](CudaWeightSlot slot, int layer, std::vector<ColumnPart> parts, const char* suffix, int64_t cols) {
    CudaWeightEntry e;
    e.slot = slot;
    e.layer = layer;
    e.cols = cols;
    e.suffix = suffix;
    for (const ColumnPart& p : parts) e.rows += p.shard.count;
    e.parts = std::move(parts);
    out.entries.push_back(std::move(e));
  };
  auto row_parallel = [&](CudaWeightSlot slot, int layer, const RowPart& part) {
    CudaWeightEntry e;
    e.slot = slot;
    e.layer = layer;
    e.rows = part.out_features;
    e.cols = part.shard.count;
    e.row_parallel = true;
    e.row = part;
    out.entries.push_back(std::move(e));
  };
  if (share.first_stage || (share.last_stage && c.tie_word_embeddings)) {
    column(CudaWeightSlot::kEmbedding, -1, {{"model.embed_tokens", c.vocab_size, vocab}}, ".weight", h);
  }
  for (int i = share.first_layer; i < end_layer; ++i) {
    const std::string p = absl::StrCat("model.layers.", i);
    WEFT_ASSIGN_OR_RETURN(AttentionShards attn, attention_shards(c, p + ".self_attn", rank, size));
    const MlpShards mlp = mlp_shards(c, p + ".mlp", rank, size);
    column(CudaWeightSlot::kInputNorm, i, {whole(p + ".input_layernorm", h)}, ".weight", 0);
    column(CudaWeightSlot::kQkv, i, attn.qkv, ".weight", h);
    if (c.attention_bias) column(CudaWeightSlot::kQkvBias, i, attn.qkv, ".bias", 0);
    if (c.qk_norm) {
      column(CudaWeightSlot::kQNorm, i, {whole(p + ".self_attn.q_norm", d)}, ".weight", 0);
      column(CudaWeightSlot::kKNorm, i, {whole(p + ".self_attn.k_norm", d)}, ".weight", 0);
    }
    row_parallel(CudaWeightSlot::kOProj, i, attn.o_proj);
    // A row-parallel bias joins the sum once: on the group's first rank only.
    if (c.o_proj_bias && rank == 0) column(CudaWeightSlot::kOBias, i, {whole(attn.o_proj.name, h)}, ".bias", 0);
    column(CudaWeightSlot::kPostNorm, i, {whole(p + ".post_attention_layernorm", h)}, ".weight", 0);
    column(CudaWeightSlot::kGateUp, i, mlp.gate_up, ".weight", h);
    if (c.mlp_bias) column(CudaWeightSlot::kGateUpBias, i, mlp.gate_up, ".bias", 0);
    row_parallel(CudaWeightSlot::kDown, i, mlp.down);
    if (c.mlp_bias && rank == 0) column(CudaWeightSlot::kDownBias, i, {whole(mlp.down.name, h)}, ".bias", 0);
  }
  if (share.last_stage) {
    column(CudaWeightSlot::kFinalNorm, -1, {whole("model.norm", h)}, ".weight", 0);
    if (!c.tie_word_embeddings) {
      column(CudaWeightSlot::kLmHead, -1, {{"lm_head", c.vocab_size, vocab}}, ".weight", h);
    }
  }
  const int64_t es = static_cast<int64_t>(dtype_size(dtype));
  for (CudaWeightEntry& e : out.entries) {
    e.offset = out.total_bytes;
    out.total_bytes += align_device_bytes(e.rows * std::max<int64_t>(e.cols, 1) * es);
  }
  return out;
}

absl::Status pack_cuda_weight(const CudaWeightEntry& e, const WeightStore& weights, DType dtype,
                              std::vector<uint16_t>& out) {
  out.resize(static_cast<size_t>(e.rows * std::max<int64_t>(e.cols, 1)));
  if (e.row_parallel) {
    const std::string name = e.row.name + ".weight";
    WEFT_ASSIGN_OR_RETURN(Tensor t, weights.get_slice(name, Shape{e.row.out_features, e.row.full_in}, 1,
                                                      e.row.shard.begin, e.row.shard.count));
    return convert(t.data(), t.dtype(), t.numel(), dtype, out.data(), name);
  }
  int64_t at = 0;
  for (const ColumnPart& part : e.parts) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_part_rows(weights, part, e.suffix, e.cols));
    WEFT_RETURN_IF_ERROR(convert(t.data(), t.dtype(), t.numel(), dtype, out.data() + at, part.name + e.suffix));
    at += t.numel();
  }
  if (at != static_cast<int64_t>(out.size())) {
    return absl::InternalError(absl::StrCat("CUDA weights: the parts of a ", e.rows, "-row entry read ", at,
                                            " elements, ", out.size(), " expected"));
  }
  return absl::OkStatus();
}

}  // namespace weft
