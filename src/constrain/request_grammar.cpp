#include "constrain/request_grammar.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

using json = nlohmann::json;

absl::Status bad(const std::string& param, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(param, ": ", why));
}

// A schema given as a JSON object or as a string holding one.
absl::StatusOr<std::string> schema_text(const json& v, const std::string& param) {
  if (v.is_object() || v.is_boolean()) return v.dump();
  if (v.is_string()) return v.get<std::string>();
  return bad(param, absl::StrCat("expected a JSON schema (object or string), got ", v.type_name()));
}

absl::StatusOr<std::string> string_field(const json& v, const std::string& param) {
  if (!v.is_string()) return bad(param, absl::StrCat("expected a string, got ", v.type_name()));
  return v.get<std::string>();
}

absl::StatusOr<std::vector<std::string>> choices(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) return bad(param, "expected a non-empty array of strings");
  std::vector<std::string> out;
  for (const json& c : v) {
    if (!c.is_string()) return bad(param, absl::StrCat("expected strings, got ", c.type_name()));
    out.push_back(c.get<std::string>());
  }
  return out;
}

absl::StatusOr<std::optional<GrammarSpec>> from_response_format(const json& v) {
  const std::string param = "response_format";
  if (!v.is_object()) return bad(param, absl::StrCat("expected an object, got ", v.type_name()));
  const json type = v.value("type", json());
  if (!type.is_string()) return bad(param + ".type", "expected \"text\", \"json_object\", \"json_schema\" or \"structural_tag\"");
  const std::string t = type.get<std::string>();
  if (t == "text") return std::optional<GrammarSpec>();
  if (t == "json_object") return std::optional<GrammarSpec>(GrammarSpec::any_json().set_parameter(param));
  if (t == "json_schema") {
    const json spec = v.value("json_schema", json());
    if (!spec.is_object()) return bad(param + ".json_schema", "expected an object with a \"schema\"");
    const json schema = spec.value("schema", json());
    if (schema.is_null()) return bad(param + ".json_schema.schema", "is required");
    auto text = schema_text(schema, param + ".json_schema.schema");
    if (!text.ok()) return text.status();
    JsonOptions options;
    const json strict = spec.value("strict", json());
    if (!strict.is_null() && !strict.is_boolean()) return bad(param + ".json_schema.strict", "expected a boolean");
    options.strict = strict.is_boolean() ? strict.get<bool>() : true;
    return std::optional<GrammarSpec>(
        GrammarSpec::json_schema(*text, options).set_parameter(param + ".json_schema.schema"));
  }
  if (t == "structural_tag") {
    return std::optional<GrammarSpec>(GrammarSpec::structural_tag(v.dump()).set_parameter(param));
  }
  return bad(param + ".type", absl::StrCat("unknown type \"", t,
                                           "\"; expected text, json_object, json_schema or structural_tag"));
}

