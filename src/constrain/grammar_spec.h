// What a request constrains its output to: a JSON schema, any JSON, a regular expression, one of
// a list of strings, an EBNF (GBNF-style) grammar or a structural tag. Plain data: building one
// checks nothing; GrammarCompiler::compile validates it and reports errors naming parameter().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

enum class GrammarKind { kJsonSchema, kAnyJson, kRegex, kChoice, kEbnf, kStructuralTag };

// "json_schema", "any_json", "regex", "choice", "ebnf", "structural_tag".
const char* grammar_kind_name(GrammarKind kind);

// Whitespace JSON output may hold between tokens (outside strings).
enum class JsonWhitespace {
  // One fixed layout, as Python's json.dumps: one line with ", " and ": " separators, or, with
  // JsonOptions::indent, one element per line indented by that many spaces per level.
  kFixed,
  // Any of space, \n, \r, \t, at most JsonOptions::max_whitespace of them in each place JSON
  // allows whitespace. The default: models that pretty-print keep doing so, and none can emit
  // whitespace until max_tokens (the runaway the peers show with unbounded whitespace).
  kBounded,
  // Unbounded whitespace (xgrammar's and vLLM's default). Opt-in only.
  kAny,
};

struct JsonOptions {
  // Strict (xgrammar's strict_mode, vLLM's default): an object takes only the properties its
  // schema lists and an array only the items it lists, unless the schema allows more
  // explicitly (additionalProperties, items). false: JSON Schema's own defaults (extra
  // properties allowed).
  bool strict = true;
  JsonWhitespace whitespace = JsonWhitespace::kBounded;
  // kBounded: whitespace characters per place, 1..1024. 16 covers pretty-printing 7 levels deep.
  int max_whitespace = 16;
  // kFixed: spaces per nesting level, one element per line; nullopt: one line. 0..16.
  std::optional<int> indent;

  bool operator==(const JsonOptions&) const = default;
};

class GrammarSpec {
 public:
  // A JSON Schema document (draft 2020-12 subset that xgrammar implements; refs, anyOf, enums,
  // string formats and patterns, numeric ranges, array and string lengths).
  static GrammarSpec json_schema(std::string schema, JsonOptions options = {});
  // Any JSON object or array (OpenAI's response_format json_object; vLLM's built-in JSON
  // grammar), whitespace bounded as `options` says; options.strict is ignored.
  static GrammarSpec any_json(JsonOptions options = {});
  // A regular expression the whole output must match (xgrammar's regex dialect: ECMAScript-like
  // classes, groups, alternation, quantifiers incl. {m,n}; no backreferences or lookaround).
  static GrammarSpec regex(std::string pattern);
  // Exactly one of `choices` (vLLM's guided_choice). At least one choice; may contain "".
  static GrammarSpec choice(std::vector<std::string> choices);
  // An EBNF grammar in xgrammar's syntax (GBNF-compatible: `rule ::= ...`, "literals", [classes],
  // *, +, ?, {m,n}, comments), starting at `root_rule`.
  static GrammarSpec ebnf(std::string grammar, std::string root_rule = "root");
  // An xgrammar structural tag (JSON: {"type": "structural_tag", "format": {...}}, or the older
  // {"structures": [...], "triggers": [...]} form vLLM passes).
  static GrammarSpec structural_tag(std::string tag_json);

  // The request parameter this spec came from (e.g. "response_format.json_schema.schema"); every
  // error about the spec starts with it. Defaults to grammar_kind_name(kind()).
  GrammarSpec& set_parameter(std::string parameter);
  const std::string& parameter() const;

  GrammarKind kind() const { return kind_; }
  // Schema, pattern, grammar or structural tag text (empty for kAnyJson and kChoice).
  const std::string& text() const { return text_; }
  const std::vector<std::string>& choices() const { return choices_; }
  const JsonOptions& json_options() const { return json_; }
  const std::string& root_rule() const { return root_rule_; }

  // Canonical, unambiguous encoding of everything that changes the compiled grammar (kind,
  // options, text, choices; not parameter()): equal keys compile to equal grammars. The compile
  // cache hashes it.
  std::string cache_key() const;

 private:
  GrammarKind kind_ = GrammarKind::kAnyJson;
  std::string text_;
  std::vector<std::string> choices_;
  JsonOptions json_;
  std::string root_rule_;
  std::string parameter_;
};

}  // namespace weft
