#include "tokenizer/transformers_compat.h"

#include <string>

namespace weft {
namespace {

constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

bool config_bool(const nlohmann::json& config, const char* key, bool fallback) {
  const auto it = config.find(key);
  return (it != config.end() && it->is_boolean()) ? it->get<bool>() : fallback;
}

}  // namespace

absl::Status apply_transformers_overrides(const nlohmann::json& config, std::string_view raw_text,
                                          nlohmann::json& tj) {
  if (!config.is_object()) return absl::OkStatus();
  const auto cit = config.find("tokenizer_class");
  if (cit == config.end() || !cit->is_string()) return absl::OkStatus();
  std::string cls = cit->get<std::string>();
  if (cls.size() > 4 && cls.compare(cls.size() - 4, 4, "Fast") == 0) cls.resize(cls.size() - 4);
  if (!tj.contains("model") || !tj["model"].is_object()) return absl::OkStatus();
  nlohmann::json& model = tj["model"];

  if (cls == "LlamaTokenizer" && raw_text.find("\"ByteLevel\"") == std::string_view::npos) {
    const bool add_prefix_space = config_bool(config, "add_prefix_space", true);
    const bool legacy = config_bool(config, "legacy", false);
    const char* scheme = add_prefix_space ? (legacy ? "always" : "first") : "never";
    tj["normalizer"] = nullptr;
    tj["pre_tokenizer"] = {{"type", "Metaspace"},
                           {"replacement", "\xE2\x96\x81"},
                           {"prepend_scheme", scheme},
                           {"split", false}};
    nlohmann::json decoders = nlohmann::json::array();
    decoders.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (add_prefix_space)
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    tj["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    model["unk_token"] = nullptr;
    model["fuse_unk"] = true;
    model["byte_fallback"] = true;
    model["ignore_merges"] = false;
    model["continuing_subword_prefix"] = nullptr;
    model["end_of_word_suffix"] = nullptr;
  } else if (cls == "Qwen2Tokenizer") {
    const bool add_prefix_space = config_bool(config, "add_prefix_space", false);
    tj["normalizer"] = {{"type", "NFC"}};
    nlohmann::json pre = nlohmann::json::array();
    pre.push_back({{"type", "Split"},
                   {"pattern", {{"Regex", kQwen2Regex}}},
                   {"behavior", "Isolated"},
                   {"invert", false}});
    pre.push_back(
        {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"use_regex", false}});
    tj["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", pre}};
    tj["decoder"] = {{"type", "ByteLevel"}};
    model["unk_token"] = nullptr;
    model["fuse_unk"] = false;
    model["byte_fallback"] = false;
    model["ignore_merges"] = false;
    model["continuing_subword_prefix"] = "";
    model["end_of_word_suffix"] = "";
  }
  return absl::OkStatus();
}

}  // namespace weft
