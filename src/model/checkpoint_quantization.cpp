#include "model/checkpoint_quantization.h"

#include <cctype>
#include <map>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace weft {
namespace {

absl::Status field_error(const std::string& source, const std::string& field,
                         const std::string& message) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": quantization_config field '", field, "' ", message));
}

// The value of `key` as a string, "null" when absent or null, else the JSON text.
std::string text_of(const nlohmann::json& object, const std::string& key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "null";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// One compressed-tensors config group's scheme (`group` at config field `prefix`): its weights'
// QuantizationArgs in `format` (the group's own, else the checkpoint's).
// `format_field` is the config field `format` came from.
absl::StatusOr<CheckpointQuantization> parse_compressed_tensors_scheme(const nlohmann::json& group,
                                                                       const std::string& format,
                                                                       const std::string& format_field,
                                                                       const std::string& source,
                                                                       const std::string& prefix) {
  CheckpointQuantization q;
  q.method = CheckpointQuantMethod::kCompressedTensors;
  if (text_of(group, "output_activations") != "null") {
    return field_error(source, prefix + ".output_activations",
                       "is set (weft does not quantize layer outputs)");
  }
  q.quantized_activations = text_of(group, "input_activations") != "null";
  auto weights = group.find("weights");
  if (weights == group.end() || !weights->is_object()) {
    return field_error(source, prefix + ".weights", "must be an object, got " +
                                                        text_of(group, "weights"));
  }
  const std::string w = prefix + ".weights";
  const JsonFields fields(*weights, source, w + ".");
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> bits, fields.optional_int("num_bits"));
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> type, fields.optional_string("type"));
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> strategy, fields.optional_string("strategy"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> symmetric, fields.optional_bool("symmetric"));
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> group_size, fields.optional_int("group_size"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> dynamic, fields.optional_bool("dynamic"));
  const bool fp8 = format == "float-quantized";
  if (type.value_or(fp8 ? "float" : "int") != (fp8 ? "float" : "int")) {
    return field_error(source, w + ".type",
                       "is '" + *type + "' (weft reads " + (fp8 ? "float" : "int") +
                           " weights in format " + format + ")");
  }
  if (dynamic.value_or(false)) {
    return field_error(source, w + ".dynamic", "is true (weights must be stored quantized)");
  }
  for (const char* key : {"actorder", "block_structure"}) {
    if (fp8 && std::string(key) == "block_structure") continue;
    if (text_of(*weights, key) != "null") {
      return field_error(source, w + "." + key,
                         "is " + text_of(*weights, key) + " (weft implements null)");
    }
  }
  q.symmetric = symmetric.value_or(true);
  if (format == "pack-quantized") {
    if (bits.value_or(0) != 4) {
      return field_error(source, w + ".num_bits",
                         "is " + text_of(*weights, "num_bits") + " (weft reads 4-bit pack-quantized)");
    }
    if (strategy.value_or("") != "group") {
      return field_error(source, w + ".strategy",
                         "is " + text_of(*weights, "strategy") +
                             " (weft reads pack-quantized int4 with strategy group)");
    }
    if (!group_size || (*group_size != 32 && *group_size != 64 && *group_size != 128)) {
      return field_error(source, w + ".group_size",
                         "is " + text_of(*weights, "group_size") + " (weft implements 32, 64, 128)");
    }
    q.format = StoredWeightFormat::kPackedInt4Group;
    q.group_size = *group_size;
  } else if (format == "int-quantized") {
    if (bits.value_or(0) != 8) {
      return field_error(source, w + ".num_bits",
                         "is " + text_of(*weights, "num_bits") + " (weft reads 8-bit int-quantized)");
    }
    if (strategy.value_or("") != "channel") {
      return field_error(source, w + ".strategy",
                         "is " + text_of(*weights, "strategy") +
                             " (weft reads int-quantized int8 with strategy channel)");
    }
    if (!q.symmetric) {
      return field_error(source, w + ".symmetric",
                         "is false (weft reads symmetric int8 channel weights)");
    }
    q.format = StoredWeightFormat::kInt8Channel;
  } else if (fp8) {
    if (bits.value_or(0) != 8) {
      return field_error(source, w + ".num_bits",
                         "is " + text_of(*weights, "num_bits") + " (weft reads FP8 E4M3)");
    }
    q.format = StoredWeightFormat::kFp8;
    q.bits = 8;
    const std::string strat = strategy.value_or("");
    if (strat == "channel") {
      q.fp8_block_rows = 1;
    } else if (strat == "block") {
      auto block = weights->find("block_structure");
      if (block == weights->end() || !block->is_array() || block->size() != 2 ||
          !(*block)[0].is_number_integer() || !(*block)[1].is_number_integer() ||
          (*block)[0].get<int64_t>() <= 0 || (*block)[1].get<int64_t>() <= 0) {
        return field_error(source, w + ".block_structure",
                           "is " + text_of(*weights, "block_structure") +
                               " (expected [rows, columns], positive)");
      }
      q.fp8_block_rows = (*block)[0].get<int64_t>();
      q.fp8_block_cols = (*block)[1].get<int64_t>();
    } else if (strat != "tensor") {
      return field_error(source, w + ".strategy",
                         "is " + text_of(*weights, "strategy") +
                             " (weft reads float-quantized with strategy tensor, channel, block)");
    }
    if (!q.symmetric) {
      return field_error(source, w + ".symmetric", "is false (weft reads symmetric FP8 weights)");
    }
  } else {
    return field_error(source, format_field,
                       "is '" + format +
                           "' (weft implements pack-quantized, int-quantized, float-quantized)");
  }
  return q;
}

