// Fuzzes what `weft serve` does with the bytes of a connection before the engine sees them:
// parse_http_request on the raw bytes, then, for a complete request, the body of the endpoint its
// target names — parse_json_body and parse_generation_request (completions, chat), or
// tokenize_request / detokenize_request — with the real Qwen3 tokenizer and chat template.
// Properties: a complete request never claims more bytes than it was given; every rejection
// carries a 4xx/5xx status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "serving/http_parser.h"
#include "serving/openai_request.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace {

const weft::ServedModel& served_model() {
  static const weft::ServedModel model = [] {
    weft::ServedModel m;
    const char* env = std::getenv("WEFT_SOURCE_DIR");
    const std::string source = env != nullptr ? env : WEFT_SOURCE_DIR;
    auto tokenizer = weft::Tokenizer::load(source + "/tests/tokenizer_data/fixtures/qwen3");
    if (!tokenizer.ok()) std::abort();
    m.name = "model";
    m.max_model_len = 4096;
    m.tokenizer = *tokenizer;
    m.vocab_size = (*tokenizer)->vocab_size();
    auto tmpl = weft::ChatTemplate::parse((*tokenizer)->chat_template());
    if (!tmpl.ok()) std::abort();
    m.chat_template = std::make_shared<weft::ChatTemplate>(std::move(*tmpl));
    m.tool_call_format = weft::ToolCallFormat::kHermes;  // bodies with tools get parsed, not refused
    return m;
  }();
  return model;
}

template <typename Variant>
void check_error_status(const Variant& v) {
  if (const auto* error = std::get_if<weft::ApiError>(&v)) {
    if (error->status < 400 || error->status > 599) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  weft::HttpLimits limits;
  limits.max_body_bytes = 64 * 1024;
  const weft::HttpParseResult parsed = weft::parse_http_request(bytes, limits);
  if (parsed.state == weft::HttpParseResult::State::kError &&
      (parsed.error_status < 400 || parsed.error_status > 599)) {
    std::abort();
  }
  if (parsed.state != weft::HttpParseResult::State::kComplete) return 0;
  if (parsed.consumed == 0 || parsed.consumed > size) std::abort();

  auto body = weft::parse_json_body(parsed.request.body);
  check_error_status(body);
  const auto* json = std::get_if<nlohmann::json>(&body);
  if (json == nullptr) return 0;
  const weft::ServedModel& model = served_model();
  const std::string& target = parsed.request.target;
  const auto tools = weft::tools_in_order(parsed.request.body);
  const nlohmann::ordered_json* tools_in_order = tools ? &*tools : nullptr;
  if (target.find("/tokenize") != std::string::npos) {
    check_error_status(weft::tokenize_request(*json, model, tools_in_order));
  } else if (target.find("/detokenize") != std::string::npos) {
    check_error_status(weft::detokenize_request(*json, model));
  } else {
    const auto kind = target.find("chat") != std::string::npos ? weft::ApiKind::kChat
                                                               : weft::ApiKind::kCompletion;
    check_error_status(weft::parse_generation_request(*json, kind, model, tools_in_order));
  }
  return 0;
}
