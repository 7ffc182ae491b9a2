#include "model/gguf_model_files.h"

#include <array>
#include <map>
#include <set>
#include "absl/strings/string_view.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "model/sentencepiece_merges.h"

namespace weft {
namespace {

using nlohmann::json;

absl::Status metadata_error(const GgufFile& file, const std::string& key, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(file.path().string(), ": metadata '", key, "': ", what));
}

absl::StatusOr<int64_t> integer_key(const GgufFile& file, const std::string& key,
                                    std::optional<int64_t> fallback = std::nullopt) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return metadata_error(file, key, "missing (needed to build the model's configuration)");
  }
  if (!v->is_integer()) {
    return metadata_error(file, key, absl::StrCat("expected an integer, got ",
                                                  gguf_type_name(v->type)));
  }
  return v->integer;
}

absl::StatusOr<double> number_key(const GgufFile& file, const std::string& key,
                                  std::optional<double> fallback = std::nullopt) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return metadata_error(file, key, "missing (needed to build the model's configuration)");
  }
  if (v->is_float()) return v->real;
  if (v->is_integer()) return static_cast<double>(v->integer);
  return metadata_error(file, key, absl::StrCat("expected a number, got ",
                                                gguf_type_name(v->type)));
}

std::string string_key(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  return v != nullptr && v->type == GgufType::kString ? v->text : "";
}

struct ArchitectureInfo {
  const char* model_type;
  const char* hf_class;
};

const std::map<std::string, ArchitectureInfo>& architectures() {
  static const auto* kArchitectures = new std::map<std::string, ArchitectureInfo>{
      {"llama", {"llama", "LlamaForCausalLM"}},
      {"qwen2", {"qwen2", "Qwen2ForCausalLM"}},
      {"qwen3", {"qwen3", "Qwen3ForCausalLM"}},
  };
  return *kArchitectures;
}

// Keys under "<arch>." that weft reads (or that cannot change the computation). Any other key
// there describes something weft would ignore, so it is refused by name.
const std::set<std::string>& known_architecture_keys() {
  static const auto* kKeys = new std::set<std::string>{
      "block_count", "context_length", "embedding_length", "feed_forward_length",
      "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon",
      "attention.key_length", "attention.value_length", "rope.freq_base", "rope.dimension_count",
      "vocab_size",
  };
  return *kKeys;
}

absl::StatusOr<std::string> architecture_of(const GgufFile& file) {
  const std::string arch = string_key(file, "general.architecture");
  if (arch.empty()) return metadata_error(file, "general.architecture", "missing");
  if (!architectures().count(arch)) {
    std::string supported;
    for (const auto& [name, info] : architectures()) absl::StrAppend(&supported, supported.empty() ? "" : ", ", name);
    return metadata_error(file, "general.architecture",
                          absl::StrCat("'", arch, "' is not supported (supported: ", supported,
                                       ")"));
  }
  return arch;
}