// A regular expression of an ignore entry or target ("re:..."), or an error naming the field.
absl::Status check_pattern(const std::string& entry, const std::string& source,
                           const std::string& field) {
  if (entry.rfind("re:", 0) != 0) return absl::OkStatus();
  try {
    std::regex pattern(entry.substr(3));
  } catch (const std::regex_error&) {
    return field_error(source, field, "entry '" + entry + "' is not a regular expression");
  }
  return absl::OkStatus();
}

// A target that is neither a pattern nor the class Linear: a module name when it has a dot or
// starts in lower case ("lm_head", "model.layers.0.mlp.down_proj"), else a class name.
bool names_a_module(const std::string& target) {
  return target.find('.') != std::string::npos || (!target.empty() && std::islower(
                                                       static_cast<unsigned char>(target[0])));
}

// compressed-tensors: config_groups (each group's targets and weights' QuantizationArgs), the
// format (one for all groups, or "mixed-precision" with one per group) and the ignore list.
absl::StatusOr<CheckpointQuantization> parse_compressed_tensors(const nlohmann::json& qc,
                                                                const std::string& source) {
  const std::string format = text_of(qc, "format");
  auto groups = qc.find("config_groups");
  if (groups == qc.end() || !groups->is_object() || groups->empty()) {
    return field_error(source, "config_groups",
                       "must hold at least one group, got " + text_of(qc, "config_groups"));
  }
  CheckpointQuantization q;
  q.method = CheckpointQuantMethod::kCompressedTensors;
  std::map<std::string, size_t> group_of_target;  // the last group listing each target
  std::vector<std::string> class_targets;          // in the order the groups list them
  for (const auto& [name, group] : groups->items()) {
    const std::string prefix = "config_groups." + name;
    if (!group.is_object()) return field_error(source, prefix, "must be an object");
    std::string group_format = text_of(group, "format");
    const bool own_format = group_format != "null";
    if (!own_format) group_format = format;
    if (group_format == "mixed-precision") {
      return field_error(source, prefix + ".format",
                         "is missing (a mixed-precision checkpoint names each group's format)");
    }
    if (own_format && format != "mixed-precision" && format != "null" && group_format != format) {
      return field_error(source, prefix + ".format",
                         "is '" + group_format + "', unlike the checkpoint's format '" + format + "'");
    }
    WEFT_ASSIGN_OR_RETURN(CheckpointQuantization scheme,
                          parse_compressed_tensors_scheme(group, group_format,
                                                          own_format ? prefix + ".format" : "format",
                                                          source, prefix));
    auto targets = group.find("targets");
    if (targets == group.end() || !targets->is_array() || targets->empty()) {
      return field_error(source, prefix + ".targets",
                         "must be a non-empty list, got " + text_of(group, "targets"));
    }
    for (const nlohmann::json& target : *targets) {
      if (!target.is_string()) {
        return field_error(source, prefix + ".targets", "must hold strings, got " + target.dump());
      }
      const std::string t = target.get<std::string>();
      WEFT_RETURN_IF_ERROR(check_pattern(t, source, prefix + ".targets"));
      if (t.rfind("re:", 0) != 0 && t != "Linear" && !names_a_module(t)) {
        return field_error(source, prefix + ".targets",
                           "names the class '" + t +
                               "' (weft implements the class Linear, module names and re: patterns)");
      }
      if (t == "Linear" && group_of_target.count(t) == 0) class_targets.push_back(t);
      group_of_target[t] = q.group_schemes.size();
    }
    q.group_schemes.push_back(std::move(scheme));
    q.group_names.push_back(name);
  }
  // compressed-tensors' match_targets order: exact names, then patterns (each sorted as strings,
  // which std::map already is), then class names.
  for (bool patterns : {false, true}) {
    for (const auto& [t, index] : group_of_target) {
      if (t != "Linear" && (t.rfind("re:", 0) == 0) == patterns) q.targets.emplace_back(t, index);
    }
  }
  for (const std::string& t : class_targets) q.targets.emplace_back(t, group_of_target.at(t));
  if (q.group_schemes.size() == 1 && q.targets.size() == 1 && q.targets[0].first == "Linear") {
    // One scheme for every linear module: it is this object.
    CheckpointQuantization one = std::move(q.group_schemes[0]);
    q = std::move(one);
  }
  auto ignore = qc.find("ignore");
  if (ignore != qc.end() && !ignore->is_null()) {
    if (!ignore->is_array()) return field_error(source, "ignore", "must be a list of module names");
    for (const nlohmann::json& entry : *ignore) {
      if (!entry.is_string()) {
        return field_error(source, "ignore", "must hold strings, got " + entry.dump());
      }
      const std::string name = entry.get<std::string>();
      WEFT_RETURN_IF_ERROR(check_pattern(name, source, "ignore"));
      q.ignore.push_back(name);
    }
  }
  return q;
}

