// Reading JSON request bodies: a member that is present and not null, and a DOM of one
// nlohmann flavour as the other (nlohmann has no conversion between json and ordered_json).
#pragma once

#include "nlohmann/json.hpp"

namespace weft {

// `obj[name]` when `obj` has it and it is not null; null otherwise. `obj` must be an object.
inline const nlohmann::json* json_member(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// `value` as an ordered_json (its keys in json's sorted order). Invalid UTF-8 becomes U+FFFD.
inline nlohmann::ordered_json to_ordered_json(const nlohmann::json& value) {
  return nlohmann::ordered_json::parse(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace weft
