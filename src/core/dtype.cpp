#include "core/dtype.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace weft {

size_t dtype_size(DType dtype) {
  if (is_block_quantized(dtype)) {
    std::fprintf(stderr, "weft: internal error: dtype_size(%s) of a block-quantized dtype\n",
                 dtype_name(dtype));
    std::abort();
  }
  return dtype_block_bytes(dtype);
}

size_t dtype_nbytes(DType dtype, int64_t numel) {
  const int64_t block = dtype_block_elems(dtype);
  return static_cast<size_t>(numel / block) * dtype_block_bytes(dtype);
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kQ8_0: return "q8_0";
    case DType::kQ4_0: return "q4_0";
    case DType::kQ4_1: return "q4_1";
    case DType::kQ5_0: return "q5_0";
    case DType::kQ5_1: return "q5_1";
    case DType::kQ4_K: return "q4_k";
    case DType::kQ5_K: return "q5_k";
    case DType::kQ6_K: return "q6_k";
    case DType::kI4G64: return "i4g64";
    case DType::kI4G128: return "i4g128";
    case DType::kF8E4M3: return "f8_e4m3";
    case DType::kF8B64: return "f8b64";
    case DType::kI4G32F: return "i4g32f";
    case DType::kI4G64F: return "i4g64f";
    case DType::kI4G128F: return "i4g128f";
  }
  return "?";
}

absl::StatusOr<DType> dtype_from_safetensors(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  if (name == "I32") return DType::kI32;
  if (name == "I64") return DType::kI64;
  if (name == "I8") return DType::kI8;
  if (name == "U8") return DType::kU8;
  if (name == "F8_E4M3") return DType::kF8E4M3;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported safetensors dtype \"", std::string(name),
                   "\" (supported: F32, F16, BF16, I32, I64, I8, U8, F8_E4M3)"));
}

absl::StatusOr<DType> dtype_from_string(std::string_view name) {
  if (name == "float32" || name == "f32" || name == "fp32") return DType::kF32;
  if (name == "float16" || name == "f16" || name == "fp16" || name == "half") return DType::kF16;
  if (name == "bfloat16" || name == "bf16") return DType::kBF16;
  return absl::InvalidArgumentError(absl::StrCat(
      "unsupported dtype \"", std::string(name), "\" (expected float32, float16 or bfloat16)"));
}

bool is_float_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

}  // namespace weft
