#include "model/checkpoint_weights.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "weft/kernels/block_quant.h"

namespace weft {
namespace {

// The stored tensors of one module, with errors that name the file and the tensor.
class ModuleTensors {
 public:
  ModuleTensors(const std::string& module, const StoredTensorLookup& lookup, const std::string& file)
      : module_(module), lookup_(lookup), file_(file) {}

  // "<module>.<field>" of one of `dtypes` and shape `shape` (a rank-2 scale of [n, 1] may also
  // be given as [n] when `shape` is [n]).
  absl::StatusOr<Tensor> get(const std::string& field, std::initializer_list<DType> dtypes,
                             const Shape& shape) const {
    const std::string name = absl::StrCat(module_, ".", field);
    absl::StatusOr<Tensor> t = lookup_(name);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_, ": quantized module '", module_, "' has no tensor '", name, "' (",
          t.status().message(), ")"));
    }
    bool dtype_ok = false;
    std::string allowed;
    for (DType d : dtypes) {
      dtype_ok = dtype_ok || t->dtype() == d;
      absl::StrAppend(&allowed, allowed.empty() ? "" : " or ", dtype_name(d));
    }
    if (!dtype_ok) {
      return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' has dtype ",
                                                     dtype_name(t->dtype()), ", expected ", allowed));
    }
    const bool column = shape.rank() == 1 && t->shape().rank() == 2 && t->dim(1) == 1 &&
                        t->dim(0) == shape[0];
    if (!(t->shape() == shape) && !column) {
      return absl::InvalidArgumentError(absl::StrCat(file_, ": tensor '", name, "' has shape ",
                                                     t->shape().to_string(), ", expected ",
                                                     shape.to_string()));
    }
    return t;
  }

 private:
  const std::string& module_;
  const StoredTensorLookup& lookup_;
  const std::string& file_;
};

constexpr std::initializer_list<DType> kScaleDTypes = {DType::kBF16, DType::kF16, DType::kF32};

float float_at(const Tensor& t, int64_t i) {
  const char* p = static_cast<const char*>(t.data());
  if (t.dtype() == DType::kF32) {
    float v;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p + 2 * i, 2);
  return t.dtype() == DType::kBF16 ? bf16_to_float(bits) : f16_to_float(bits);
}

uint32_t word_at(const Tensor& t, int64_t i) {
  uint32_t v;
  std::memcpy(&v, static_cast<const char*>(t.data()) + 4 * i, 4);
  return v;
}

int64_t int_at(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kI64) {
    int64_t v;
    std::memcpy(&v, static_cast<const char*>(t.data()) + 8 * i, 8);
    return v;
  }
  return static_cast<int32_t>(word_at(t, i));
}

// A [rows, cols] weight whose element (r, c) is scale(r, g) * (code(r, c) - zero(r, g)) for the
// group g = group_of(c), in `dtype`: F32 (computed in float: exact for these integer codes and
// f16 / bf16 scales), or a 4-bit block dtype whose blocks are the groups (group_of(c) = c / block)
// with d = scale and m = -scale * zero: in F32 for the I4G*F types (exact), else f16 (Q4_0: no
// minimum, zero must be 8; I4G64 / I4G128: symmetric groups, m = -8 d exactly).
template <typename Code, typename Zero, typename Scale, typename GroupOf>
Tensor build_weight(DType dtype, int64_t rows, int64_t cols, Code code, Zero zero, Scale scale,
                    GroupOf group_of) {
  Tensor out = Tensor::empty(dtype, Shape{rows, cols});
  if (dtype == DType::kF32) {
    float* dst = out.data_as<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t g = group_of(c);
        dst[r * cols + c] = scale(r, g) * static_cast<float>(code(r, c) - zero(r, g));
      }
    }
    return out;
  }
  const int64_t block = dtype_block_elems(dtype), half = block / 2;
  const size_t block_bytes = dtype_block_bytes(dtype);
  const bool has_minimum = dtype != DType::kQ4_0;
  const bool f32_fields = dtype == DType::kI4G32F || dtype == DType::kI4G64F || dtype == DType::kI4G128F;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / block; ++b) {
      uint8_t* dst = static_cast<uint8_t*>(out.data()) + dtype_nbytes(dtype, r * cols) +
                     static_cast<size_t>(b) * block_bytes;
      const float s = scale(r, b);
      const float minimum = -s * static_cast<float>(zero(r, b));
      uint8_t* qs = dst + 2;
      if (f32_fields) {
        std::memcpy(dst, &s, 4);
        std::memcpy(dst + 4, &minimum, 4);
        qs = dst + 8;
      } else {
        const uint16_t d = float_to_f16(s);
        std::memcpy(dst, &d, 2);
        if (has_minimum) {
          const uint16_t m = float_to_f16(minimum);
          std::memcpy(dst + 2, &m, 2);
          qs = dst + 4;
        }
      }
      for (int64_t i = 0; i < half; ++i) {
        qs[i] = static_cast<uint8_t>(code(r, b * block + i) | (code(r, b * block + i + half) << 4));
      }
    }
  }
  return out;
}

