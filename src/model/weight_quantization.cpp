#include "model/weight_quantization.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

struct Scheme {
  WeightQuantization q;
  const char* name;
  // The layout at full group size; int4 groups below it are tried on a misfit.
  DType dtype;
  bool symmetric;
  bool int4_groups;
};

constexpr Scheme kSchemes[] = {
    {WeightQuantization::kNone, "none", DType::kF32, false, false},
    {WeightQuantization::kInt8, "int8", DType::kI8, false, false},
    {WeightQuantization::kInt4G128, "int4", DType::kI4G128, false, true},
    {WeightQuantization::kInt4G32, "int4-g32", DType::kQ4_1, false, true},
    {WeightQuantization::kInt4G32Sym, "int4-g32-sym", DType::kQ4_0, true, true},
    {WeightQuantization::kInt4G64, "int4-g64", DType::kI4G64, false, true},
    {WeightQuantization::kInt4G64Sym, "int4-g64-sym", DType::kI4G64, true, true},
    {WeightQuantization::kInt4G128, "int4-g128", DType::kI4G128, false, true},
    {WeightQuantization::kInt4G128Sym, "int4-g128-sym", DType::kI4G128, true, true},
    {WeightQuantization::kQ8_0, "q8_0", DType::kQ8_0, false, false},
    {WeightQuantization::kQ4_0, "q4_0", DType::kQ4_0, false, false},
    {WeightQuantization::kQ4_1, "q4_1", DType::kQ4_1, false, false},
    {WeightQuantization::kQ5_0, "q5_0", DType::kQ5_0, false, false},
    {WeightQuantization::kQ5_1, "q5_1", DType::kQ5_1, false, false},
    {WeightQuantization::kQ4_K, "q4_k", DType::kQ4_K, false, false},
    {WeightQuantization::kQ5_K, "q5_k", DType::kQ5_K, false, false},
    {WeightQuantization::kQ6_K, "q6_k", DType::kQ6_K, false, false},
    {WeightQuantization::kFp8, "fp8", DType::kF8B64, false, false},
};

constexpr char kChoices[] =
    "none|int8|int4|int4-g32|int4-g64|int4-g128|int4-g32-sym|int4-g64-sym|int4-g128-sym|q8_0|"
    "q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|fp8";

const Scheme& scheme_of(WeightQuantization q) {
  for (const Scheme& s : kSchemes) {
    if (s.q == q) return s;
  }
  return kSchemes[0];
}

// The int4 layout of group `group`.
DType int4_dtype(int64_t group, bool symmetric) {
  if (group == 128) return DType::kI4G128;
  if (group == 64) return DType::kI4G64;
  return symmetric ? DType::kQ4_0 : DType::kQ4_1;
}

}  // namespace

absl::StatusOr<WeightQuantization> parse_weight_quantization(std::string_view name) {
  for (const Scheme& s : kSchemes) {
    if (name == s.name) return s.q;
  }
  return absl::InvalidArgumentError(absl::StrCat("--quantize: expected one of ", kChoices,
                                                 ", got '", std::string(name), "'"));
}

const char* weight_quantization_name(WeightQuantization q) {
  if (q == WeightQuantization::kInt4G128) return "int4-g128";
  return scheme_of(q).name;
}

const char* weight_quantization_choices() { return kChoices; }

absl::StatusOr<QuantizedLayout> quantized_layout(WeightQuantization q, int64_t cols) {
  const Scheme& s = scheme_of(q);
  if (!is_block_quantized(s.dtype)) {
    return absl::InternalError(absl::StrCat("--quantize ", s.name, " has no block layout"));
  }
  if (s.int4_groups) {
    for (int64_t group = dtype_block_elems(s.dtype); group >= 32; group /= 2) {
      if (cols % group == 0) {
        const DType dtype = int4_dtype(group, s.symmetric);
        return QuantizedLayout{dtype, s.symmetric && dtype != DType::kQ4_0};
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--quantize ", weight_quantization_name(q), ": a weight shard of ", cols,
        " input columns is not a multiple of 32, the smallest int4 group"));
  }
  const int64_t block = dtype_block_elems(s.dtype);
  if (cols % block != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--quantize ", s.name, ": a weight shard of ",
                                                   cols, " input columns is not a multiple of ",
                                                   s.name, "'s block of ", block));
  }
  return QuantizedLayout{s.dtype, false};
}

int64_t quantized_weight_bytes(WeightQuantization q, int64_t rows, int64_t cols,
                               int64_t dtype_bytes) {
  if (q == WeightQuantization::kNone) return rows * cols * dtype_bytes;
  if (q == WeightQuantization::kInt8) return rows * cols + rows * 4;
  const absl::StatusOr<QuantizedLayout> layout = quantized_layout(q, cols);
  if (!layout.ok()) return rows * cols * dtype_bytes;
  return static_cast<int64_t>(dtype_nbytes(layout->dtype, rows * cols));
}

}  // namespace weft