// GPT-2's byte-to-character table (bytes_to_unicode): printable bytes stand for themselves, the
// others for the code points from 256 up, in byte order.
const std::array<char32_t, 256>& byte_alphabet() {
  static const std::array<char32_t, 256> kTable = [] {
    std::array<char32_t, 256> table{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      table[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return table;
  }();
  return kTable;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Decodes UTF-8; false on malformed input.
bool decode_utf8(absl::string_view s, std::vector<char32_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    char32_t c = len == 1 ? b : b & (0x7F >> len);
    for (int k = 1; k < len; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(c);
    i += len;
  }
  return true;
}

// A vocabulary entry as the byte-level model spells it: tokens already written in the byte
// alphabet stay; others (llama.cpp writes some special tokens in plain UTF-8) are re-spelled byte
// by byte, as transformers' byte_level_tokenizer does.
bool in_byte_alphabet(const std::string& token) {
  static const std::set<char32_t> kAlphabet(byte_alphabet().begin(), byte_alphabet().end());
  std::vector<char32_t> chars;
  if (!decode_utf8(token, chars)) return false;
  for (char32_t c : chars)
    if (!kAlphabet.count(c)) return false;
  return true;
}

std::string respell_in_byte_alphabet(const std::string& token) {
  std::string out;
  for (unsigned char b : token) append_utf8(out, byte_alphabet()[b]);
  return out;
}

// Pre-tokenizer split patterns by tokenizer.ggml.pre, as transformers maps them
// (integrations/gguf/gguf_tokenizer_mapping.py); other values use GPT-2's ByteLevel split.
const char* split_pattern(const std::string& pre) {
  static constexpr const char* kLlama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr const char* kQwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr const char* kTekken =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static constexpr const char* kGpt4o =
      R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  static const auto* kByPre = new std::map<std::string, const char*>{
      {"llama3", kLlama3},  {"llama-v3", kLlama3},    {"llama-bpe", kLlama3},
      {"falcon3", kLlama3}, {"falcon-h1", kLlama3},   {"pixtral", kLlama3},
      {"dbrx", kLlama3},    {"smaug-bpe", kLlama3},   {"tekken", kTekken},
      {"qwen2", kQwen2},    {"deepseek-r1-qwen", kQwen2}, {"megrez", kQwen2},
      {"gpt-4o", kGpt4o},   {"llama4", kGpt4o},
  };
  auto it = kByPre->find(pre);
  return it == kByPre->end() ? nullptr : it->second;
}

absl::StatusOr<const GgufValue*> array_key(const GgufFile& file, const std::string& key,
                                           GgufType element_type, bool required) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) {
    if (!required) return nullptr;
    return metadata_error(file, key, "missing (needed to build the tokenizer)");
  }
  const bool integer_elements = element_type == GgufType::kI32;
  const bool float_elements = element_type == GgufType::kF32;
  const bool ok = v->type == GgufType::kArray &&
                  (integer_elements ? GgufValue{v->element_type}.is_integer()
                   : float_elements ? GgufValue{v->element_type}.is_float()
                                    : v->element_type == element_type);
  if (!ok) {
    return metadata_error(file, key, absl::StrCat("expected an array of ",
                                                  gguf_type_name(element_type)));
  }
  return v;
}

constexpr int kTokenTypeUnknown = 2;
constexpr int kTokenTypeControl = 3;
constexpr int kTokenTypeUserDefined = 4;

// A tokenizer.json document: no normalizer, no truncation or padding (what every GGUF
// vocabulary builds on).
json tokenizer_json(json added, json pre_tokenizer, json post_processor, json decoder, json model) {
  return json{{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", std::move(added)},
              {"normalizer", nullptr},
              {"pre_tokenizer", std::move(pre_tokenizer)},
              {"post_processor", std::move(post_processor)},
              {"decoder", std::move(decoder)},
              {"model", std::move(model)}};
}

json added_token(size_t id, const std::string& content, bool special) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// The file's token types, checked against its token count (absent: every token normal).
absl::StatusOr<const GgufValue*> token_types(const GgufFile& file, const GgufValue& tokens) {
  WEFT_ASSIGN_OR_RETURN(const GgufValue* types,
                        array_key(file, "tokenizer.ggml.token_type", GgufType::kI32, false));
  if (types != nullptr && types->items.size() != tokens.items.size()) {
    return metadata_error(file, "tokenizer.ggml.token_type",
                          absl::StrCat(types->items.size(), " entries for ", tokens.items.size(),
                                       " tokens"));
  }
  return types;
}

bool flag_or(const GgufFile& file, const char* key, bool fallback) {
  const GgufValue* v = file.find(key);
  return v != nullptr && v->type == GgufType::kBool ? v->integer != 0 : fallback;
}

// A sentencepiece vocabulary (tokenizer.ggml.model "llama") as transformers builds it from a
// GGUF file (gguf_tokenizer_mapping.sentencepiece_tokenizer -> LlamaTokenizer): BPE over the
// tokens as the file spells them, with byte fallback and fused unknowns; merges from the file or
// derived from the scores (sentencepiece_merges.h); Metaspace("▁", prepend first, no split);
// the <s>/</s> the flags ask for (BOS by default, as llama.cpp and transformers add it); the
// unknown and control tokens special, the user-defined ones whole but not special.
absl::StatusOr<json> sentencepiece_tokenizer_json(const GgufFile& file, const GgufValue& tokens) {
  WEFT_ASSIGN_OR_RETURN(const GgufValue* types, token_types(file, tokens));
  WEFT_ASSIGN_OR_RETURN(const GgufValue* merges,
                        array_key(file, "tokenizer.ggml.merges", GgufType::kString, false));
  std::vector<std::string> texts;
  texts.reserve(tokens.items.size());
  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens.items.size(); ++id) {
    const std::string& token = tokens.items[id].text;
    texts.push_back(token);
    vocab[token] = id;
    const int64_t type = types != nullptr ? types->items[id].integer : 1;
    if (type == kTokenTypeUnknown || type == kTokenTypeControl || type == kTokenTypeUserDefined) {
      added.push_back(added_token(id, token, type != kTokenTypeUserDefined));
    }
  }
  json merge_list = json::array();
  if (merges != nullptr) {
    for (const GgufValue& m : merges->items) merge_list.push_back(m.text);
  } else {
    WEFT_ASSIGN_OR_RETURN(const GgufValue* scores,
                          array_key(file, "tokenizer.ggml.scores", GgufType::kF32, true));
    if (scores->items.size() != tokens.items.size()) {
      return metadata_error(file, "tokenizer.ggml.scores",
                            absl::StrCat(scores->items.size(), " entries for ",
                                         tokens.items.size(), " tokens"));
    }
    std::vector<double> values;
    values.reserve(scores->items.size());
    for (const GgufValue& v : scores->items) values.push_back(v.real);
    for (auto& [left, right] : sentencepiece_merges(texts, values)) {
      merge_list.push_back(json::array({std::move(left), std::move(right)}));
    }
  }
  // BOS / EOS around every sequence, as the flags say (llama.cpp adds BOS when the file is silent).
  json single = json::array();
  json special_tokens = json::object();
  const auto add_special = [&](const char* key, bool wanted) -> absl::Status {
    if (!wanted) return absl::OkStatus();
    const GgufValue* id = file.find(key);
    if (id == nullptr || !id->is_integer() || id->integer < 0 ||
        id->integer >= static_cast<int64_t>(tokens.items.size())) {
      return metadata_error(file, key, "missing or out of range, but the file asks for the token");
    }
    const std::string& text = tokens.items[id->integer].text;
    single.push_back({{"SpecialToken", {{"id", text}, {"type_id", 0}}}});
    special_tokens[text] = {{"id", text}, {"ids", {id->integer}}, {"tokens", {text}}};
    return absl::OkStatus();
  };
  WEFT_RETURN_IF_ERROR(add_special("tokenizer.ggml.bos_token_id",
                                   flag_or(file, "tokenizer.ggml.add_bos_token", true)));
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  WEFT_RETURN_IF_ERROR(add_special("tokenizer.ggml.eos_token_id",
                                   flag_or(file, "tokenizer.ggml.add_eos_token", false)));
  return tokenizer_json(
      std::move(added),
      {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"},
       {"split", false}},
      {{"type", "TemplateProcessing"}, {"single", single}, {"pair", single},
       {"special_tokens", special_tokens}},
      {{"type", "Sequence"},
       {"decoders",
        {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
         {{"type", "ByteFallback"}},
         {{"type", "Fuse"}},
         {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}},
      {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
       {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
       {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
       {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)}});
}

}  // namespace

absl::StatusOr<json> gguf_config_json(const GgufFile& file) {
  WEFT_ASSIGN_OR_RETURN(std::string arch, architecture_of(file));
  const ArchitectureInfo& info = architectures().at(arch);
  const std::string prefix = arch + ".";
  for (const auto& [key, value] : file.metadata()) {
    if (!absl::StartsWith(key, prefix)) continue;
    const std::string rest = key.substr(prefix.size());
    if (!known_architecture_keys().count(rest)) {
      return metadata_error(file, key, "weft does not implement what this key describes");
    }
  }
  if (file.tensors().count("rope_freqs.weight")) {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path().string(),
        ": tensor 'rope_freqs.weight' (per-frequency rope scaling, Llama 3.1 style) is not "
        "supported for GGUF files"));
  }
  const auto key = [&](const char* name) { return prefix + name; };
  WEFT_ASSIGN_OR_RETURN(int64_t hidden, integer_key(file, key("embedding_length")));
  WEFT_ASSIGN_OR_RETURN(int64_t heads, integer_key(file, key("attention.head_count")));
  WEFT_ASSIGN_OR_RETURN(int64_t kv_heads, integer_key(file, key("attention.head_count_kv"), heads));
  if (heads <= 0) return metadata_error(file, key("attention.head_count"), "must be positive");
  WEFT_ASSIGN_OR_RETURN(int64_t head_dim,
                        integer_key(file, key("attention.key_length"), hidden / heads));
  WEFT_ASSIGN_OR_RETURN(int64_t value_dim, integer_key(file, key("attention.value_length"), head_dim));
  if (value_dim != head_dim) {
    return metadata_error(file, key("attention.value_length"),
                          absl::StrCat(value_dim, " differs from the key length ", head_dim,
                                       "; weft needs equal key and value head sizes"));
  }
  WEFT_ASSIGN_OR_RETURN(int64_t rope_dims, integer_key(file, key("rope.dimension_count"), head_dim));
  if (rope_dims != head_dim) {
    return metadata_error(file, key("rope.dimension_count"),
                          absl::StrCat(rope_dims, " rotary dimensions of a ", head_dim,
                                       "-dimension head (partial rotary) is not supported"));
  }
  int64_t vocab = 0;
  if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == GgufType::kArray) {
    vocab = static_cast<int64_t>(tokens->items.size());
  }
  WEFT_ASSIGN_OR_RETURN(vocab, integer_key(file, key("vocab_size"), vocab));
  if (auto embd = file.tensors().find("token_embd.weight"); embd != file.tensors().end()) {
    vocab = embd->second.shape[0];  // the embedding's rows are what the model computes with
  }

  json config = {
      {"architectures", {info.hf_class}},
      {"model_type", info.model_type},
      {"hidden_act", "silu"},
      {"hidden_size", hidden},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads},
      {"head_dim", head_dim},
      {"vocab_size", vocab},
      // llama.cpp writes the output projection only when it is not the embedding matrix.
      {"tie_word_embeddings", file.tensors().count("output.weight") == 0},
      {"dtype", "float32"},  // weights are widened (or dequantized) in registers, F32 activations
  };
  WEFT_ASSIGN_OR_RETURN(config["intermediate_size"], integer_key(file, key("feed_forward_length")));
  WEFT_ASSIGN_OR_RETURN(config["num_hidden_layers"], integer_key(file, key("block_count")));
  WEFT_ASSIGN_OR_RETURN(config["max_position_embeddings"],
                        integer_key(file, key("context_length"), 2048));
  WEFT_ASSIGN_OR_RETURN(config["rms_norm_eps"],
                        number_key(file, key("attention.layer_norm_rms_epsilon")));
  WEFT_ASSIGN_OR_RETURN(double theta, number_key(file, key("rope.freq_base"), 10000.0));
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", theta}};
  if (arch == "llama") {
    config["attention_bias"] = file.tensors().count("blk.0.attn_q.bias") != 0;
    config["mlp_bias"] = false;
  }
  for (const char* id : {"bos_token_id", "eos_token_id", "padding_token_id"}) {
    const GgufValue* v = file.find(absl::StrCat("tokenizer.ggml.", id));
    if (v != nullptr && v->is_integer()) {
      config[std::string(id) == "padding_token_id" ? "pad_token_id" : id] = v->integer;
    }
  }
  return config;
}

