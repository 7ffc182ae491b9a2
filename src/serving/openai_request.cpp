#include "serving/openai_request.h"

#include "absl/strings/str_cat.h"
#include "core/bounded_json.h"
#include "serving/openai_fields.h"
#include "sampling/sampling_params_json.h"

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

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
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

std::optional<ApiError> completion_prompt(const json& body, const ServedModel& model, std::vector<int32_t>& ids) {
  const json* p = field(body, "prompt");
  if (p == nullptr) return bad("prompt", "prompt: required");
  const int64_t vocab = model.vocab_size;
  const json* prompt = p;
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    if (p->size() != 1) return bad("prompt", "prompt: batches of several prompts are not supported; send one per request");
    prompt = &p->front();
  }
  if (prompt->is_string()) {
    auto encoded = model.tokenizer->encode(prompt->get_ref<const std::string&>(), /*add_special_tokens=*/true);
    if (!encoded.ok()) return bad("prompt", absl::StrCat("prompt: ", encoded.status().message()));
    ids = std::move(*encoded);
  } else if (prompt->is_array()) {
    if (auto err = token_ids_from(*prompt, "prompt", vocab, ids)) return err;
  } else {
    return bad("prompt", absl::StrCat("prompt: expected a string or an array of token ids, got ", prompt->type_name()));
  }
  if (ids.empty()) return bad("prompt", "prompt: must contain at least one token");
  return std::nullopt;
}

std::optional<ApiError> chat_prompt(const json& body, const ServedModel& model, std::vector<int32_t>& ids) {
  const json* m = field(body, "messages");
  nlohmann::ordered_json messages;
  if (auto err = chat_messages_for_template(m != nullptr ? *m : json(), messages)) return bad(err->param, err->message);
  if (!model.chat_template) return bad("messages", "messages: the model has no chat template (chat_template.jinja, chat_template.json or tokenizer_config.json); give one with --chat-template FILE");
  nlohmann::ordered_json extra;
  if (const json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) return bad("chat_template_kwargs", "chat_template_kwargs: expected an object");
    extra = nlohmann::ordered_json::parse(kw->dump(-1, ' ', false, json::error_handler_t::replace));
  }
  const Tokenizer& tok = *model.tokenizer;
  auto text = render_chat(*model.chat_template, messages, /*add_generation_prompt=*/true, tok.bos_token().value_or(""),
                          tok.eos_token().value_or(""), extra);
  if (!text.ok()) return bad("messages", absl::StrCat("messages: ", text.status().message()));
  auto encoded = tok.encode(*text, /*add_special_tokens=*/false);
  if (!encoded.ok()) return bad("messages", absl::StrCat("messages: ", encoded.status().message()));
  ids = std::move(*encoded);
  return std::nullopt;
}

}  // namespace

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
  const json* m = field(body, "model");
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

