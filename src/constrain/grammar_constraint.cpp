#include "constrain/grammar_constraint.h"

#include "absl/strings/str_cat.h"
#include "constrain/grammar_matcher.h"
#include "constrain/request_grammar.h"
#include "constrain/tool_call_grammar.h"

namespace weft {
namespace {

class GrammarConstraint final : public TokenConstraint {
 public:
  explicit GrammarConstraint(GrammarMatcher matcher) : matcher_(std::move(matcher)) {}

  absl::StatusOr<bool> fill_next_allowed(std::span<uint32_t> row) override {
    return matcher_.fill_next_token_bitmask(row);
  }
  bool accept(int32_t token) override { return matcher_.accept_token(token); }
  absl::Status rollback(int count) override { return matcher_.rollback(count); }
  std::unique_ptr<TokenConstraint> fork() const override {
    return std::make_unique<GrammarConstraint>(matcher_.fork());
  }
  bool is_terminated() const override { return matcher_.is_terminated(); }

 private:
  GrammarMatcher matcher_;
};

class GrammarConstraintSource final : public TokenConstraintSource {
 public:
  explicit GrammarConstraintSource(std::shared_ptr<const CompiledGrammar> grammar) : grammar_(std::move(grammar)) {}
  std::unique_ptr<TokenConstraint> start() const override {
    return std::make_unique<GrammarConstraint>(GrammarMatcher(grammar_));
  }

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> request_constraint(const nlohmann::json& body,
                                                                                GrammarCompiler& compiler) {
  auto spec = grammar_spec_from_request(body);
  if (!spec.ok()) return spec.status();
  if (!*spec) return std::shared_ptr<const TokenConstraintSource>();
  auto compiled = compiler.compile(**spec);
  if (!compiled.ok()) return compiled.status();
  return grammar_constraint_source(*std::move(compiled));
}

absl::StatusOr<std::shared_ptr<GrammarCompiler>> model_grammar_compiler(const Tokenizer& tokenizer,
                                                                        int64_t model_vocab_size,
                                                                        const std::vector<int32_t>& stop_token_ids) {
  GrammarVocabularyOptions options;
  options.model_vocab_size = static_cast<int32_t>(model_vocab_size);
  options.stop_token_ids = stop_token_ids;
  auto vocabulary = GrammarVocabulary::from_tokenizer(tokenizer, options);
  if (!vocabulary.ok()) return vocabulary.status();
  return std::make_shared<GrammarCompiler>(*std::move(vocabulary));
}

std::shared_ptr<const TokenConstraintSource> grammar_constraint_source(std::shared_ptr<const CompiledGrammar> grammar) {
  return std::make_shared<GrammarConstraintSource>(std::move(grammar));
}

absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> tool_call_constraint(
    const ToolRequest& tools, const std::optional<ToolCallFormat>& format, GrammarCompiler& compiler) {
  for (size_t i = 0; i < tools.functions.size(); ++i) {
    auto checked = compiler.compile(tool_parameters_grammar(tools.functions[i], i));
    if (!checked.ok()) return checked.status();
  }
  if (tools.functions.empty() || !format) return nullptr;
  auto spec = tool_call_grammar(*format, tools);
  if (!spec.ok()) return spec.status();
  if (!*spec) return nullptr;
  auto compiled = compiler.compile(**spec);
  if (!compiled.ok()) return compiled.status();
  return grammar_constraint_source(*std::move(compiled));
}

}  // namespace weft
