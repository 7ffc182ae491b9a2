// The "logprobs" object of an OpenAI choice, shared by `weft serve` (serving/openai_response.h)
// and `weft batch` (batch/batch_record.h), so the same request gets the same logprobs either way.
//
// Completions form: {"tokens": [str], "token_logprobs": [float], "top_logprobs": [{str: float}],
// "text_offset": [int]}. Chat form: {"content": [{"token", "logprob", "bytes": [int],
// "top_logprobs": [{"token", "logprob", "bytes"}]}]}. A token's string is that token decoded
// alone with special tokens kept (`token_text`).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "engine/engine.h"
#include "sampling/sampler.h"

namespace weft {

// The logprobs of `token_ids` (one step's tokens of one choice) with their sampling results.
// `text_offset`: where the first token's text starts in the choice's text, in code points
// (completions form); each next token's offset adds the previous token string's length, as vLLM
// counts them.
nlohmann::json openai_logprobs(bool chat, std::span<const int32_t> token_ids, std::span<const SampleResult> samples,
                               const std::function<std::string(int32_t)>& token_text, int64_t text_offset);

// The completions-form logprobs of a prompt (Engine's PromptLogprobs, one entry per prompt token):
// the first token's token_logprobs and top_logprobs are null; each top_logprobs keeps the `top`
// most likely alternatives. text_offset starts at 0 and adds each token string's length;
// `*end_offset` gets the offset after the last token (where generated tokens continue).
nlohmann::json openai_prompt_logprobs(const PromptLogprobs& prompt, int top,
                                      const std::function<std::string(int32_t)>& token_text, int64_t* end_offset);

// vLLM's prompt_logprobs list: null for the first token, then per token an object keyed by token
// id (as a string) holding the prompt token and its `top` most likely alternatives, each
// {"logprob", "rank", "decoded_token"}. Logprobs below -9999 (-inf) are written as -9999, as vLLM.
nlohmann::json vllm_prompt_logprobs(const PromptLogprobs& prompt, int top,
                                    const std::function<std::string(int32_t)>& token_text);

// Appends `piece` to `into` (both one form); a null `into` becomes `piece`.
void append_openai_logprobs(nlohmann::json& into, const nlohmann::json& piece);

// The length of UTF-8 text in code points (the unit of text_offset).
int64_t utf8_code_points(std::string_view text);

// What a choice that asked for logprobs reports when it has none: chat {"content": []}, null for
// completions.
nlohmann::json empty_openai_logprobs(bool chat);

}  // namespace weft