std::variant<GenerationRequest, ApiError> parse_generation_request(const json& body, ApiKind kind,
                                                                   const ServedModel& model) {
  if (auto err = check_model(body, model)) return *err;
  if (auto err = unsupported_field(body, kind == ApiKind::kChat)) return bad(err->param, err->message);
  GenerationRequest out;
  out.kind = kind;
  if (const json* s = field(body, "stream")) {
    if (!s->is_boolean()) return bad("stream", absl::StrCat("stream: expected a boolean, got ", s->type_name()));
    out.stream = s->get<bool>();
  }
  if (const json* so = field(body, "stream_options")) {
    if (!out.stream) return bad("stream_options", "stream_options: only allowed when stream is true");
    if (!so->is_object()) return bad("stream_options", "stream_options: expected an object");
    if (const json* iu = field(*so, "include_usage")) {
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
    const json* lp = field(body, "logprobs");
    const json* top = field(body, "top_logprobs");
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
  out.engine_request.params = std::move(*params);
  if (out.engine_request.params.logprobs && (*out.engine_request.params.logprobs < 0 ||
                                             *out.engine_request.params.logprobs > SamplingParams::kMaxLogprobs)) {
    const char* name = kind == ApiKind::kChat ? "top_logprobs" : "logprobs";
    return bad(name, absl::StrCat(name, ": must be in [0, ", SamplingParams::kMaxLogprobs, "], got ",
                                  *out.engine_request.params.logprobs));
  }
  out.logprobs = out.engine_request.params.logprobs.has_value();

  std::vector<int32_t>& ids = out.engine_request.prompt_ids;
  if (auto err = kind == ApiKind::kChat ? chat_prompt(body, model, ids) : completion_prompt(body, model, ids)) return *err;

  const int64_t prompt_len = static_cast<int64_t>(ids.size());
  const char* prompt_param = kind == ApiKind::kChat ? "messages" : "prompt";
  if (prompt_len >= model.max_model_len) {
    return bad(prompt_param,
               absl::StrCat("This model's maximum context length is ", model.max_model_len,
                            " tokens. However, your prompt has ", prompt_len,
                            " tokens, which leaves no room for output. Please shorten the prompt."),
               "context_length_exceeded");
  }
  const bool has_max = field(body, "max_tokens") != nullptr || field(body, "max_completion_tokens") != nullptr;
  int& max_tokens = out.engine_request.params.max_tokens;
  if (kind == ApiKind::kChat && !has_max) max_tokens = static_cast<int>(model.max_model_len - prompt_len);
  if (max_tokens < 1) {
    return bad(field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
               absl::StrCat("max_tokens: must be at least 1, got ", max_tokens));
  }
  if (prompt_len + max_tokens > model.max_model_len) {
    return bad("max_tokens",
               absl::StrCat("This model's maximum context length is ", model.max_model_len,
                            " tokens. However, you requested ", prompt_len + max_tokens, " tokens (", prompt_len,
                            " in the prompt, ", max_tokens, " for the completion). Please reduce the prompt or max_tokens."),
               "context_length_exceeded");
  }
  if (auto v = out.engine_request.params.validate(model.vocab_size); !v.ok()) {
    return api_error_from_status(v);
  }
  return out;
}

std::variant<std::vector<int32_t>, ApiError> tokenize_request(const json& body, const ServedModel& model) {
  if (auto err = check_model(body, model)) return *err;
  std::vector<int32_t> ids;
  if (field(body, "messages") != nullptr) {
    if (auto err = chat_prompt(body, model, ids)) return *err;
    return ids;
  }
  const json* p = field(body, "prompt");
  if (p == nullptr || !p->is_string()) return bad("prompt", "prompt: expected a string (or give messages)");
  bool add_special = true;
  if (const json* a = field(body, "add_special_tokens")) {
    if (!a->is_boolean()) return bad("add_special_tokens", "add_special_tokens: expected a boolean");
    add_special = a->get<bool>();
  }
  auto encoded = model.tokenizer->encode(p->get_ref<const std::string&>(), add_special);
  if (!encoded.ok()) return bad("prompt", absl::StrCat("prompt: ", encoded.status().message()));
  return *encoded;
}

std::variant<std::string, ApiError> detokenize_request(const json& body, const ServedModel& model) {
  if (auto err = check_model(body, model)) return *err;
  const json* t = field(body, "tokens");
  if (t == nullptr || !t->is_array()) return bad("tokens", "tokens: expected an array of token ids");
  std::vector<int32_t> ids;
  if (auto err = token_ids_from(*t, "tokens", model.vocab_size, ids)) return *err;
  bool skip = true;
  if (const json* s = field(body, "skip_special_tokens")) {
    if (!s->is_boolean()) return bad("skip_special_tokens", "skip_special_tokens: expected a boolean");
    skip = s->get<bool>();
  }
  return model.tokenizer->decode(ids, skip);
}

}  // namespace weft
