#include "constrain/grammar_limits.h"

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"

namespace weft {
namespace {

absl::Status refuse(const GrammarSpec& spec, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(spec.parameter(), ": ", std::string(why)));
}

absl::Status check_json_document(const GrammarSpec& spec, const GrammarLimits& limits,
                                 bool schema) {
  JsonLimits json_limits;
  json_limits.max_depth = limits.max_schema_depth;
  json_limits.max_values = static_cast<int64_t>(limits.max_spec_bytes);
  auto doc = parse_json_bounded<nlohmann::json>(spec.text(), spec.parameter(), json_limits);
  if (!doc.ok()) return doc.status();
  if (schema && !doc->is_object() && !doc->is_boolean()) {
    return refuse(spec, "a JSON schema must be an object or a boolean");
  }
  if (!schema && !doc->is_object()) return refuse(spec, "a structural tag must be a JSON object");
  return absl::OkStatus();
}

}  // namespace

absl::Status check_grammar_spec(const GrammarSpec& spec, const GrammarLimits& limits) {
  size_t bytes = spec.text().size();
  for (const std::string& c : spec.choices()) bytes += c.size();
  if (bytes > limits.max_spec_bytes) {
    return refuse(spec, absl::StrCat(bytes, " bytes exceed the limit of ", limits.max_spec_bytes));
  }
  const JsonOptions& json = spec.json_options();
  switch (spec.kind()) {
    case GrammarKind::kJsonSchema:
    case GrammarKind::kAnyJson:
      if (json.whitespace == JsonWhitespace::kBounded &&
          (json.max_whitespace < 1 || json.max_whitespace > 1024)) {
        return refuse(
            spec, absl::StrCat("max_whitespace ", json.max_whitespace, " is outside [1, 1024]"));
      }
      if (json.indent && (*json.indent < 0 || *json.indent > 16)) {
        return refuse(spec, absl::StrCat("indent ", *json.indent, " is outside [0, 16]"));
      }
      if (json.indent && json.whitespace != JsonWhitespace::kFixed) {
        return refuse(spec, "indent needs the fixed whitespace layout");
      }
      if (spec.kind() == GrammarKind::kJsonSchema) {
        if (spec.text().empty()) return refuse(spec, "the JSON schema is empty");
        return check_json_document(spec, limits, /*schema=*/true);
      }
      return absl::OkStatus();
    case GrammarKind::kRegex:
      if (spec.text().empty()) return refuse(spec, "the regular expression is empty");
      return absl::OkStatus();
    case GrammarKind::kChoice:
      if (spec.choices().empty()) return refuse(spec, "the choice list is empty");
      if (spec.choices().size() > static_cast<size_t>(limits.max_choices)) {
        return refuse(spec, absl::StrCat(spec.choices().size(), " choices exceed the limit of ",
                                         limits.max_choices));
      }
      return absl::OkStatus();
    case GrammarKind::kEbnf:
      if (spec.text().empty()) return refuse(spec, "the grammar is empty");
      if (spec.root_rule().empty()) return refuse(spec, "the root rule name is empty");
      return absl::OkStatus();
    case GrammarKind::kStructuralTag:
      if (spec.text().empty()) return refuse(spec, "the structural tag is empty");
      return check_json_document(spec, limits, /*schema=*/false);
  }
  return absl::OkStatus();
}

}  // namespace weft
