// A compiled grammar as the engine's TokenConstraint (sampling/token_constraint.h): each
// sequence of a request gets its own GrammarMatcher over the shared compiled grammar.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "constrain/compiled_grammar.h"
#include "constrain/grammar_compiler.h"
#include "nlohmann/json.hpp"
#include "sampling/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace weft {

std::shared_ptr<const TokenConstraintSource> grammar_constraint_source(std::shared_ptr<const CompiledGrammar> grammar);

// The constraint a request body asks for (request_grammar.h), compiled by `compiler` (cached);
// null when it asks for none. Errors (InvalidArgument, ResourceExhausted) start with the
// request parameter.
absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> request_constraint(const nlohmann::json& body,
                                                                                GrammarCompiler& compiler);

// The compiler a server or batch job shares: the tokenizer's vocabulary over the model's logits
// row (`model_vocab_size`), generation ending at `stop_token_ids`.
absl::StatusOr<std::shared_ptr<GrammarCompiler>> model_grammar_compiler(const Tokenizer& tokenizer,
                                                                        int64_t model_vocab_size,
                                                                        const std::vector<int32_t>& stop_token_ids);

}  // namespace weft