absl::StatusOr<std::optional<GrammarSpec>> from_structured_outputs(const json& v) {
  const std::string param = "structured_outputs";
  if (!v.is_object()) return bad(param, absl::StrCat("expected an object, got ", v.type_name()));
  JsonOptions options;
  std::optional<GrammarSpec> spec;
  for (const auto& [key, value] : v.items()) {
    const std::string p = param + "." + key;
    if (value.is_null()) continue;
    std::optional<GrammarSpec> one;
    if (key == "json") {
      auto text = schema_text(value, p);
      if (!text.ok()) return text.status();
      one = GrammarSpec::json_schema(*text);
    } else if (key == "regex") {
      auto text = string_field(value, p);
      if (!text.ok()) return text.status();
      one = GrammarSpec::regex(*text);
    } else if (key == "choice") {
      auto list = choices(value, p);
      if (!list.ok()) return list.status();
      one = GrammarSpec::choice(*list);
    } else if (key == "grammar") {
      auto text = string_field(value, p);
      if (!text.ok()) return text.status();
      one = GrammarSpec::ebnf(*text);
    } else if (key == "json_object") {
      if (!value.is_boolean()) return bad(p, "expected a boolean");
      if (value.get<bool>()) one = GrammarSpec::any_json();
    } else if (key == "structural_tag") {
      auto text = value.is_string() ? absl::StatusOr<std::string>(value.get<std::string>())
                                    : absl::StatusOr<std::string>(value.dump());
      one = GrammarSpec::structural_tag(*text);
    } else if (key == "disable_any_whitespace") {
      if (!value.is_boolean()) return bad(p, "expected a boolean");
      if (value.get<bool>()) options.whitespace = JsonWhitespace::kFixed;
      continue;
    } else if (key == "disable_additional_properties") {
      if (!value.is_boolean()) return bad(p, "expected a boolean");
      if (value.get<bool>()) options.strict = true;
      continue;
    } else if (key == "backend" || key == "disable_fallback") {
      continue;  // which engine enforces it: weft has one, and the grammar is the same
    } else if (key == "whitespace_pattern") {
      return bad(p, "not supported; JSON whitespace is bounded (at most 16 characters in each place)");
    } else {
      return bad(p, "unknown field; expected json, regex, choice, grammar, json_object or structural_tag");
    }
    if (!one) continue;
    if (spec) return bad(p, absl::StrCat("only one constraint per request, and ", spec->parameter(), " is given too"));
    one->set_parameter(p);
    spec = std::move(one);
  }
  if (spec && (spec->kind() == GrammarKind::kJsonSchema || spec->kind() == GrammarKind::kAnyJson)) {
    const std::string p = spec->parameter();
    spec = spec->kind() == GrammarKind::kJsonSchema ? GrammarSpec::json_schema(spec->text(), options)
                                                    : GrammarSpec::any_json(options);
    spec->set_parameter(p);
  }
  return spec;
}

}  // namespace

absl::StatusOr<std::optional<GrammarSpec>> grammar_spec_from_request(const json& body) {
  if (!body.is_object()) return std::optional<GrammarSpec>();
  std::optional<GrammarSpec> spec;
  auto take = [&](absl::StatusOr<std::optional<GrammarSpec>> one, const std::string& param) -> absl::Status {
    if (!one.ok()) return one.status();
    if (!*one) return absl::OkStatus();
    if (spec) return bad(param, absl::StrCat("only one constraint per request, and ", spec->parameter(), " is given too"));
    spec = std::move(*one);
    return absl::OkStatus();
  };
  auto present = [&](const char* key) { return body.contains(key) && !body[key].is_null(); };
  if (present("response_format")) {
    if (auto s = take(from_response_format(body["response_format"]), "response_format"); !s.ok()) return s;
  }
  if (present("structured_outputs")) {
    if (auto s = take(from_structured_outputs(body["structured_outputs"]), "structured_outputs"); !s.ok()) return s;
  }
  if (present("guided_whitespace_pattern")) {
    return bad("guided_whitespace_pattern", "not supported; JSON whitespace is bounded (at most 16 characters in each place)");
  }
  if (present("guided_json")) {
    auto text = schema_text(body["guided_json"], "guided_json");
    if (!text.ok()) return text.status();
    if (auto s = take(std::optional<GrammarSpec>(GrammarSpec::json_schema(*text).set_parameter("guided_json")), "guided_json");
        !s.ok()) {
      return s;
    }
  }
  if (present("guided_regex")) {
    auto text = string_field(body["guided_regex"], "guided_regex");
    if (!text.ok()) return text.status();
    if (auto s = take(std::optional<GrammarSpec>(GrammarSpec::regex(*text).set_parameter("guided_regex")), "guided_regex");
        !s.ok()) {
      return s;
    }
  }
  if (present("guided_choice")) {
    auto list = choices(body["guided_choice"], "guided_choice");
    if (!list.ok()) return list.status();
    if (auto s = take(std::optional<GrammarSpec>(GrammarSpec::choice(*list).set_parameter("guided_choice")), "guided_choice");
        !s.ok()) {
      return s;
    }
  }
  if (present("guided_grammar")) {
    auto text = string_field(body["guided_grammar"], "guided_grammar");
    if (!text.ok()) return text.status();
    if (auto s = take(std::optional<GrammarSpec>(GrammarSpec::ebnf(*text).set_parameter("guided_grammar")), "guided_grammar");
        !s.ok()) {
      return s;
    }
  }
  return spec;
}

}  // namespace weft