json gguf_generation_config_json(const GgufFile& file) {
  json config = json::object();
  for (const char* id : {"bos_token_id", "eos_token_id"}) {
    const GgufValue* v = file.find(absl::StrCat("tokenizer.ggml.", id));
    if (v != nullptr && v->is_integer()) config[id] = v->integer;
  }
  return config;
}

absl::StatusOr<json> gguf_tokenizer_json(const GgufFile& file) {
  const std::string model = string_key(file, "tokenizer.ggml.model");
  if (model != "gpt2" && model != "llama") {
    return metadata_error(
        file, "tokenizer.ggml.model",
        model.empty() ? "missing (the file has no tokenizer)"
                      : absl::StrCat("'", model,
                                     "' is not supported (supported: gpt2, byte-level BPE; llama, "
                                     "sentencepiece BPE)"));
  }
  WEFT_ASSIGN_OR_RETURN(const GgufValue* tokens,
                        array_key(file, "tokenizer.ggml.tokens", GgufType::kString, true));
  if (model == "llama") return sentencepiece_tokenizer_json(file, *tokens);
  WEFT_ASSIGN_OR_RETURN(const GgufValue* merges,
                        array_key(file, "tokenizer.ggml.merges", GgufType::kString, true));
  WEFT_ASSIGN_OR_RETURN(const GgufValue* types, token_types(file, *tokens));

  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens->items.size(); ++id) {
    const std::string& token = tokens->items[id].text;
    const bool spelled = in_byte_alphabet(token);
    vocab[spelled ? token : respell_in_byte_alphabet(token)] = id;
    const int64_t type = types != nullptr ? types->items[id].integer : 1;
    // Control tokens (whole, special) and user-defined ones (whole, not special), as transformers
    // adds them; a control token outside the byte alphabet is a llama.cpp mislabel it skips.
    if ((type == kTokenTypeControl && spelled) || type == kTokenTypeUserDefined) {
      added.push_back(added_token(id, token, type == kTokenTypeControl));
    }
  }
  json merge_list = json::array();
  for (const GgufValue& m : merges->items) merge_list.push_back(m.text);

  json pre_tokenizer;
  if (const char* pattern = split_pattern(string_key(file, "tokenizer.ggml.pre"))) {
    pre_tokenizer = {{"type", "Sequence"},
                     {"pretokenizers",
                      {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}},
                        {"behavior", "Isolated"}, {"invert", false}},
                       {{"type", "ByteLevel"}, {"add_prefix_space", false},
                        {"trim_offsets", true}, {"use_regex", false}}}}};
  } else {
    pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                     {"use_regex", true}};
  }
  return tokenizer_json(
      std::move(added), std::move(pre_tokenizer), nullptr,
      {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
       {"use_regex", true}},
      {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
       {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""},
       {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
       {"vocab", std::move(vocab)}, {"merges", std::move(merge_list)}});
}

