// Chat templates: the Jinja2 programs in tokenizer_config.json ("chat_template") that turn a list
// of chat messages into the prompt string. Rendering matches Hugging Face transformers
// (jinja2 ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True, the
// loopcontrols extension, its tojson filter and its raise_exception / strftime_now globals)
// byte for byte on the supported subset: expressions, filters, tests, if/for/set/macro/call/
// filter/with blocks, namespace(), loop controls and {% generation %} (rendered as plain text).
//
// Not supported (a syntax error at parse time): template inheritance and includes
// (extends/block/include/import), recursive loops, *args/**kwargs in calls, nested tuple
// targets (`for a, (b, c) in ...`).
// Known differences: markupsafe's Markup concatenation semantics (escape() results are plain
// strings here) and Python big integers (int64 here; overflow is an error).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_prompt_end.h"
#include "tokenizer/chat_template/interpreter.h"

namespace weft {

using ChatTemplateLimits = jinja::RenderLimits;

class ChatTemplate {
 public:
  // Nesting depth of blocks and expressions accepted by parse().
  static constexpr int kDefaultMaxNestingDepth = 128;

  // Parses template source. Syntax errors are InvalidArgument with line, column and what was
  // expected: "chat template syntax error at line 3, column 12: unexpected end of template,
  // expected 'endfor'".
  static absl::StatusOr<ChatTemplate> parse(std::string_view source, int max_nesting_depth = kDefaultMaxNestingDepth);

  // Renders with the keys of `context` (an object) as template variables. Use ordered_json when
  // key order matters (tojson output, dict iteration): nlohmann::json sorts object keys.
  // Errors: raise_exception(msg) in the template gives InvalidArgument with message exactly msg
  // (and the jinja::kRaiseExceptionPayload payload); other runtime errors are InvalidArgument
  // "chat template error at line L, column C: ..." naming the filter/variable/operation; limits
  // give ResourceExhausted.
  absl::StatusOr<std::string> render(const nlohmann::ordered_json& context,
                                     const ChatTemplateLimits& limits = {}) const;
  absl::StatusOr<std::string> render(const nlohmann::json& context, const ChatTemplateLimits& limits = {}) const;

  const std::string& source() const { return *source_; }

 private:
  ChatTemplate() = default;
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const jinja::StmtList> body_;
};

// Renders a conversation the way transformers' tokenizer.apply_chat_template(tokenize=False) does:
// keys whose value is null are dropped from each message, reasoning fields are aliased
// ("reasoning_content" / "thinking" / "reasoning"), and the template sees
// messages, tools (null unless `extra` has "tools"), documents (null unless in `extra`),
// add_generation_prompt, bos_token, eos_token and every other key of `extra` (`extra` wins on
// clashes). `messages` must be an array of objects; `extra` an object or null.
absl::StatusOr<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                        bool add_generation_prompt, std::string_view bos_token,
                                        std::string_view eos_token,
                                        const nlohmann::ordered_json& extra = nlohmann::ordered_json(),
                                        const ChatTemplateLimits& limits = {});

// As above, with the prompt's end chosen by `end`. kContinueFinalMessage follows transformers 5's
// apply_chat_template(continue_final_message=True): the final message's "content" (a string, or
// the last part with a "text" key of a list) gets a marker appended, the template renders with
// add_generation_prompt false, and the output is cut where the marker starts (and right-stripped
// when the template did not keep the marker's trailing space, i.e. trimmed the content).
// Errors (InvalidArgument, transformers' ValueError messages): no messages, a final message
// without content or without text to continue, a template that never names "content", or one
// whose output lacks the (stripped) final content or the marker.
absl::StatusOr<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                        ChatPromptEnd end, std::string_view bos_token, std::string_view eos_token,
                                        const nlohmann::ordered_json& extra = nlohmann::ordered_json(),
                                        const ChatTemplateLimits& limits = {});

}  // namespace weft
