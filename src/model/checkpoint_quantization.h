// The `quantization_config` of a Hugging Face checkpoint (config.json): how its linear weights are
// stored, read once from the config and then used by the weight store (to turn the stored tensors
// into weft's dtypes, model/checkpoint_weights.h) and by the weight plan (bytes per rank).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "model/json_reader.h"

namespace weft {

enum class CheckpointQuantMethod {
  kNone,              // no quantization_config: dense weights
  kCompressedTensors, // quant_method "compressed-tensors" (llm-compressor / vLLM)
  kGptq,              // quant_method "gptq" (auto-gptq, gptqmodel, optimum)
  kAwq,               // quant_method "awq", version "gemm" (AutoAWQ, gptqmodel)
  kFp8,               // quant_method "fp8" (transformers' FineGrainedFP8, DeepSeek / Qwen FP8)
};

// How one quantized linear weight is stored in the checkpoint.
enum class StoredWeightFormat {
  kNone,
  // compressed-tensors "pack-quantized", 4 bits, strategy group: weight_packed int32 [out, in/8]
  // (element i of a row at bits 4*(i%8) of word i/8, stored as q + 8), weight_scale [out, in/g],
  // weight_zero_point int32 [out/8, in/g] packed the same way along the output dimension (when
  // asymmetric), weight_shape [out, in]. Value = scale * (q - zero).
  kPackedInt4Group,
  // compressed-tensors "int-quantized", 8 bits, strategy channel: weight int8 [out, in],
  // weight_scale [out, 1] (symmetric; value = scale * q).
  kInt8Channel,
  // GPTQ, 4 or 8 bits (p = 32 / bits values per int32, element k of a word at bits k * bits):
  // qweight int32 [in/p, out] packed along the input dimension, qzeros int32 [groups, out/p]
  // along the output, scales f16 [groups, out], g_idx int32 [in] (the group of each input
  // column). Value = scale * (q - zero), where zero is the stored one plus 1 in the original
  // (v1, checkpoint_format "gptq") format, added to the whole word as auto-gptq and gptqmodel do,
  // and the stored one in gptqmodel's "gptq_v2".
  kGptq,
  // AWQ gemm, 4 bits: qweight int32 [in, out/8] packed along the output dimension with columns
  // 8j + (0, 2, 4, 6, 1, 3, 5, 7) in nibbles 0..7 of word j, qzeros int32 [groups, out/8] the
  // same, scales f16 [groups, out]. Value = scale * (q - zero).
  kAwqGemm,
  // FP8 E4M3: weight f8_e4m3 [out, in] and one F32 / BF16 / F16 scale per block of
  // fp8_block_rows x fp8_block_cols elements (compressed-tensors float-quantized: weight_scale
  // per tensor [1], per channel [out, 1], or per block; native fp8: weight_scale_inv
  // [ceil(out / 128), ceil(in / 128)] for weight_block_size [128, 128]). Value = fp8 * scale.
  kFp8,
};

struct CheckpointQuantization {
  CheckpointQuantMethod method = CheckpointQuantMethod::kNone;
  StoredWeightFormat format = StoredWeightFormat::kNone;
  int64_t group_size = 0;  // elements per group along the input; -1: one group per row (GPTQ)
  int bits = 4;
  bool symmetric = true;
  bool desc_act = false;    // GPTQ act-order: g_idx permutes the groups
  int zero_offset = 0;      // GPTQ v1: 1 (added to the stored zero points)
  // kFp8: the elements one scale covers (0: the whole dimension), and the scale tensor's name.
  int64_t fp8_block_rows = 0;
  int64_t fp8_block_cols = 0;
  std::string fp8_scale_name = "weight_scale";
  // The checkpoint quantizes activations too (compressed-tensors input_activations, W8A8): weft
  // keeps them F32 (W8A16), which `describe()` states.
  bool quantized_activations = false;
  // Modules kept dense: compressed-tensors `ignore` entries, exact module names or "re:" regular
  // expressions (full match), e.g. "lm_head"; GPTQ / AWQ modules_to_not_convert (exact names).
  // The weight store checks each names a module.
  std::vector<std::string> ignore;
  std::string ignore_field = "ignore";  // the config field `ignore` came from, for errors