absl::StatusOr<json> gguf_tokenizer_config_json(const GgufFile& file) {
  json config = json::object();
  const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
  const auto token_text = [&](const char* key) -> std::optional<std::string> {
    const GgufValue* id = file.find(absl::StrCat("tokenizer.ggml.", key));
    if (id == nullptr || !id->is_integer() || tokens == nullptr ||
        tokens->type != GgufType::kArray || id->integer < 0 ||
        id->integer >= static_cast<int64_t>(tokens->items.size())) {
      return std::nullopt;
    }
    return tokens->items[id->integer].text;
  };
  for (const auto& [name, key] : std::map<std::string, const char*>{
           {"bos_token", "bos_token_id"}, {"eos_token", "eos_token_id"},
           {"unk_token", "unknown_token_id"}, {"pad_token", "padding_token_id"}}) {
    if (auto text = token_text(key)) config[name] = *text;
  }
  for (const auto& [name, key] : std::map<std::string, const char*>{
           {"add_bos_token", "tokenizer.ggml.add_bos_token"},
           {"add_eos_token", "tokenizer.ggml.add_eos_token"}}) {
    const GgufValue* v = file.find(key);
    if (v != nullptr && v->type == GgufType::kBool) config[name] = v->integer != 0;
  }
  if (const GgufValue* t = file.find("tokenizer.chat_template");
      t != nullptr && t->type == GgufType::kString) {
    config["chat_template"] = t->text;
  }
  return config;
}