absl::Status check_group_size(const std::string& file, const std::string& module, int64_t cols,
                              int64_t group_size) {
  if (group_size > 0 && cols % group_size == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(file, ": module '", module, "' has ", cols,
                                                 " input columns, not a multiple of group_size ",
                                                 group_size));
}

// compressed-tensors pack-quantized int4 (StoredWeightFormat::kPackedInt4Group).
absl::StatusOr<Tensor> convert_packed_int4(const CheckpointQuantization& q, const ModuleTensors& m,
                                           const Shape& expected, const std::string& module,
                                           const std::string& file) {
  const int64_t rows = expected[0], cols = expected[1], g = q.group_size;
  WEFT_RETURN_IF_ERROR(check_group_size(file, module, cols, g));
  const int64_t groups = cols / g;
  WEFT_ASSIGN_OR_RETURN(Tensor shape, m.get("weight_shape", {DType::kI64, DType::kI32}, Shape{2}));
  for (int i = 0; i < 2; ++i) {
    if (int_at(shape, i) != expected[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": tensor '", module, ".weight_shape' says dimension ", i, " is ",
          int_at(shape, i), ", expected ", expected[i], " from config.json"));
    }
  }
  WEFT_ASSIGN_OR_RETURN(Tensor packed, m.get("weight_packed", {DType::kI32}, Shape{rows, cols / 8}));
  WEFT_ASSIGN_OR_RETURN(Tensor scale, m.get("weight_scale", kScaleDTypes, Shape{rows, groups}));
  Tensor zero;
  if (!q.symmetric) {
    WEFT_ASSIGN_OR_RETURN(zero, m.get("weight_zero_point", {DType::kI32},
                                      Shape{(rows + 7) / 8, groups}));
  }
  // Codes and zero points as stored (value + 8): value = scale * (code - zero).
  return build_weight(
      q.weft_dtype(), rows, cols,
      [&](int64_t r, int64_t c) -> int64_t {
        return (word_at(packed, r * (cols / 8) + c / 8) >> (4 * (c % 8))) & 0xF;
      },
      [&](int64_t r, int64_t b) -> int64_t {
        if (q.symmetric) return 8;
        return (word_at(zero, (r / 8) * groups + b) >> (4 * (r % 8))) & 0xF;
      },
      [&](int64_t r, int64_t b) { return float_at(scale, r * groups + b); },
      [&](int64_t c) { return c / g; });
}

