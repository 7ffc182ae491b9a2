// A compiled grammar as the engine's TokenConstraint (sampling/token_constraint.h): each
// sequence of a request gets its own GrammarMatcher over the shared compiled grammar.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "constrain/compiled_grammar.h"
#include "constrain/grammar_compiler.h"
#include "nlohmann/json.hpp"
#include "sampling/token_constraint.h"
#include "tokenizer/tokenizer.h"
#include "tool_calls/tool_call_format.h"
#include "tool_calls/tool_request.h"

namespace weft {

std::shared_ptr<const TokenConstraintSource> grammar_constraint_source(std::shared_ptr<const CompiledGrammar> grammar);

// The constraint a request body asks for (request_grammar.h), compiled by `compiler` (cached);
// null when it asks for none. Errors (InvalidArgument, ResourceExhausted) start with the
// request parameter.
absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> request_constraint(const nlohmann::json& body,
                                                                                GrammarCompiler& compiler);

// The constraint of a chat request's tools (tool_call_grammar.h) for replies written in
// `format`, compiled by `compiler`; null when the reply is free (no tools, tool_choice "none",
// "auto" without strict functions, or no format). Every tool's parameters schema must compile
// either way. Errors start with the field (tools[i].function.parameters, tool_choice).
absl::StatusOr<std::shared_ptr<const TokenConstraintSource>> tool_call_constraint(
    const ToolRequest& tools, const std::optional<ToolCallFormat>& format, GrammarCompiler& compiler);

// The compiler a server or batch job shares: the tokenizer's vocabulary over the model's logits
// row (`model_vocab_size`), generation ending at `stop_token_ids`.
absl::StatusOr<std::shared_ptr<GrammarCompiler>> model_grammar_compiler(const Tokenizer& tokenizer,
                                                                        int64_t model_vocab_size,
                                                                        const std::vector<int32_t>& stop_token_ids);

}  // namespace weft
