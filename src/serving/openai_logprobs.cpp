#include "serving/openai_logprobs.h"

namespace weft {
namespace {

using nlohmann::json;

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

json openai_logprobs(bool chat, std::span<const int32_t> token_ids, std::span<const SampleResult> samples,
                     const std::function<std::string(int32_t)>& token_text, int64_t text_offset) {
  const size_t n = std::min(token_ids.size(), samples.size());
  if (chat) {
    json content = json::array();
    for (size_t i = 0; i < n; ++i) {
      const std::string tok = token_text(token_ids[i]);
      json top = json::array();
      for (const auto& [id, lp] : samples[i].top_logprobs) {
        const std::string t = token_text(id);
        top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes_of(t)}});
      }
      content.push_back({{"token", tok}, {"logprob", samples[i].logprob}, {"bytes", bytes_of(tok)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json l = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
            {"text_offset", json::array()}};
  for (size_t i = 0; i < n; ++i) {
    json top = json::object();
    for (const auto& [id, lp] : samples[i].top_logprobs) top[token_text(id)] = lp;
    const std::string tok = token_text(token_ids[i]);
    l["tokens"].push_back(tok);
    l["token_logprobs"].push_back(samples[i].logprob);
    l["top_logprobs"].push_back(top);
    l["text_offset"].push_back(text_offset);
    text_offset += utf8_code_points(tok);
  }
  return l;
}

void append_openai_logprobs(json& into, const json& piece) {
  if (into.is_null()) {
    into = piece;
    return;
  }
  for (auto& [key, value] : piece.items()) {
    for (const json& v : value) into[key].push_back(v);
  }
}

int64_t utf8_code_points(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

json empty_openai_logprobs(bool chat) { return chat ? json{{"content", json::array()}} : json(); }

}  // namespace weft