// GPTQ (StoredWeightFormat::kGptq).
absl::StatusOr<Tensor> convert_gptq(const CheckpointQuantization& q, const ModuleTensors& m,
                                    const Shape& expected, const std::string& module,
                                    const std::string& file) {
  const int64_t rows = expected[0], cols = expected[1];
  const int bits = q.bits, per_word = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const int64_t g = q.group_size == -1 ? cols : q.group_size;
  WEFT_RETURN_IF_ERROR(check_group_size(file, module, cols, g));
  if (cols % per_word != 0 || rows % per_word != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": module '", module, "' of shape ",
                                                   expected.to_string(), " does not pack into ",
                                                   per_word, " values per int32"));
  }
  const int64_t groups = cols / g;
  WEFT_ASSIGN_OR_RETURN(Tensor qweight, m.get("qweight", {DType::kI32}, Shape{cols / per_word, rows}));
  WEFT_ASSIGN_OR_RETURN(Tensor qzeros, m.get("qzeros", {DType::kI32}, Shape{groups, rows / per_word}));
  WEFT_ASSIGN_OR_RETURN(Tensor scales, m.get("scales", kScaleDTypes, Shape{groups, rows}));
  std::vector<int64_t> group_of(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) group_of[c] = c / g;
  absl::StatusOr<Tensor> g_idx = m.get("g_idx", {DType::kI32, DType::kI64}, Shape{cols});
  if (!g_idx.ok() && q.desc_act) return g_idx.status();  // act-order needs the permutation
  if (g_idx.ok()) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t v = int_at(*g_idx, c);
      if (v < 0 || v >= groups) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", module, ".g_idx' [", c,
                                                       "] is ", v, ", outside the ", groups,
                                                       " groups"));
      }
      if (!q.desc_act && v != group_of[c]) {
        return absl::InvalidArgumentError(absl::StrCat(
            file, ": tensor '", module, ".g_idx' [", c, "] is ", v, ", not ", group_of[c],
            " = column / group_size, but quantization_config's desc_act is false"));
      }
      group_of[c] = v;
    }
  }
  // The v1 format stores zero - 1; its readers add 1 to each packed field of the whole word
  // (a field of all ones carries into the next, exactly as auto-gptq and gptqmodel read it).
  uint32_t v1_offset = 0;
  for (int k = 0; k < per_word; ++k) v1_offset |= static_cast<uint32_t>(q.zero_offset) << (k * bits);
  return build_weight(
      q.weft_dtype(), rows, cols,
      [&](int64_t r, int64_t c) -> int64_t {
        return (word_at(qweight, (c / per_word) * rows + r) >> (bits * (c % per_word))) & mask;
      },
      [&](int64_t r, int64_t b) -> int64_t {
        const uint32_t word = word_at(qzeros, b * (rows / per_word) + r / per_word) + v1_offset;
        return (word >> (bits * (r % per_word))) & mask;
      },
      [&](int64_t r, int64_t b) { return float_at(scales, b * rows + r); },
      [&](int64_t c) { return group_of[c]; });
}

// AWQ gemm (StoredWeightFormat::kAwqGemm).
absl::StatusOr<Tensor> convert_awq(const CheckpointQuantization& q, const ModuleTensors& m,
                                   const Shape& expected, const std::string& module,
                                   const std::string& file) {
  // Nibble of output column 8j + k within word j (AutoAWQ's interleave 0, 2, 4, 6, 1, 3, 5, 7).
  constexpr int kNibbleOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const int64_t rows = expected[0], cols = expected[1], g = q.group_size;
  WEFT_RETURN_IF_ERROR(check_group_size(file, module, cols, g));
  if (rows % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": module '", module, "' has ", rows,
                                                   " output rows, not a multiple of 8"));
  }
  const int64_t groups = cols / g, words = rows / 8;
  WEFT_ASSIGN_OR_RETURN(Tensor qweight, m.get("qweight", {DType::kI32}, Shape{cols, words}));
  WEFT_ASSIGN_OR_RETURN(Tensor qzeros, m.get("qzeros", {DType::kI32}, Shape{groups, words}));
  WEFT_ASSIGN_OR_RETURN(Tensor scales, m.get("scales", kScaleDTypes, Shape{groups, rows}));
  return build_weight(
      q.weft_dtype(), rows, cols,
      [&](int64_t r, int64_t c) -> int64_t {
        return (word_at(qweight, c * words + r / 8) >> (4 * kNibbleOf[r % 8])) & 0xF;
      },
      [&](int64_t r, int64_t b) -> int64_t {
        return (word_at(qzeros, b * words + r / 8) >> (4 * kNibbleOf[r % 8])) & 0xF;
      },
      [&](int64_t r, int64_t b) { return float_at(scales, b * rows + r); },
      [&](int64_t c) { return c / g; });
}