// GPTQ / AWQ modules_to_not_convert: module names kept dense.
absl::Status read_modules_to_not_convert(const nlohmann::json& qc, const std::string& source,
                                         CheckpointQuantization& q) {
  auto it = qc.find("modules_to_not_convert");
  q.ignore_field = "modules_to_not_convert";
  if (it == qc.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) {
    return field_error(source, "modules_to_not_convert", "must be a list of module names");
  }
  for (const nlohmann::json& entry : *it) {
    if (!entry.is_string()) {
      return field_error(source, "modules_to_not_convert", "must hold strings, got " + entry.dump());
    }
    q.ignore.push_back(entry.get<std::string>());
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointQuantization> parse_gptq(const nlohmann::json& qc,
                                                  const std::string& source) {
  CheckpointQuantization q;
  q.method = CheckpointQuantMethod::kGptq;
  q.format = StoredWeightFormat::kGptq;
  const JsonFields fields(qc, source, "quantization_config.");
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> bits, fields.optional_int("bits"));
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> group_size, fields.optional_int("group_size"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> desc_act, fields.optional_bool("desc_act"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> sym, fields.optional_bool("sym"));
  if (bits.value_or(0) != 4 && bits.value_or(0) != 8) {
    return field_error(source, "bits", "is " + text_of(qc, "bits") + " (weft reads GPTQ 4 and 8 bits)");
  }
  if (!group_size || (*group_size != -1 && (*group_size <= 0 || *group_size % 8 != 0))) {
    return field_error(source, "group_size",
                       "is " + text_of(qc, "group_size") + " (expected -1 or a positive multiple of 8)");
  }
  std::string format = text_of(qc, "checkpoint_format");
  if (format == "null") format = text_of(qc, "format");
  if (format == "null") format = "gptq";
  if (format != "gptq" && format != "gptq_v2") {
    return field_error(source, "checkpoint_format",
                       "is '" + format + "' (weft reads gptq and gptq_v2)");
  }
  if (text_of(qc, "modules_in_block_to_quantize") != "null") {
    return field_error(source, "modules_in_block_to_quantize",
                       "is set (weft reads GPTQ checkpoints that quantize every linear layer)");
  }
  q.bits = static_cast<int>(*bits);
  q.group_size = *group_size;
  q.desc_act = desc_act.value_or(false);
  q.symmetric = sym.value_or(true);
  q.zero_offset = format == "gptq" ? 1 : 0;
  WEFT_RETURN_IF_ERROR(read_modules_to_not_convert(qc, source, q));
  return q;
}

absl::StatusOr<CheckpointQuantization> parse_awq(const nlohmann::json& qc,
                                                 const std::string& source) {
  CheckpointQuantization q;
  q.method = CheckpointQuantMethod::kAwq;
  q.format = StoredWeightFormat::kAwqGemm;
  const JsonFields fields(qc, source, "quantization_config.");
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> bits, fields.optional_int("bits"));
  if (!bits) {
    WEFT_ASSIGN_OR_RETURN(bits, fields.optional_int("w_bit"));
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> group_size, fields.optional_int("group_size"));
  if (!group_size) {
    WEFT_ASSIGN_OR_RETURN(group_size, fields.optional_int("q_group_size"));
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> zero_point, fields.optional_bool("zero_point"));
  const std::string version = text_of(qc, "version");
  if (bits.value_or(0) != 4) {
    return field_error(source, "bits", "is " + text_of(qc, "bits") + " (weft reads 4-bit AWQ)");
  }
  if (!group_size || *group_size <= 0 || *group_size % 8 != 0) {
    return field_error(source, "group_size",
                       "is " + text_of(qc, "group_size") + " (expected a positive multiple of 8)");
  }
  if (version != "gemm" && version != "GEMM") {
    return field_error(source, "version", "is '" + version + "' (weft reads gemm)");
  }
  if (!zero_point.value_or(true)) {
    return field_error(source, "zero_point", "is false (weft reads AWQ with zero points)");
  }
  q.bits = 4;
  q.group_size = *group_size;
  q.symmetric = false;
  WEFT_RETURN_IF_ERROR(read_modules_to_not_convert(qc, source, q));
  return q;
}

// transformers' FineGrainedFP8Config: fmt e4m3, weight_block_size, weight_scale_inv.
absl::StatusOr<CheckpointQuantization> parse_fp8(const nlohmann::json& qc,
                                                 const std::string& source) {
  CheckpointQuantization q;
  q.method = CheckpointQuantMethod::kFp8;
  q.format = StoredWeightFormat::kFp8;
  q.bits = 8;
  q.fp8_scale_name = "weight_scale_inv";
  const std::string fmt = text_of(qc, "fmt");
  if (fmt != "null" && fmt != "e4m3") {
    return field_error(source, "fmt", "is '" + fmt + "' (weft reads e4m3)");
  }
  auto block = qc.find("weight_block_size");
  if (block == qc.end() || block->is_null()) {
    return field_error(source, "weight_block_size",
                       "is missing (weft reads block-wise fp8 checkpoints, e.g. [128, 128])");
  }
  if (!block->is_array() || block->size() != 2 || !(*block)[0].is_number_integer() ||
      !(*block)[1].is_number_integer() || (*block)[0].get<int64_t>() <= 0 ||
      (*block)[1].get<int64_t>() <= 0) {
    return field_error(source, "weight_block_size",
                       "is " + block->dump() + " (expected [rows, columns], positive)");
  }
  q.fp8_block_rows = (*block)[0].get<int64_t>();
  q.fp8_block_cols = (*block)[1].get<int64_t>();
  const std::string scheme = text_of(qc, "activation_scheme");
  q.quantized_activations = scheme != "null";
  WEFT_RETURN_IF_ERROR(read_modules_to_not_convert(qc, source, q));
  return q;
}

}  // namespace

