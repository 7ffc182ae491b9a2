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

// The spec of one vLLM constraint kind ("json", "regex", "choice", "grammar"), shared by
// structured_outputs.<kind> and guided_<kind>; its errors and parameter are `param`.
absl::StatusOr<GrammarSpec> kind_spec(const std::string& kind, const json& value, const std::string& param) {
  std::optional<GrammarSpec> spec;
  if (kind == "json") {
    auto text = schema_text(value, param);
    if (!text.ok()) return text.status();
    spec = GrammarSpec::json_schema(*text);
  } else if (kind == "choice") {
    auto list = choices(value, param);
    if (!list.ok()) return list.status();
    spec = GrammarSpec::choice(*list);
  } else {
    auto text = string_field(value, param);
    if (!text.ok()) return text.status();
    spec = kind == "regex" ? GrammarSpec::regex(*text) : GrammarSpec::ebnf(*text);
  }
  spec->set_parameter(param);
  return *spec;
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
    if (key == "json" || key == "regex" || key == "choice" || key == "grammar") {
      auto parsed = kind_spec(key, value, p);
      if (!parsed.ok()) return parsed.status();
      one = *std::move(parsed);
    } else if (key == "json_object") {
      if (!value.is_boolean()) return bad(p, "expected a boolean");
      if (value.get<bool>()) one = GrammarSpec::any_json();
    } else if (key == "structural_tag") {
      one = GrammarSpec::structural_tag(value.is_string() ? value.get<std::string>() : value.dump());
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
  for (const char* kind : {"json", "regex", "choice", "grammar"}) {
    const std::string param = std::string("guided_") + kind;
    if (!present(param.c_str())) continue;
    auto one = kind_spec(kind, body[param], param);
    if (!one.ok()) return one.status();
    if (auto s = take(std::optional<GrammarSpec>(*std::move(one)), param); !s.ok()) return s;
  }
  return spec;
}

}  // namespace weft
