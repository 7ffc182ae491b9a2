// Element types of tensors, and the one place that maps them to sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace weft {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  kI64,
  kI8,
  kU8,
  // Block-quantized weights in GGUF's (ggml's) byte layouts, bit for bit: each run of
  // dtype_block_elems() consecutive elements of a row is one block of dtype_block_bytes() bytes
  // (scales, minimums and packed values). A tensor of these types has its logical element shape;
  // its last dimension must be a multiple of the block's element count.
  kQ8_0,  // 32 elements: f16 scale, 32 x int8                                  (34 bytes)
  kQ4_0,  // 32: f16 scale, 32 x 4-bit (value - 8)                              (18 bytes)
  kQ4_1,  // 32: f16 scale, f16 minimum, 32 x 4-bit                             (20 bytes)
  kQ5_0,  // 32: f16 scale, 32 high bits, 32 x 4-bit low bits (value - 16)      (22 bytes)
  kQ5_1,  // 32: f16 scale, f16 minimum, 32 high bits, 32 x 4-bit low bits      (24 bytes)
  kQ4_K,  // 256: f16 super-scale and super-minimum, 8 x 6-bit sub-block scales
          //      and minimums, 256 x 4-bit                                     (144 bytes)
  kQ5_K,  // 256: as Q4_K plus 256 high bits                                    (176 bytes)
  kQ6_K,  // 256: 256 x 4-bit low, 256 x 2-bit high, 16 x int8 scales, f16 scale (210 bytes)
  // weft's group-wise int4 (--quantize int4-g64 / int4-g128; group 32 uses Q4_1 / Q4_0): Q4_1's
  // layout with a longer group: f16 scale d, f16 minimum m, then g/2 bytes whose low nibbles are
  // elements [0, g/2) and high nibbles elements [g/2, g); element = d * nibble + m. Symmetric
  // quantization stores m = -8 d. Not a GGUF type.
  kI4G64,   // 64 elements  (36 bytes)
  kI4G128,  // 128 elements (68 bytes)
  // FP8 E4M3 ("float8_e4m3fn": sign, 4 exponent bits with bias 7, 3 mantissa bits, no
  // infinities, S.1111.111 is NaN), safetensors "F8_E4M3". Only read: checkpoints' FP8 weights
  // are held as kF8B64 (model/checkpoint_weights.h); no kernel takes bare e4m3.
  kF8E4M3,
  // weft's FP8 weight layout: 64 elements: the block's F32 scale, then 64 x e4m3 (no NaN codes);
  // element = e4m3 * scale (exact in F32 for F16 / BF16 scales). Per-tensor, per-channel and
  // 128 x 128 block scales of FP8 checkpoints all map onto it (a 64 block, not 128, so that a
  // tensor-parallel shard of 64 input columns stays in the layout). Not a GGUF type.
  kF8B64,   // 64 elements  (68 bytes)
  // weft's exact int4 groups, for checkpoints whose int4 groups have zero points (GPTQ, AWQ,
  // compressed-tensors asymmetric): kI4G64's layout with F32 fields: F32 scale d, F32 minimum m,
  // then g/2 bytes of nibbles (low nibbles elements [0, g/2), high nibbles [g/2, g)); element =
  // d * nibble + m. A checkpoint's f16 / bf16 scale s and integer zero z give d = s and
  // m = -s * z exactly, so every element d * q + m is s * (q - z) exactly, as the checkpoint's
  // own dequantization computes it (kQ4_1 and kI4G* round d and m to f16). Not a GGUF type.
  kI4G32F,   // 32 elements  (24 bytes)
  kI4G64F,   // 64 elements  (40 bytes)
  kI4G128F,  // 128 elements (72 bytes)
};

// Bytes per element of a plain (not block-quantized) dtype. Aborts on a block-quantized one,
// whose elements have no whole size: use dtype_nbytes().
size_t dtype_size(DType dtype);

// Elements per block: 1 for plain dtypes, 32 or 256 for block-quantized ones. constexpr (and
// inline): the kernels' per-step address arithmetic uses it, where a call would cost more than
// the step's work.
constexpr int64_t dtype_block_elems(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kI4G32F: return 32;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return 256;
    case DType::kI4G64:
    case DType::kI4G64F:
    case DType::kF8B64: return 64;
    case DType::kI4G128:
    case DType::kI4G128F: return 128;
    default: return 1;
  }
}

// Bytes per block (dtype_size() for plain dtypes).
constexpr size_t dtype_block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kQ8_0: return 34;
    case DType::kQ4_0: return 18;
    case DType::kQ4_1: return 20;
    case DType::kQ5_0: return 22;
    case DType::kQ5_1: return 24;
    case DType::kQ4_K: return 144;
    case DType::kQ5_K: return 176;
    case DType::kQ6_K: return 210;
    case DType::kI4G64: return 36;
    case DType::kI4G128: return 68;
    case DType::kF8E4M3: return 1;
    case DType::kF8B64: return 68;
    case DType::kI4G32F: return 24;
    case DType::kI4G64F: return 40;
    case DType::kI4G128F: return 72;
  }
  return 0;
}

constexpr bool is_block_quantized(DType dtype) { return dtype_block_elems(dtype) > 1; }

// Bytes of `numel` elements; for block-quantized dtypes numel must be a whole number of blocks.
size_t dtype_nbytes(DType dtype, int64_t numel);

// Short lower-case name: "f32", "f16", "bf16", "i32", "i64", "i8", "u8", "q8_0", "q4_k", ...
const char* dtype_name(DType dtype);

// Parses a safetensors dtype string ("F32", "F16", "BF16", "I32", "I64", "I8", "U8", "F8_E4M3").
// Any other string is an InvalidArgument naming it.
absl::StatusOr<DType> dtype_from_safetensors(std::string_view name);

// Parses a user-facing dtype ("float32"/"f32", "float16"/"f16", "bfloat16"/"bf16").
absl::StatusOr<DType> dtype_from_string(std::string_view name);

// True for the floating types weights and activations may use (F32, F16, BF16).
bool is_float_dtype(DType dtype);

}  // namespace weft