bool ignore_entry_matches(const std::string& entry, const std::string& module) {
  if (entry.rfind("re:", 0) == 0) {
    return std::regex_search(module, std::regex(entry.substr(3)),
                             std::regex_constants::match_continuous);
  }
  return entry == module;
}

bool CheckpointQuantization::quantizes(const std::string& module) const {
  if (!enabled()) return false;
  for (const std::string& entry : ignore) {
    if (ignore_entry_matches(entry, module)) return false;
  }
  return group_schemes.empty() || &scheme_for(module) != this;
}

const CheckpointQuantization& CheckpointQuantization::scheme_for(const std::string& module) const {
  for (const auto& [target, index] : targets) {
    // quantizes() is asked only about linear modules, so the class Linear matches them all.
    if (target == "Linear" || ignore_entry_matches(target, module)) return group_schemes[index];
  }
  return *this;
}

std::vector<const CheckpointQuantization*> CheckpointQuantization::schemes() const {
  if (group_schemes.empty()) return {this};
  std::vector<const CheckpointQuantization*> out;
  for (const CheckpointQuantization& s : group_schemes) out.push_back(&s);
  return out;
}

bool CheckpointQuantization::quantizes(const std::string& module, int64_t rows,
                                       int64_t cols) const {
  if (!quantizes(module)) return false;
  if (method != CheckpointQuantMethod::kFp8) return true;
  return rows % fp8_block_rows == 0 && cols % fp8_block_cols == 0;
}

