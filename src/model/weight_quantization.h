// Whether a rank quantizes its linear weights at load (--quantize).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"

namespace weft {

enum class WeightQuantization {
  kNone,  // the checkpoint's dtype
  kInt8,  // W8A16: int8 per output row (kernels/quantize.h), activations F32
};

// "none" or "int8"; anything else is an error naming --quantize.
absl::StatusOr<WeightQuantization> parse_weight_quantization(std::string_view name);
const char* weight_quantization_name(WeightQuantization q);

}  // namespace weft
