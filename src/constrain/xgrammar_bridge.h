// Internal to src/constrain: the xgrammar objects behind weft's types, and the translation of
// xgrammar's exceptions into absl::Status. Only src/constrain/*.cpp include this header; nothing
// else in weft sees xgrammar.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "constrain/compiled_grammar.h"
#include "constrain/grammar_vocabulary.h"
#include "xgrammar/xgrammar.h"

namespace weft {

class GrammarVocabulary::Impl {
 public:
  explicit Impl(xgrammar::TokenizerInfo info) : info(std::move(info)) {}
  xgrammar::TokenizerInfo info;
};

class CompiledGrammar::Impl {
 public:
  explicit Impl(xgrammar::CompiledGrammar compiled) : compiled(std::move(compiled)) {}
  xgrammar::CompiledGrammar compiled;
};

// The message of an exception xgrammar threw, without the "[12:00:00] file.cc:123: " prefix
// its LogFatalError adds, nor a trailing newline.
std::string xgrammar_message(const std::exception& e);

// InvalidArgument "<parameter>: <what>: <xgrammar's message>".
absl::Status xgrammar_error(std::string_view parameter, std::string_view what,
                            const std::exception& e);

}  // namespace weft

namespace weft {

class GrammarSpec;

// The spec as an xgrammar Grammar (not yet compiled against the vocabulary). Errors:
// InvalidArgument "<parameter>: invalid <kind>: <xgrammar's message>".
absl::StatusOr<xgrammar::Grammar> to_xgrammar_grammar(const GrammarSpec& spec,
                                                      const xgrammar::TokenizerInfo& vocabulary);

// EBNF for "exactly one of `choices`" (each a string literal, escaped for xgrammar's parser).
std::string choice_ebnf(const std::vector<std::string>& choices);

}  // namespace weft