DType CheckpointQuantization::weft_dtype() const {
  if (format == StoredWeightFormat::kInt8Channel) return DType::kI8;
  if (format == StoredWeightFormat::kFp8) {
    return fp8_block_cols == 0 || fp8_block_cols % dtype_block_elems(DType::kF8B64) == 0
               ? DType::kF8B64
               : DType::kF32;
  }
  const bool blocks = bits == 4 && !desc_act &&
                      (group_size == 32 || group_size == 64 || group_size == 128);
  if (!blocks) return DType::kF32;
  // Only compressed-tensors' symmetric groups have a zero point fixed at 8 (GPTQ stores its
  // zeros even when symmetric, so they are read as minimums).
  const bool fixed_zero = symmetric && format == StoredWeightFormat::kPackedInt4Group;
  // Symmetric groups (zero 8) keep f16 fields: m = -8 s is exact in f16. Groups with their own
  // zero points take the F32-field types, where s * (q - z) is exact (an f16 minimum -s * z would
  // be rounded).
  if (group_size == 32) return fixed_zero ? DType::kQ4_0 : symmetric ? DType::kQ4_1 : DType::kI4G32F;
  if (group_size == 64) return symmetric ? DType::kI4G64 : DType::kI4G64F;
  return symmetric ? DType::kI4G128 : DType::kI4G128F;
}

DType CheckpointQuantization::held_dtype(int64_t cols) const {
  const DType d = weft_dtype();
  if (d == DType::kF8B64 && cols % dtype_block_elems(d) != 0) return DType::kF32;
  return d;
}

int64_t CheckpointQuantization::block_group() const {
  const DType d = weft_dtype();
  return is_block_quantized(d) ? dtype_block_elems(d) : 0;
}

int64_t CheckpointQuantization::shard_bytes(int64_t rows, int64_t cols, int64_t full_cols) const {
  if (format == StoredWeightFormat::kInt8Channel) return rows * cols + rows * 4;
  const DType d = held_dtype(full_cols);
  return static_cast<int64_t>(dtype_nbytes(d, rows * cols));
}

