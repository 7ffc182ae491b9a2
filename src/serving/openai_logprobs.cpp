#include "serving/openai_logprobs.h"

#include <algorithm>

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

namespace {

// vLLM's clamp: -inf is not JSON.
double finite_logprob(float lp) { return std::max<double>(lp, -9999.0); }

}  // namespace

json openai_prompt_logprobs(const PromptLogprobs& prompt, int top,
                            const std::function<std::string(int32_t)>& token_text, int64_t* end_offset) {
  json l = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
            {"text_offset", json::array()}};
  int64_t offset = 0;
  for (size_t i = 0; i < prompt.size(); ++i) {
    const PromptLogprob& p = prompt[i];
    const std::string tok = token_text(p.token);
    l["tokens"].push_back(tok);
    if (i == 0) {
      l["token_logprobs"].push_back(nullptr);
      l["top_logprobs"].push_back(nullptr);
    } else {
      l["token_logprobs"].push_back(finite_logprob(p.logprob));
      json alternatives = json::object();
      for (size_t j = 0; j < p.top_logprobs.size() && static_cast<int>(j) < top; ++j) {
        alternatives[token_text(p.top_logprobs[j].first)] = finite_logprob(p.top_logprobs[j].second);
      }
      l["top_logprobs"].push_back(std::move(alternatives));
    }
    l["text_offset"].push_back(offset);
    offset += utf8_code_points(tok);
  }
  if (end_offset != nullptr) *end_offset = offset;
  return l;
}

json vllm_prompt_logprobs(const PromptLogprobs& prompt, int top,
                          const std::function<std::string(int32_t)>& token_text) {
  json out = json::array();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (i == 0) {
      out.push_back(nullptr);
      continue;
    }
    const PromptLogprob& p = prompt[i];
    json entry = json::object();
    entry[std::to_string(p.token)] = {
        {"logprob", finite_logprob(p.logprob)}, {"rank", p.rank}, {"decoded_token", token_text(p.token)}};
    for (size_t j = 0; j < p.top_logprobs.size() && static_cast<int>(j) < top; ++j) {
      const auto& [id, lp] = p.top_logprobs[j];
      const std::string key = std::to_string(id);
      if (entry.contains(key)) continue;
      entry[key] = {{"logprob", finite_logprob(lp)}, {"rank", static_cast<int64_t>(j) + 1},
                    {"decoded_token", token_text(id)}};
    }
    out.push_back(std::move(entry));
  }
  return out;
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
