#include "model/weight_quantization.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<WeightQuantization> parse_weight_quantization(std::string_view name) {
  if (name == "none") return WeightQuantization::kNone;
  if (name == "int8") return WeightQuantization::kInt8;
  return absl::InvalidArgumentError(
      absl::StrCat("--quantize: expected none or int8, got '", std::string(name), "' (int4 is not implemented yet)"));
}

const char* weight_quantization_name(WeightQuantization q) {
  return q == WeightQuantization::kInt8 ? "int8" : "none";
}

}  // namespace weft