  // compressed-tensors config groups other than one group targeting every Linear (several
  // groups, a "mixed-precision" checkpoint, or targets naming modules): each group's scheme (the
  // fields above from `format` to `quantized_activations`; no groups, no ignore list) and name,
  // and the targets in the order compressed-tensors' match_targets tries them: exact module
  // names, then "re:" patterns (each sorted as strings), then the class "Linear". A target that
  // several groups list belongs to the last of them (compressed-tensors maps targets to groups
  // in a dict). Empty: this object's own fields are the one scheme, for every quantized module.
  std::vector<CheckpointQuantization> group_schemes;
  std::vector<std::string> group_names;
  std::vector<std::pair<std::string, size_t>> targets;  // target, index into group_schemes

  bool enabled() const { return method != CheckpointQuantMethod::kNone; }
  // Whether decoder linear module `module` ("model.layers.0.self_attn.q_proj") of full shape
  // [rows, cols] is stored quantized: enabled, not ignored, matched by a group's target (when
  // there are groups), and for native FP8 only when its blocks tile the weight (transformers'
  // Fp8Quantize leaves other shapes dense).
  bool quantizes(const std::string& module) const;
  bool quantizes(const std::string& module, int64_t rows, int64_t cols) const;
  // The scheme module `module` is stored in: the group whose target matches it first (see
  // `targets`), or this object when there are no groups. For a module quantizes() keeps dense,
  // this object (whose format is kNone when there are groups).
  const CheckpointQuantization& scheme_for(const std::string& module) const;
  // Every scheme the checkpoint uses: the groups', or this object.
  std::vector<const CheckpointQuantization*> schemes() const;
  // The dtype weft holds such a weight in: Q4_0 / Q4_1 (int4 group 32), I4G64 / I4G128
  // (groups 64, 128), I8 (+ an F32 scale per row) for compressed-tensors int8; F32 (the exact
  // dequantized values: an f16 scale times an integer below 2^9 has at most 20 significant
  // bits) where no weft layout holds the values: GPTQ 8-bit, GPTQ group_size -1, GPTQ desc_act,
  // AWQ groups other than 32 / 64 / 128. FP8: F8B64 (the e4m3 bytes, an F32 scale per 64
  // elements of a row: per-tensor, per-channel and per-block scales whose columns are whole
  // 64s) for weights whose input columns are a multiple of 64 (fp8_dtype()), else F32.
  DType weft_dtype() const;
  // The dtype a quantized weight of `cols` input columns (the full tensor's) is held in:
  // weft_dtype(), except FP8 weights that F8B64 cannot hold (cols or the scale blocks' columns
  // not a multiple of 64): F32, dequantized at load (fp8 * scale: 4 significant bits times the
  // scale's, exact for bf16 / f16 scales, rounded once to F32 for F32 scales).
  DType held_dtype(int64_t cols) const;
  // The group of a block dtype (its block), 0 when weft_dtype() is I8 or F32.
  int64_t block_group() const;
  // Bytes of a [rows, cols] shard of a quantized linear weight of `full_cols` input columns as
  // weft holds it (with the F32 row scales of the int8 path).
  int64_t shard_bytes(int64_t rows, int64_t cols, int64_t full_cols) const;
  // One line for weft info: the checkpoint's scheme and weft's layout, with what the mapping
  // rounds or that it is exact ("compressed-tensors pack-quantized int4 group 128 asymmetric ->
  // i4g128f (f32 scale and minimum -scale*zero, exact)").
  std::string describe() const;
};

// Whether ignore entry or config-group target `entry` names `module`: an exact module name, or
// "re:" and a regular expression that matches from the start of the name (Python's re.match, as
// compressed-tensors and vLLM apply them: "re:.*mlp\.down" names "...mlp.down_proj").
bool ignore_entry_matches(const std::string& entry, const std::string& module);

// Reads config.json's quantization_config object. Errors (naming `source`, the field and the
// value): an unknown or unimplemented quant_method, format, bit width, strategy, group size (32,
// 64, 128 for int4), no config group, a target that names a class other than Linear or is not
// a valid pattern, a group without a format in a "mixed-precision" checkpoint, a weight type
// other than int, an ignore entry that is not a string; GPTQ bits other than 4 / 8,
// an unknown checkpoint_format; AWQ version other than gemm, zero_point false, bits other than 4.
absl::StatusOr<CheckpointQuantization> parse_checkpoint_quantization(const nlohmann::json& object,
                                                                     const std::string& source);

// The quantization_config of `model_dir`/config.json; none when the file or the field is absent.
// Errors: those of parse_checkpoint_quantization, and a config.json that is not JSON.
absl::StatusOr<CheckpointQuantization> read_checkpoint_quantization(
    const std::filesystem::path& model_dir);

}  // namespace weft
