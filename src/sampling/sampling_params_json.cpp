#include "sampling/sampling_params_json.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

using nlohmann::json;

absl::Status type_error(absl::string_view field, absl::string_view expected, const json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": expected ", expected, ", got ", got.type_name()));
}

// Present and not null.
const json* find_field(const json& obj, const char* field) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status read_float(const json& obj, const char* field, float& out) {
  const json* v = find_field(obj, field);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_number()) return type_error(field, "a number", *v);
  out = v->get<float>();
  return absl::OkStatus();
}

// JSON integers, and floats with an integral value (some clients send 16.0), within int64.
absl::StatusOr<int64_t> as_int64(const json& v, absl::string_view field) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": integer out of range"));
    }
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return type_error(field, "an integer", v);
}

absl::Status read_int(const json& obj, const char* field, int& out) {
  const json* v = find_field(obj, field);
  if (v == nullptr) return absl::OkStatus();
  WEFT_ASSIGN_OR_RETURN(int64_t value, as_int64(*v, field));
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": integer out of range, got ", value));
  }
  out = static_cast<int>(value);
  return absl::OkStatus();
}

absl::Status read_bool(const json& obj, const char* field, bool& out) {
  const json* v = find_field(obj, field);
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_boolean()) return type_error(field, "a boolean", *v);
  out = v->get<bool>();
  return absl::OkStatus();
}

absl::StatusOr<int32_t> as_token_id(const json& v, absl::string_view field) {
  WEFT_ASSIGN_OR_RETURN(int64_t value, as_int64(v, field));
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": token id out of range, got ", value));
  }
  return static_cast<int32_t>(value);
}

absl::Status read_logit_bias(const json& obj, SamplingParams& p) {
  const json* v = find_field(obj, "logit_bias");
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_object()) return type_error("logit_bias", "an object of token id -> bias", *v);
  for (const auto& [key, bias] : v->items()) {
    const std::string field = absl::StrCat("logit_bias[\"", key, "\"]");
    int32_t id = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected a decimal token id as the key"));
    }
    if (!bias.is_number()) return type_error(field, "a number", bias);
    p.logit_bias[id] = bias.get<float>();
  }
  return absl::OkStatus();
}

absl::Status read_stop(const json& obj, SamplingParams& p) {
  const json* v = find_field(obj, "stop");
  if (v == nullptr) return absl::OkStatus();
  if (v->is_string()) {
    p.stop = {v->get<std::string>()};
    return absl::OkStatus();
  }
  if (!v->is_array()) return type_error("stop", "a string or an array of strings", *v);
  p.stop.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    const json& s = (*v)[i];
    if (!s.is_string()) return type_error(absl::StrCat("stop[", i, "]"), "a string", s);
    p.stop.push_back(s.get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status read_stop_token_ids(const json& obj, SamplingParams& p) {
  const json* v = find_field(obj, "stop_token_ids");
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_array()) return type_error("stop_token_ids", "an array of integers", *v);
  p.stop_token_ids.clear();
  for (size_t i = 0; i < v->size(); ++i) {
    WEFT_ASSIGN_OR_RETURN(int32_t id,
                          as_token_id((*v)[i], absl::StrCat("stop_token_ids[", i, "]")));
    p.stop_token_ids.push_back(id);
  }
  return absl::OkStatus();
}

absl::Status read_seed(const json& obj, SamplingParams& p) {
  const json* v = find_field(obj, "seed");
  if (v == nullptr) return absl::OkStatus();
  if (v->is_number_unsigned()) {
    p.seed = v->get<uint64_t>();
    return absl::OkStatus();
  }
  WEFT_ASSIGN_OR_RETURN(int64_t seed, as_int64(*v, "seed"));
  p.seed = static_cast<uint64_t>(seed);
  return absl::OkStatus();
}

absl::Status read_logprobs(const json& obj, SamplingParams& p) {
  const json* v = find_field(obj, "logprobs");
  if (v == nullptr) return absl::OkStatus();
  if (v->is_boolean()) {
    return absl::InvalidArgumentError(
        "logprobs: expected an integer count of alternatives, got boolean (the chat API's "
        "logprobs/top_logprobs pair must be mapped to an integer before this adapter)");
  }
  int value = 0;
  WEFT_RETURN_IF_ERROR(read_int(obj, "logprobs", value));
  p.logprobs = value;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SamplingParams> sampling_params_from_json(const json& request, const SamplingParams& defaults) {
  if (!request.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request: expected a JSON object, got ", request.type_name()));
  }
  SamplingParams p = defaults;
  WEFT_RETURN_IF_ERROR(read_int(request, "n", p.n));
  WEFT_RETURN_IF_ERROR(read_float(request, "temperature", p.temperature));
  WEFT_RETURN_IF_ERROR(read_float(request, "top_p", p.top_p));
  WEFT_RETURN_IF_ERROR(read_int(request, "top_k", p.top_k));
  WEFT_RETURN_IF_ERROR(read_float(request, "min_p", p.min_p));
  WEFT_RETURN_IF_ERROR(read_float(request, "repetition_penalty", p.repetition_penalty));
  WEFT_RETURN_IF_ERROR(read_float(request, "presence_penalty", p.presence_penalty));
  WEFT_RETURN_IF_ERROR(read_float(request, "frequency_penalty", p.frequency_penalty));
  WEFT_RETURN_IF_ERROR(read_logit_bias(request, p));
  WEFT_RETURN_IF_ERROR(read_seed(request, p));
  WEFT_RETURN_IF_ERROR(read_stop(request, p));
  WEFT_RETURN_IF_ERROR(read_stop_token_ids(request, p));
  WEFT_RETURN_IF_ERROR(read_int(request, "max_tokens", p.max_tokens));
  WEFT_RETURN_IF_ERROR(read_int(request, "max_completion_tokens", p.max_tokens));
  WEFT_RETURN_IF_ERROR(read_int(request, "min_tokens", p.min_tokens));
  WEFT_RETURN_IF_ERROR(read_bool(request, "ignore_eos", p.ignore_eos));
  WEFT_RETURN_IF_ERROR(read_bool(request, "skip_special_tokens", p.skip_special_tokens));
  WEFT_RETURN_IF_ERROR(read_logprobs(request, p));
  return p;
}

}  // namespace weft
