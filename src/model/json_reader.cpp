#include "model/json_reader.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"

namespace weft {

using nlohmann::json;

absl::StatusOr<json> parse_json_strict(std::string_view text, const std::string& source,
                                       int64_t max_container_size) {
  JsonLimits limits;
  limits.max_depth = kMaxJsonNestingDepth;
  limits.max_container_size = max_container_size;
  limits.max_values = int64_t{1} << 27;
  return parse_json_bounded<json>(text, source, limits);
}

const char* json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::null:
      return "null";
    default:
      return "value";
  }
}

const json* JsonFields::find(std::string_view key) const {
  if (!object_->is_object()) return nullptr;
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFields::has(std::string_view key) const { return find(key) != nullptr; }

std::string JsonFields::field_name(std::string_view key) const {
  return absl::StrCat(prefix_, std::string(key));
}

absl::Status JsonFields::type_error(std::string_view key, std::string_view expected) const {
  const json* value = find(key);
  return absl::InvalidArgumentError(absl::StrCat(source_, ": field '", field_name(key),
                                                 "' must be ", std::string(expected), ", got ",
                                                 value ? json_type_name(*value) : "null"));
}

absl::StatusOr<std::optional<int64_t>> JsonFields::optional_int(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<int64_t>();
  if (value->is_number_integer() && !value->is_number_unsigned()) {
    return std::optional<int64_t>(value->get<int64_t>());
  }
  if (value->is_number_unsigned()) {
    const uint64_t u = value->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return type_error(key, "an integer below 2^63");
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  return type_error(key, "an integer");
}

absl::StatusOr<std::optional<double>> JsonFields::optional_number(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<double>();
  if (!value->is_number()) return type_error(key, "a number");
  return std::optional<double>(value->get<double>());
}

absl::StatusOr<std::optional<bool>> JsonFields::optional_bool(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return type_error(key, "a boolean");
  return std::optional<bool>(value->get<bool>());
}

absl::StatusOr<std::optional<std::string>> JsonFields::optional_string(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<std::string>();
  if (!value->is_string()) return type_error(key, "a string");
  return std::optional<std::string>(value->get<std::string>());
}

absl::StatusOr<int64_t> JsonFields::required_int(std::string_view key) const {
  auto value = optional_int(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": missing required field '", field_name(key), "' (an integer)"));
  }
  return **value;
}

absl::StatusOr<std::vector<int64_t>> JsonFields::int_or_int_list(std::string_view key) const {
  const json* value = find(key);
  std::vector<int64_t> out;
  if (value == nullptr) return out;
  constexpr std::string_view kExpected = "an integer or a list of integers";
  if (value->is_number_integer()) {
    out.push_back(value->get<int64_t>());
    return out;
  }
  if (!value->is_array()) return type_error(key, kExpected);
  for (const json& item : *value) {
    if (!item.is_number_integer()) return type_error(key, kExpected);
    out.push_back(item.get<int64_t>());
  }
  return out;
}

absl::StatusOr<std::optional<JsonFields>> JsonFields::optional_object(std::string_view key) const {
  const json* value = find(key);
  if (value == nullptr) return std::optional<JsonFields>();
  if (!value->is_object()) return type_error(key, "an object");
  return std::optional<JsonFields>(JsonFields(*value, source_, absl::StrCat(field_name(key), ".")));
}

absl::StatusOr<std::string> read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (const uint64_t size = std::filesystem::file_size(path, ec); !ec && size > kMaxJsonFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", size,
                                                   " bytes is larger than the limit of ",
                                                   kMaxJsonFileBytes, " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path.string()));
  return text.str();
}

}  // namespace weft
