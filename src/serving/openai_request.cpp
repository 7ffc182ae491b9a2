#include "serving/openai_request.h"

#include "absl/strings/str_cat.h"
#include "core/json_access.h"
#include "core/bounded_json.h"
#include "serving/openai_fields.h"
#include "sampling/sampling_params_json.h"
#include "tool_calls/tool_request.h"
#ifdef WEFT_HAVE_CONSTRAIN
#include "constrain/grammar_constraint.h"
#endif

namespace weft {
namespace {

using nlohmann::json;

ApiError bad(std::string param, std::string message, std::string code = "") {
  ApiError e;
  e.status = 400;
  e.param = std::move(param);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

std::optional<ApiError> token_ids_from(const json& v, const char* param, int64_t vocab, std::vector<int32_t>& out) {
  for (size_t i = 0; i < v.size(); ++i) {
    const json& t = v[i];
    if (!t.is_number_integer() || (t.is_number_unsigned() ? t.get<uint64_t>() >= static_cast<uint64_t>(vocab)
                                                          : (t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab))) {
      return bad(param, absl::StrCat(param, "[", i, "]: expected a token id in [0, ", vocab, ")"));
    }
    out.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> read_add_special_tokens(const json& body, bool& out) {
  if (const json* a = json_member(body, "add_special_tokens")) {
    if (!a->is_boolean()) return bad("add_special_tokens", "add_special_tokens: expected a boolean");
    out = a->get<bool>();
  }
  return std::nullopt;
}

// One prompt (a string or an array of token ids) -> ids, and its text for echo.
std::optional<ApiError> one_completion_prompt(const json& prompt, const std::string& where, const ServedModel& model,
                                              bool add_special, bool echo, std::vector<int32_t>& ids,
                                              std::string& text) {
  if (prompt.is_string() || (echo && prompt.is_array())) {
    if (!model.tokenizer) return bad("prompt", absl::StrCat(where, ": text needs the model's tokenizer"));
  }
  if (prompt.is_string()) {
    if (echo) text = prompt.get<std::string>();
    auto encoded = model.tokenizer->encode(prompt.get_ref<const std::string&>(), add_special);
    if (!encoded.ok()) return bad("prompt", absl::StrCat(where, ": ", encoded.status().message()));
    ids = std::move(*encoded);
  } else if (prompt.is_array()) {
    if (auto err = token_ids_from(prompt, where.c_str(), model.vocab_size, ids)) {
      err->param = "prompt";
      return err;
    }
    if (echo) text = model.tokenizer->decode(ids, /*skip_special_tokens=*/false);
  } else {
    return bad("prompt", absl::StrCat(where, ": expected a string or an array of token ids, got ", prompt.type_name()));
  }
  if (ids.empty()) return bad("prompt", absl::StrCat(where, ": must contain at least one token"));
  return std::nullopt;
}

// prompt: a string, an array of token ids, or an array of strings / token-id arrays (a batch).
// With `echo`, `texts` gets each prompt's text (token ids decoded).
std::optional<ApiError> completion_prompts(const json& body, const ServedModel& model, bool echo,
                                           std::vector<std::vector<int32_t>>& ids, std::vector<std::string>& texts) {
  const json* p = json_member(body, "prompt");
  if (p == nullptr) return bad("prompt", "prompt: required");
  bool add_special = true;
  if (auto err = read_add_special_tokens(body, add_special)) return err;
  std::vector<const json*> prompts;
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    for (const json& one : *p) prompts.push_back(&one);
  } else {
    prompts.push_back(p);
  }
  const bool batch = prompts.size() > 1 || prompts.front() != p;
  ids.resize(prompts.size());
  texts.resize(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json& one = *prompts[i];
    const std::string where = batch ? absl::StrCat("prompt[", i, "]") : std::string("prompt");
    if (batch && !(one.is_string() || one.is_array())) {
      return bad("prompt", absl::StrCat(where, ": expected a string or an array of token ids, got ", one.type_name(),
                                        " (a batch holds prompts of one kind)"));
    }
    if (auto err = one_completion_prompt(one, where, model, add_special, echo, ids[i], texts[i])) return err;
  }
  return std::nullopt;
}

// An error about a request field: param is the top-level field the message starts with
// ("tools[1].function.name: ..." -> "tools").
ApiError field_error(const absl::Status& status) {
  ApiError e = api_error_from_status(status);
  e.param = e.param.substr(0, e.param.find_first_of("[."));
  return e;
}

std::optional<ApiError> chat_prompt(const json& body, const ServedModel& model, std::vector<int32_t>& ids,
                                    const ChatOptions& options, const ToolRequest& tools,
                                    nlohmann::ordered_json* messages_out = nullptr) {
  auto text = render_chat_request(body, model, options, tools, messages_out);
  if (auto* e = std::get_if<ApiError>(&text)) return *e;
  bool add_special = false;  // vLLM's chat default: the template writes the special tokens
  if (auto err = read_add_special_tokens(body, add_special)) return err;
  auto encoded = model.tokenizer->encode(std::get<std::string>(text), add_special);
  if (!encoded.ok()) return bad("messages", absl::StrCat("messages: ", encoded.status().message()));
  ids = std::move(*encoded);
  return std::nullopt;
}

// Chooses the parser of a request whose tools are parsed (GenerationRequest::tool_calls) and
// makes the markers survive detokenization. Errors: no parser known for the model.
std::optional<ApiError> tool_parsing(const ToolRequest& tools, const ServedModel& model, SamplingParams& params,
                                     GenerationRequest& out) {
  out.parallel_tool_calls = tools.parallel;
  if (!tools.parses_calls()) return std::nullopt;
  if (!model.tool_call_format) {
    return bad("tools", "tools: the model's chat template shows no tool-call format weft can parse; start weft serve "
                        "with --tool-call-parser hermes|llama3_json|mistral (or send tool_choice \"none\")");
  }
  out.tool_calls = *model.tool_call_format;
  // A marker held as a special token (Mistral's [TOOL_CALLS], Llama's <|python_tag|>) must stay
  // in the text the parser reads, as vLLM's parsers arrange.
  const std::optional<int32_t> marker = model.tokenizer->token_to_id(tool_call_start_marker(*out.tool_calls));
  if (marker && model.tokenizer->is_special(*marker)) params.skip_special_tokens = false;
  return std::nullopt;
}

// The grammar of tool_choice required / named / strict functions (null when the reply is free),
// after every tool's parameters schema was checked to compile.
std::variant<std::shared_ptr<const TokenConstraintSource>, ApiError> chat_tool_constraint(
    const ToolRequest& tools, const ServedModel& model, const std::optional<ToolCallFormat>& format) {
  std::shared_ptr<const TokenConstraintSource> none;
  if (tools.functions.empty()) return none;
  bool strict = false;
  for (const ToolFunction& f : tools.functions) strict = strict || f.strict;
  const bool needs_grammar = tools.forces_calls() || (tools.parses_calls() && strict);
#ifdef WEFT_HAVE_CONSTRAIN
  if (model.grammars == nullptr) {
    if (!needs_grammar) return none;
    return bad("tool_choice", "tool_choice: \"required\", a named function and strict functions need the grammar "
                              "compiler, which this server does not have");
  }
  auto constraint = tool_call_constraint(tools, format, *model.grammars);
  if (!constraint.ok()) return field_error(constraint.status());
  return *std::move(constraint);
#else
  if (needs_grammar) {
    return bad("tool_choice", "tool_choice: \"required\", a named function and strict functions need constrained "
                              "output, which this weft was built without (WEFT_CONSTRAIN=OFF)");
  }
  (void)format;
  return none;
#endif
}

}  // namespace

std::variant<std::string, ApiError> render_chat_request(const json& body, const ServedModel& model,
                                                        const ChatOptions& options, const ToolRequest& tools,
                                                        nlohmann::ordered_json* messages_out) {
  const json* m = json_member(body, "messages");
  nlohmann::ordered_json messages;
  if (auto err = chat_messages_for_template(m != nullptr ? *m : json(), messages)) return bad(err->param, err->message);
  if (!model.chat_template) return bad("messages", "messages: the model has no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json); give one with --chat-template FILE");
  nlohmann::ordered_json extra;
  if (auto err = chat_template_extra(body, extra)) return bad(err->param, err->message);
  // The template sees the tools whatever tool_choice says (vLLM renders them for "none" too).
  if (!tools.template_tools.is_null() && !extra.contains("tools")) extra["tools"] = tools.template_tools;
  const Tokenizer& tok = *model.tokenizer;
  auto text = render_chat(*model.chat_template, messages, options.prompt_end, tok.bos_token().value_or(""),
                          tok.eos_token().value_or(""), extra);
  if (!text.ok()) {
    const char* param = options.prompt_end == ChatPromptEnd::kContinueFinalMessage ? "continue_final_message" : "messages";
    return bad(param, absl::StrCat(param, ": ", text.status().message()));
  }
  if (messages_out != nullptr) *messages_out = std::move(messages);
  return *std::move(text);
}

std::string api_error_json(const ApiError& e) {
  json j = {{"error",
             {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json() : json(e.param)},
              // OpenAI's code is a string or null, never the HTTP status.
              {"code", e.code.empty() ? json() : json(e.code)}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ApiError api_error_from_status(const absl::Status& status) {
  ApiError e;
  e.message = std::string(status.message());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: {
      e.status = 400;
      const size_t colon = e.message.find(": ");
      if (colon != std::string::npos && colon < 64 &&
          e.message.find_first_of(" \t") > colon) {
        e.param = e.message.substr(0, colon);
      }
      if (e.message.find("context length") != std::string::npos || e.message.find("KV blocks") != std::string::npos) {
        e.code = "context_length_exceeded";
      }
      break;
    }
    case absl::StatusCode::kNotFound:
      e.status = 404;
      e.type = "not_found_error";
      break;
    case absl::StatusCode::kResourceExhausted:
      e.status = 429;
      e.type = "rate_limit_error";
      break;
    case absl::StatusCode::kUnavailable:
      e.status = 503;
      e.type = "service_unavailable";
      break;
    case absl::StatusCode::kUnauthenticated:
      e.status = 401;
      e.type = "authentication_error";
      break;
    default:
      e.status = 500;
      e.type = "internal_error";
  }
  return e;
}

std::variant<json, ApiError> parse_json_body(std::string_view body) {
  absl::StatusOr<json> parsed = parse_json_bounded<json>(body, "request body", request_json_limits());
  if (!parsed.ok()) return bad("", std::string(parsed.status().message()));
  json& j = *parsed;
  if (!j.is_object()) return bad("", absl::StrCat("request body: expected a JSON object, got ", j.type_name()));
  return j;
}

std::optional<ApiError> check_model(const json& body, const ServedModel& model) {
  const json* m = json_member(body, "model");
  if (m == nullptr) return std::nullopt;
  if (!m->is_string()) return bad("model", absl::StrCat("model: expected a string, got ", m->type_name()));
  if (m->get_ref<const std::string&>() != model.name) {
    ApiError e;
    e.status = 404;
    e.type = "not_found_error";
    e.param = "model";
    e.code = "model_not_found";
    e.message = absl::StrCat("The model `", m->get<std::string>(), "` does not exist; this server serves `",
                             model.name, "`");
    return e;
  }
  return std::nullopt;
}

std::optional<nlohmann::ordered_json> tools_in_order(std::string_view body) {
  if (body.find("\"tools\"") == std::string_view::npos) return std::nullopt;
  auto parsed = parse_json_bounded<nlohmann::ordered_json>(body, "request body", request_json_limits());
  if (!parsed.ok() || !parsed->is_object() || !parsed->contains("tools")) return std::nullopt;
  return (*parsed)["tools"];
}

std::variant<GenerationRequest, ApiError> parse_generation_request(const json& body, ApiKind kind,
                                                                   const ServedModel& model,
                                                                   const nlohmann::ordered_json* tools_in_order) {
  if (auto err = check_model(body, model)) return *err;
  if (auto err = unsupported_field(body, kind == ApiKind::kChat)) return bad(err->param, err->message);
  // weft batch writes token ids on request; serve's responses do not carry them yet.
  if (const json* t = json_member(body, "return_token_ids"); t != nullptr && *t != false) {
    return bad("return_token_ids", "return_token_ids: not supported by weft serve yet");
  }
  GenerationRequest out;
  out.kind = kind;
  if (const json* s = json_member(body, "stream")) {
    if (!s->is_boolean()) return bad("stream", absl::StrCat("stream: expected a boolean, got ", s->type_name()));
    out.stream = s->get<bool>();
  }
  if (const json* so = json_member(body, "stream_options")) {
    if (!out.stream) return bad("stream_options", "stream_options: only allowed when stream is true");
    if (!so->is_object()) return bad("stream_options", "stream_options: expected an object");
    if (const json* iu = json_member(*so, "include_usage")) {
      if (!iu->is_boolean()) return bad("stream_options", "stream_options.include_usage: expected a boolean");
      out.include_usage = iu->get<bool>();
    }
  }

  // The chat API's logprobs (boolean) + top_logprobs (integer) become the integer logprobs that
  // sampling_params_from_json reads.
  json sampling = body;
  if (kind == ApiKind::kChat) {
    sampling.erase("logprobs");
    sampling.erase("top_logprobs");
    const json* lp = json_member(body, "logprobs");
    const json* top = json_member(body, "top_logprobs");
    if (lp != nullptr && !lp->is_boolean()) {
      return bad("logprobs", absl::StrCat("logprobs: expected a boolean, got ", lp->type_name()));
    }
    const bool want = lp != nullptr && lp->get<bool>();
    if (top != nullptr && !want) return bad("top_logprobs", "top_logprobs: requires logprobs to be true");
    if (want) {
      sampling["logprobs"] = top != nullptr ? *top : json(0);
      if (top != nullptr && !top->is_number_integer()) {
        return bad("top_logprobs", absl::StrCat("top_logprobs: expected an integer, got ", top->type_name()));
      }
    }
  }
  auto params = sampling_params_from_json(sampling, model.sampling_defaults);
  if (!params.ok()) {
    ApiError e = api_error_from_status(params.status());
    if (kind == ApiKind::kChat && e.param == "logprobs") e.param = "top_logprobs";
    return e;
  }
  if (params->logprobs && (*params->logprobs < 0 || *params->logprobs > SamplingParams::kMaxLogprobs)) {
    const char* name = kind == ApiKind::kChat ? "top_logprobs" : "logprobs";
    return bad(name, absl::StrCat(name, ": must be in [0, ", SamplingParams::kMaxLogprobs, "], got ", *params->logprobs));
  }
  out.logprobs = params->logprobs.has_value();
  out.top_logprobs = params->logprobs.value_or(0);
  if (auto err = prompt_logprobs_field(body, out.prompt_logprobs)) return bad(err->param, err->message);
  if (out.prompt_logprobs && out.stream) {
    return bad("prompt_logprobs", "prompt_logprobs: not supported with stream (as vLLM); use echo with logprobs");
  }
  int priority = 0;
  if (const json* pr = json_member(body, "priority")) {
    if (!pr->is_number_integer() || (pr->is_number_unsigned() && pr->get<uint64_t>() > (1u << 30)) ||
        pr->get<int64_t>() < -(1 << 30) || pr->get<int64_t>() > (1 << 30)) {
      return bad("priority", "priority: expected an integer (lower runs first)");
    }
    priority = static_cast<int>(pr->get<int64_t>());
  }

  // The prompts: their ids and, with echo, their text.
  std::vector<std::vector<int32_t>> prompt_ids;
  std::vector<std::string> echo;
  bool want_echo = false;
  ToolRequest tools;
  if (kind == ApiKind::kChat) {
    ChatOptions options;
    if (auto err = chat_options(body, options)) return bad(err->param, err->message);
    auto tool_fields = tool_request_from_body(body, tools_in_order);
    if (!tool_fields.ok()) return field_error(tool_fields.status());
    tools = *std::move(tool_fields);
    if (auto err = tool_parsing(tools, model, *params, out)) return *err;
    nlohmann::ordered_json messages;
    prompt_ids.emplace_back();
    if (auto err = chat_prompt(body, model, prompt_ids[0], options, tools, &messages)) return *err;
    out.role = chat_reply_role(messages, options);
    want_echo = options.echo;
    echo.push_back(options.echo ? chat_echo_text(messages, out.role) : std::string());
  } else {
    if (const json* e = json_member(body, "echo")) {
      if (!e->is_boolean()) return bad("echo", absl::StrCat("echo: expected a boolean, got ", e->type_name()));
      want_echo = e->get<bool>();
    }
    if (auto err = completion_prompts(body, model, want_echo, prompt_ids, echo)) return *err;
  }

  const bool has_max = json_member(body, "max_tokens") != nullptr || json_member(body, "max_completion_tokens") != nullptr;
  const char* max_param = json_member(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  const char* prompt_param = kind == ApiKind::kChat ? "messages" : "prompt";
  const int requested_max = params->max_tokens;
  if (requested_max < 0 || (requested_max == 0 && !(want_echo && has_max))) {
    return bad(max_param, absl::StrCat("max_tokens: must be at least 1 (or 0 with echo), got ", requested_max));
  }
  // The engine computes prompt logprobs for echo + logprobs (completions) and prompt_logprobs.
  out.echo_logprobs = kind == ApiKind::kCompletion && want_echo && out.logprobs;
  std::optional<int> engine_prompt_logprobs = out.prompt_logprobs;
  if (out.echo_logprobs) engine_prompt_logprobs = std::max(engine_prompt_logprobs.value_or(0), out.top_logprobs);
  out.generate = requested_max > 0 || !has_max || engine_prompt_logprobs.has_value();
  // The output constraint, compiled once for every prompt and choice.
  std::shared_ptr<const TokenConstraintSource> constraint;
  auto tool_constraint = chat_tool_constraint(tools, model, out.tool_calls);
  if (auto* e = std::get_if<ApiError>(&tool_constraint)) return *e;
  constraint = std::get<std::shared_ptr<const TokenConstraintSource>>(std::move(tool_constraint));
  if (const char* asked = constraint_field(body)) {
    if (constraint != nullptr) {
      return bad(asked, absl::StrCat(asked, ": cannot be combined with tool_choice \"required\", a named function or "
                                            "strict functions, whose grammar already shapes the reply"));
    }
#ifdef WEFT_HAVE_CONSTRAIN
    if (model.grammars == nullptr) return bad(asked, absl::StrCat(asked, ": this server has no grammar compiler"));
    auto compiled = request_constraint(body, *model.grammars);
    if (!compiled.ok()) return api_error_from_status(compiled.status());
    constraint = *std::move(compiled);
#else
    return bad(asked, absl::StrCat(asked, ": this weft was built without constrained output (WEFT_CONSTRAIN=OFF)"));
#endif
  }
  std::shared_ptr<const BannedPhraseSet> bad_words;
  if (auto err = bad_words_field(body, bad_words)) return bad(err->param, err->message);
  const auto banned_phrases = banned_phrase_lists(model.banned_phrases, bad_words);
  for (size_t i = 0; i < prompt_ids.size(); ++i) {
    GenerationPrompt prompt;
    prompt.engine_request.params = *params;
    prompt.engine_request.constraint = constraint;
    prompt.engine_request.banned_phrases = banned_phrases;
    prompt.engine_request.priority = priority;
    prompt.engine_request.prompt_ids = std::move(prompt_ids[i]);
    prompt.engine_request.prompt_logprobs = engine_prompt_logprobs;
    prompt.echo = std::move(echo[i]);
    const int64_t prompt_len = static_cast<int64_t>(prompt.engine_request.prompt_ids.size());
    const std::string which = prompt_ids.size() > 1 ? absl::StrCat(" (prompt[", i, "])") : std::string();
    int& max_tokens = prompt.engine_request.params.max_tokens;
    if (out.generate && max_tokens > 0) {
      if (prompt_len >= model.max_model_len) {
        return bad(prompt_param,
                   absl::StrCat("This model's maximum context length is ", model.max_model_len,
                                " tokens. However, your prompt", which, " has ", prompt_len,
                                " tokens, which leaves no room for output. Please shorten the prompt."),
                   "context_length_exceeded");
      }
      if (kind == ApiKind::kChat && !has_max) max_tokens = static_cast<int>(model.max_model_len - prompt_len);
    }
    if (prompt_len + max_tokens > model.max_model_len) {
      return bad("max_tokens",
                 absl::StrCat("This model's maximum context length is ", model.max_model_len,
                              " tokens. However, you requested ", prompt_len + max_tokens, " tokens", which, " (",
                              prompt_len, " in the prompt, ", max_tokens,
                              " for the completion). Please reduce the prompt or max_tokens."),
                 "context_length_exceeded");
    }
    if (out.generate) {
      // max_tokens 0 (prompt logprobs only) is the engine's to allow; the other fields are checked here.
      SamplingParams checked = prompt.engine_request.params;
      checked.max_tokens = std::max(checked.max_tokens, 1);
      if (auto v = checked.validate(model.vocab_size); !v.ok()) return api_error_from_status(v);
    }
    out.prompts.push_back(std::move(prompt));
  }
  return out;
}

std::variant<std::vector<int32_t>, ApiError> tokenize_request(const json& body, const ServedModel& model,
                                                              const nlohmann::ordered_json* tools_in_order) {
  if (auto err = check_model(body, model)) return *err;
  std::vector<int32_t> ids;
  if (json_member(body, "messages") != nullptr) {
    ChatOptions options;
    if (auto err = chat_options(body, options)) return bad(err->param, err->message);
    auto tools = tool_request_from_body(body, tools_in_order);
    if (!tools.ok()) return field_error(tools.status());
    if (auto err = chat_prompt(body, model, ids, options, *tools)) return *err;
    return ids;
  }
  const json* p = json_member(body, "prompt");
  if (p == nullptr || !p->is_string()) return bad("prompt", "prompt: expected a string (or give messages)");
  bool add_special = true;
  if (const json* a = json_member(body, "add_special_tokens")) {
    if (!a->is_boolean()) return bad("add_special_tokens", "add_special_tokens: expected a boolean");
    add_special = a->get<bool>();
  }
  auto encoded = model.tokenizer->encode(p->get_ref<const std::string&>(), add_special);
  if (!encoded.ok()) return bad("prompt", absl::StrCat("prompt: ", encoded.status().message()));
  return *encoded;
}

std::variant<std::string, ApiError> detokenize_request(const json& body, const ServedModel& model) {
  if (auto err = check_model(body, model)) return *err;
  const json* t = json_member(body, "tokens");
  if (t == nullptr || !t->is_array()) return bad("tokens", "tokens: expected an array of token ids");
  std::vector<int32_t> ids;
  if (auto err = token_ids_from(*t, "tokens", model.vocab_size, ids)) return *err;
  bool skip = true;
  if (const json* s = json_member(body, "skip_special_tokens")) {
    if (!s->is_boolean()) return bad("skip_special_tokens", "skip_special_tokens: expected a boolean");
    skip = s->get<bool>();
  }
  return model.tokenizer->decode(ids, skip);
}

}  // namespace weft
