// GrammarSpec -> xgrammar::Grammar: the one place that maps weft's spec options onto
// xgrammar's converters.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "constrain/grammar_spec.h"
#include "constrain/xgrammar_bridge.h"

namespace weft {
namespace {

// JSON schema of "any JSON object or array" (OpenAI's json_object, vLLM's built-in JSON).
constexpr const char* kAnyJsonSchema = R"({"type": ["object", "array"]})";

xgrammar::Grammar json_schema_grammar(const std::string& schema, const JsonOptions& o) {
  switch (o.whitespace) {
    case JsonWhitespace::kFixed:
      return xgrammar::Grammar::FromJSONSchema(schema, /*any_whitespace=*/false, o.indent,
                                               std::nullopt, o.strict);
    case JsonWhitespace::kBounded:  // bounded at run time (json_whitespace_bound.h)
    case JsonWhitespace::kAny:
      break;
  }
  return xgrammar::Grammar::FromJSONSchema(schema, /*any_whitespace=*/true, std::nullopt,
                                           std::nullopt, o.strict);
}

}  // namespace

std::string choice_ebnf(const std::vector<std::string>& choices) {
  std::string out = "root ::= (";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) out += " | ";
    out.push_back('"');
    for (const char ch : choices[i]) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(ch);
      } else if (c < 0x20 || c == 0x7f) {
        // \uXXXX: xgrammar's \x takes any number of hex digits, so a following digit would join.
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04X", c);
        out += buf;
      } else {
        out.push_back(ch);  // UTF-8 passes through as the characters it encodes
      }
    }
    out.push_back('"');
  }
  out += ")\n";
  return out;
}

absl::StatusOr<xgrammar::Grammar> to_xgrammar_grammar(const GrammarSpec& spec,
                                                      const xgrammar::TokenizerInfo& vocabulary) {
  const std::string& p = spec.parameter();
  try {
    switch (spec.kind()) {
      case GrammarKind::kJsonSchema:
        return json_schema_grammar(spec.text(), spec.json_options());
      case GrammarKind::kAnyJson:
        return json_schema_grammar(kAnyJsonSchema, spec.json_options());
      case GrammarKind::kRegex:
        return xgrammar::Grammar::FromRegex(spec.text());
      case GrammarKind::kChoice:
        return xgrammar::Grammar::FromEBNF(choice_ebnf(spec.choices()));
      case GrammarKind::kEbnf:
        return xgrammar::Grammar::FromEBNF(spec.text(), spec.root_rule());
      case GrammarKind::kStructuralTag: {
        auto result = xgrammar::Grammar::FromStructuralTag(spec.text(), vocabulary);
        if (auto* g = std::get_if<xgrammar::Grammar>(&result)) return std::move(*g);
        std::string message;
        std::visit([&](const auto& e) { message = xgrammar_message(e); },
                   std::get<xgrammar::StructuralTagError>(result));
        return absl::InvalidArgumentError(absl::StrCat(p, ": invalid structural tag: ", message));
      }
    }
  } catch (const std::exception& e) {
    static constexpr const char* kWhat[] = {
        "invalid JSON schema", "invalid JSON grammar", "invalid regular expression",
        "invalid choice",      "invalid grammar",      "invalid structural tag"};
    return xgrammar_error(p, kWhat[static_cast<int>(spec.kind())], e);
  }
  return absl::InvalidArgumentError(absl::StrCat(p, ": unknown grammar kind"));
}

}  // namespace weft