// FP8 (StoredWeightFormat::kFp8), held as q.held_dtype(cols): F8B64, the e4m3 bytes as stored
// with the F32 scale of each 64 elements of a row (the scale of the checkpoint's block that holds
// them: every block column edge is a multiple of 64); or F32, fp8 * scale of its block. A NaN
// code (S.1111.111) is refused by name: the F8B64 kernels would read it as a number.
absl::StatusOr<Tensor> convert_fp8(const CheckpointQuantization& q, const ModuleTensors& m,
                                   const Shape& expected, const std::string& module,
                                   const std::string& file) {
  const int64_t rows = expected[0], cols = expected[1];
  const int64_t block_rows = q.fp8_block_rows > 0 ? q.fp8_block_rows : rows;
  const int64_t block_cols = q.fp8_block_cols > 0 ? q.fp8_block_cols : cols;
  const int64_t scale_rows = (rows + block_rows - 1) / block_rows;
  const int64_t scale_cols = (cols + block_cols - 1) / block_cols;
  WEFT_ASSIGN_OR_RETURN(Tensor weight, m.get("weight", {DType::kF8E4M3}, expected));
  // Per tensor: [1] (or a scalar); per channel: [out, 1]; per block: [rows / br, cols / bc].
  const Shape scale_shape = q.fp8_block_rows == 0 ? Shape{1}
                            : q.fp8_block_cols == 0 ? Shape{rows}
                                                    : Shape{scale_rows, scale_cols};
  absl::StatusOr<Tensor> scale = m.get(q.fp8_scale_name, kScaleDTypes, scale_shape);
  if (!scale.ok() && q.fp8_block_rows == 0) {
    scale = m.get(q.fp8_scale_name, kScaleDTypes, Shape{});
  }
  if (!scale.ok()) return scale.status();
  const uint8_t* src = static_cast<const uint8_t*>(weight.data());
  const auto scale_of = [&](int64_t r, int64_t c) {
    return float_at(*scale, (r / block_rows) * scale_cols + c / block_cols);
  };
  const DType held = q.held_dtype(cols);
  if (held == DType::kF32) {
    Tensor out = Tensor::empty(DType::kF32, expected);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        out.data_as<float>()[r * cols + c] = kernels::fp8_e4m3_to_float(src[r * cols + c]) * scale_of(r, c);
      }
    }
    return out;
  }
  const int64_t block = dtype_block_elems(held);
  const size_t block_bytes = dtype_block_bytes(held);
  Tensor out = Tensor::empty(held, expected);
  uint8_t* dst = static_cast<uint8_t*>(out.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / block; ++b, dst += block_bytes) {
      const float s = scale_of(r, b * block);
      std::memcpy(dst, &s, 4);
      const uint8_t* codes = src + r * cols + b * block;
      for (int64_t t = 0; t < block; ++t) {
        if ((codes[t] & 0x7F) == 0x7F) {
          return absl::InvalidArgumentError(absl::StrCat(
              file, ": tensor '", module, ".weight' [", r, ", ", b * block + t,
              "] is an FP8 NaN (0x", absl::Hex(static_cast<unsigned>(codes[t])), ")"));
        }
      }
      std::memcpy(dst + 4, codes, static_cast<size_t>(block));
    }
  }
  return out;
}

}  // namespace

std::string quantized_module_suffix(const CheckpointQuantization& q) {
  switch (q.method) {
    case CheckpointQuantMethod::kCompressedTensors: return ".weight_scale";
    case CheckpointQuantMethod::kFp8: return ".weight_scale_inv";
    default: return ".qweight";
  }
}

std::string quantized_marker_tensor(const CheckpointQuantization& q, const std::string& module) {
  switch (q.format) {
    case StoredWeightFormat::kPackedInt4Group: return module + ".weight_packed";
    case StoredWeightFormat::kInt8Channel:
    case StoredWeightFormat::kFp8: return module + ".weight";
    default: return module + ".qweight";
  }
}

absl::StatusOr<Tensor> convert_checkpoint_weight(const CheckpointQuantization& q,
                                                 const std::string& module, const Shape& expected,
                                                 const StoredTensorLookup& lookup,
                                                 const std::string& file) {
  if (expected.rank() != 2) {
    return absl::InternalError(absl::StrCat("quantized module '", module, "' asked for shape ",
                                            expected.to_string()));
  }
  const ModuleTensors m(module, lookup, file);
  switch (q.format) {
    case StoredWeightFormat::kPackedInt4Group: return convert_packed_int4(q, m, expected, module, file);
    case StoredWeightFormat::kGptq: return convert_gptq(q, m, expected, module, file);
    case StoredWeightFormat::kAwqGemm: return convert_awq(q, m, expected, module, file);
    case StoredWeightFormat::kFp8: return convert_fp8(q, m, expected, module, file);
    default: return m.get("weight", {DType::kI8}, expected);
  }
}

absl::StatusOr<Tensor> convert_checkpoint_row_scales(const CheckpointQuantization& q,
                                                     const std::string& module, int64_t rows,
                                                     const StoredTensorLookup& lookup,
                                                     const std::string& file) {
  (void)q;
  const ModuleTensors m(module, lookup, file);
  WEFT_ASSIGN_OR_RETURN(Tensor scale, m.get("weight_scale", kScaleDTypes, Shape{rows}));
  Tensor out = Tensor::empty(DType::kF32, Shape{rows});
  for (int64_t r = 0; r < rows; ++r) out.data_as<float>()[r] = float_at(scale, r);
  return out;
}

}  // namespace weft
