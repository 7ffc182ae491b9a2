#include "tokenizer/json_path.h"

namespace weft {

JsonPath JsonPath::child(std::string_view key) const {
  return JsonPath(file_, field_.empty() ? std::string(key) : str_cat(field_, ".", key));
}

JsonPath JsonPath::index(size_t i) const { return JsonPath(file_, str_cat(field_, "[", i, "]")); }

absl::Status JsonPath::error(std::string_view what) const {
  return absl::InvalidArgumentError(
      str_cat(file_, ": field ", field_.empty() ? "<root>" : field_, ": ", what));
}

absl::StatusOr<std::string> JsonPath::get_string(const nlohmann::json& obj,
                                                 std::string_view key) const {
  if (!obj.is_object()) return error("expected an object");
  const auto it = obj.find(key);
  if (it == obj.end()) return child(key).error("missing (expected a string)");
  if (!it->is_string())
    return child(key).error(str_cat("expected a string, got ", it->type_name()));
  return it->get<std::string>();
}

absl::StatusOr<bool> JsonPath::get_bool(const nlohmann::json& obj, std::string_view key,
                                        bool fallback) const {
  if (!obj.is_object()) return error("expected an object");
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    return child(key).error(str_cat("expected a boolean, got ", it->type_name()));
  return it->get<bool>();
}

absl::StatusOr<std::optional<std::string>> JsonPath::get_optional_string(
    const nlohmann::json& obj, std::string_view key) const {
  if (!obj.is_object()) return error("expected an object");
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string())
    return child(key).error(str_cat("expected a string, got ", it->type_name()));
  return std::optional<std::string>(it->get<std::string>());
}

absl::StatusOr<std::string> JsonPath::get_type(const nlohmann::json& obj) const {
  if (!obj.is_object()) return error(str_cat("expected an object, got ", obj.type_name()));
  return get_string(obj, "type");
}

}  // namespace weft