std::optional<std::string> gguf_to_hf_tensor_name(const std::string& name) {
  static const auto* kGlobal = new std::map<std::string, std::string>{
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  if (auto it = kGlobal->find(name); it != kGlobal->end()) return it->second;
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "blk.")) return std::nullopt;
  const size_t dot = rest.find('.');
  if (dot == absl::string_view::npos || dot == 0) return std::nullopt;
  const absl::string_view layer = rest.substr(0, dot);
  for (char c : layer)
    if (c < '0' || c > '9') return std::nullopt;
  rest.remove_prefix(dot + 1);
  static const auto* kLayer = new std::map<std::string, std::string, std::less<>>{
      {"attn_norm", "input_layernorm"},     {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},       {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},       {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},  {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},        {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  const size_t suffix_dot = rest.rfind('.');
  if (suffix_dot == absl::string_view::npos) return std::nullopt;
  const absl::string_view suffix = rest.substr(suffix_dot);  // ".weight" / ".bias"
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  auto it = kLayer->find(rest.substr(0, suffix_dot));
  if (it == kLayer->end()) return std::nullopt;
  return absl::StrCat("model.layers.", layer, ".", it->second, suffix);
}

bool gguf_rows_are_rope_permuted(const GgufFile& file, const std::string& hf_name) {
  if (string_key(file, "general.architecture") != "llama") return false;
  return absl::EndsWith(hf_name, "self_attn.q_proj.weight") ||
         absl::EndsWith(hf_name, "self_attn.k_proj.weight") ||
         absl::EndsWith(hf_name, "self_attn.q_proj.bias") ||
         absl::EndsWith(hf_name, "self_attn.k_proj.bias");
}

absl::StatusOr<int64_t> gguf_permuted_heads(const GgufFile& file, const std::string& hf_name) {
  WEFT_ASSIGN_OR_RETURN(int64_t heads, integer_key(file, "llama.attention.head_count"));
  if (absl::StrContains(hf_name, "k_proj")) {
    return integer_key(file, "llama.attention.head_count_kv", heads);
  }
  return heads;
}

}  // namespace weft
