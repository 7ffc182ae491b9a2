#include "constrain/grammar_spec.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

// Length-prefixed, so no text can make two different specs encode alike.
void append_field(std::string& key, std::string_view value) {
  absl::StrAppend(&key, value.size(), ":");
  key.append(value);
  key.push_back(';');
}

}  // namespace

const char* grammar_kind_name(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kJsonSchema:
      return "json_schema";
    case GrammarKind::kAnyJson:
      return "any_json";
    case GrammarKind::kRegex:
      return "regex";
    case GrammarKind::kChoice:
      return "choice";
    case GrammarKind::kEbnf:
      return "ebnf";
    case GrammarKind::kStructuralTag:
      return "structural_tag";
  }
  return "unknown";
}

GrammarSpec GrammarSpec::json_schema(std::string schema, JsonOptions options) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kJsonSchema;
  spec.text_ = std::move(schema);
  spec.json_ = options;
  return spec;
}

GrammarSpec GrammarSpec::any_json(JsonOptions options) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kAnyJson;
  options.strict = false;
  spec.json_ = options;
  return spec;
}

GrammarSpec GrammarSpec::regex(std::string pattern) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kRegex;
  spec.text_ = std::move(pattern);
  return spec;
}

GrammarSpec GrammarSpec::choice(std::vector<std::string> choices) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kChoice;
  spec.choices_ = std::move(choices);
  return spec;
}

GrammarSpec GrammarSpec::ebnf(std::string grammar, std::string root_rule) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kEbnf;
  spec.text_ = std::move(grammar);
  spec.root_rule_ = std::move(root_rule);
  return spec;
}

GrammarSpec GrammarSpec::structural_tag(std::string tag_json) {
  GrammarSpec spec;
  spec.kind_ = GrammarKind::kStructuralTag;
  spec.text_ = std::move(tag_json);
  return spec;
}

GrammarSpec& GrammarSpec::set_parameter(std::string parameter) {
  parameter_ = std::move(parameter);
  return *this;
}

const std::string& GrammarSpec::parameter() const {
  static const std::string names[] = {"json_schema", "any_json", "regex",
                                      "choice",      "ebnf",     "structural_tag"};
  return parameter_.empty() ? names[static_cast<int>(kind_)] : parameter_;
}

std::string GrammarSpec::cache_key() const {
  std::string key = absl::StrCat(grammar_kind_name(kind_), ";");
  if (kind_ == GrammarKind::kJsonSchema || kind_ == GrammarKind::kAnyJson) {
    absl::StrAppend(&key, "strict=", json_.strict ? 1 : 0,
                    ";ws=", static_cast<int>(json_.whitespace));
    if (json_.whitespace == JsonWhitespace::kBounded) {
      absl::StrAppend(&key, ";max_ws=", json_.max_whitespace);
    }
    if (json_.whitespace == JsonWhitespace::kFixed) {
      absl::StrAppend(&key, ";indent=", json_.indent ? *json_.indent : -1);
    }
    key.push_back(';');
  }
  if (kind_ == GrammarKind::kEbnf) append_field(key, root_rule_);
  if (kind_ == GrammarKind::kChoice) {
    absl::StrAppend(&key, choices_.size(), ";");
    for (const std::string& c : choices_) append_field(key, c);
  }
  append_field(key, text_);
  return key;
}

}  // namespace weft