std::string CheckpointQuantization::describe() const {
  if (!enabled()) return "none";
  std::string out;
  if (!group_schemes.empty()) {
    out = "compressed-tensors config groups, the first target that names a module choosing its "
          "group (exact names, then re: patterns, then Linear):";
    for (size_t g = 0; g < group_schemes.size(); ++g) {
      std::vector<std::string> listed;
      for (const auto& [target, index] : targets) {
        if (index == g) listed.push_back(target);
      }
      absl::StrAppend(&out, " ", group_names[g], " [", absl::StrJoin(listed, ", "), "] ",
                      group_schemes[g].describe(), ";");
    }
    out.pop_back();
  } else if (format == StoredWeightFormat::kFp8) {
    const std::string scales =
        fp8_block_rows == 0 ? "per tensor"
        : fp8_block_cols == 0 ? "per channel"
                              : absl::StrCat("per block ", fp8_block_rows, "x", fp8_block_cols);
    out = absl::StrCat(method == CheckpointQuantMethod::kFp8 ? "fp8" : "compressed-tensors float-quantized",
                       " e4m3 scale ", scales,
                       weft_dtype() == DType::kF8B64
                           ? " -> f8b64 (e4m3 bytes as stored, an f32 scale per 64 inputs of a "
                             "row: 1.06 bytes per weight; input counts not a multiple of 64 -> "
                             "f32, dequantized at load)"
                           : " -> f32 (dequantized at load: fp8 * scale, rounded once to f32)");
    if (quantized_activations) {
      absl::StrAppend(&out, "; the checkpoint's fp8 activation quantization is not applied: "
                            "activations stay f32");
    }
  } else if (format == StoredWeightFormat::kGptq || format == StoredWeightFormat::kAwqGemm) {
    const DType d = weft_dtype();
    out = absl::StrCat(format == StoredWeightFormat::kGptq ? "gptq" : "awq gemm", " ", bits,
                       "-bit group ", group_size, desc_act ? " desc_act" : "",
                       format == StoredWeightFormat::kGptq
                           ? (zero_offset == 1 ? " (v1 zeros + 1)" : " (v2 zeros)")
                           : "",
                       " -> ", dtype_name(d),
                       d == DType::kF32 ? " (dequantized at load, exact)"
                       : symmetric      ? " (f16 scale and minimum -8*scale, exact)"
                                        : " (f32 scale and minimum -scale*zero, exact)");
  } else if (format == StoredWeightFormat::kInt8Channel) {
    out = "compressed-tensors int-quantized int8 channel -> i8 + f32 row scale (exact)";
    if (quantized_activations) {
      absl::StrAppend(&out, "; the checkpoint's int8 activation quantization is not applied: "
                            "activations stay f32 (W8A16)");
    }
  } else {
    out = absl::StrCat("compressed-tensors pack-quantized int4 group ", group_size,
                       symmetric ? " symmetric" : " asymmetric", " -> ", dtype_name(weft_dtype()),
                       symmetric ? " (scale rounded to f16)" : " (f32 scale and minimum -scale*zero, exact)");
  }
  if (!ignore.empty()) absl::StrAppend(&out, "; kept dense: ", absl::StrJoin(ignore, ", "));
  return out;
}

absl::StatusOr<CheckpointQuantization> parse_checkpoint_quantization(const nlohmann::json& object,
                                                                     const std::string& source) {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": field 'quantization_config' must be an object, got ", json_type_name(object)));
  }
  const std::string method = text_of(object, "quant_method");
  if (method == "compressed-tensors") return parse_compressed_tensors(object, source);
  if (method == "gptq") return parse_gptq(object, source);
  if (method == "awq") return parse_awq(object, source);
  if (method == "fp8") return parse_fp8(object, source);
  return field_error(source, "quant_method",
                     "is '" + method + "' (weft implements compressed-tensors, gptq, awq, fp8)");
}

absl::StatusOr<CheckpointQuantization> read_checkpoint_quantization(
    const std::filesystem::path& model_dir) {
  const std::filesystem::path path = model_dir / "config.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return CheckpointQuantization{};
  WEFT_ASSIGN_OR_RETURN(std::string text, read_json_file(path));
  WEFT_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(text, path.string()));
  auto it = root.is_object() ? root.find("quantization_config") : root.end();
  if (!root.is_object() || it == root.end() || it->is_null()) return CheckpointQuantization{};
  return parse_checkpoint_quantization(*it, path.string());
}

}  // namespace weft
