#include "model/json_reader.h"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

using nlohmann::json;

// Tracks the keys of every open object so a repeated key is caught while parsing; nlohmann's
// DOM keeps only the last value of a repeated key, which would let a file hide a tensor.
struct DuplicateKeyFinder {
  struct Level {
    bool is_object = false;
    std::set<std::string> seen;
    std::string current_key;
  };
  std::vector<Level> stack;
  std::optional<std::string> duplicate_path;
  bool too_deep = false;

  std::string path_with(const std::string& key) const {
    std::string path;
    for (const Level& level : stack) {
      if (level.is_object && &level != &stack.back())
        absl::StrAppend(&path, level.current_key, ".");
    }
    return path + key;
  }

  bool on_event(int depth, json::parse_event_t event, const json& parsed) {
    if (depth >= kMaxJsonNestingDepth && (event == json::parse_event_t::object_start ||
                                          event == json::parse_event_t::array_start)) {
      // Returning false drops the container from the result, so nothing deeper is built.
      too_deep = true;
      return false;
    }
    switch (event) {
      case json::parse_event_t::object_start:
        stack.push_back(Level{true, {}, {}});
        break;
      case json::parse_event_t::array_start:
        stack.push_back(Level{false, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key:
        if (!stack.empty() && parsed.is_string()) {
          Level& level = stack.back();
          const std::string& key = parsed.get_ref<const std::string&>();
          if (!level.seen.insert(key).second && !duplicate_path) duplicate_path = path_with(key);
          level.current_key = key;
        }
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  }
};

}  // namespace

absl::StatusOr<json> parse_json_strict(std::string_view text, const std::string& source) {
  DuplicateKeyFinder finder;
  json::parser_callback_t callback = [&finder](int depth, json::parse_event_t event,
                                               json& parsed) {
    return finder.on_event(depth, event, parsed);
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not valid JSON: ", e.what()));
  }
  if (finder.too_deep) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": arrays/objects nested deeper than ", kMaxJsonNestingDepth, " levels"));
  }
  if (finder.duplicate_path) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": duplicate key '", *finder.duplicate_path, "'"));
  }
  return value;
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
