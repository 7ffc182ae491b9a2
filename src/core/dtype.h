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
};

// Bytes per element.
size_t dtype_size(DType dtype);

// Short lower-case name: "f32", "f16", "bf16", "i32", "i64", "i8", "u8".
const char* dtype_name(DType dtype);

// Parses a safetensors dtype string ("F32", "F16", "BF16", "I32", "I64", "I8", "U8").
// Any other string is an InvalidArgument naming it.
absl::StatusOr<DType> dtype_from_safetensors(std::string_view name);

// Parses a user-facing dtype ("float32"/"f32", "float16"/"f16", "bfloat16"/"bf16").
absl::StatusOr<DType> dtype_from_string(std::string_view name);

// True for the floating types weights and activations may use (F32, F16, BF16).
bool is_float_dtype(DType dtype);

}  // namespace weft
