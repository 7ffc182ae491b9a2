// Whether a rank quantizes its linear weights at load (--quantize), and into which layout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/dtype.h"

namespace weft {

enum class WeightQuantization {
  kNone,  // the checkpoint's dtype
  kInt8,  // W8A16: int8 per output row (kernels/quantize.h), activations F32
  // Group-wise int4 (W4A8 in the kernel: kernels/linear.h linear_block_quantized). With a zero
  // point (scale and minimum per group) or symmetric (scale only, values -8..7). Group 32 is
  // GGUF's Q4_1 / Q4_0; 64 and 128 are weft's I4G64 / I4G128 (symmetric ones stored with
  // minimum -8 * scale).
  kInt4G32,
  kInt4G32Sym,
  kInt4G64,
  kInt4G64Sym,
  kInt4G128,  // "int4": the default int4
  kInt4G128Sym,
  // Straight into a GGUF block type (W8A8 / W4A8 ... in the kernel, as llama.cpp runs them).
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  // FP8 weight-only (W8A16): e4m3 with an F32 scale per 64 elements of a row (F8B64, what FP8
  // checkpoints are held as; kernels/linear.h linear_f8), activations F32.
  kFp8,
};

// The --quantize values: none, int8, int4 (= int4-g128), int4-g32, int4-g64, int4-g128, each
// int4 one also with -sym, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, fp8; anything else is
// an error naming --quantize and listing them.
absl::StatusOr<WeightQuantization> parse_weight_quantization(std::string_view name);
const char* weight_quantization_name(WeightQuantization q);
// "none|int8|int4|..." for flag help.
const char* weight_quantization_choices();

// The block-quantized dtype one weight of `cols` input columns (this rank's shard) takes under
// q (not kNone / kInt8). The int4 groups fall back to the largest smaller group that divides
// cols (128 -> 64 -> 32), since a group may not cross the shard's edge; when none divides (or a
// GGUF type's block does not), an InvalidArgument naming the quantization, cols and the block.
struct QuantizedLayout {
  DType dtype = DType::kQ8_0;
  bool symmetric = false;  // only for kI4G64 / kI4G128 (kernels/block_quant.h)
};
absl::StatusOr<QuantizedLayout> quantized_layout(WeightQuantization q, int64_t cols);

// Bytes of a [rows, cols] linear weight under q (of `dtype_bytes` per element when kNone, or
// when q's layout does not fit cols: loading then fails with quantized_layout's error).
int64_t quantized_weight_bytes(WeightQuantization q, int64_t rows, int64_t cols,
                               int64_t dtype_bytes);

}  // namespace weft
