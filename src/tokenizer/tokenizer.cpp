#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/bounded_json.h"
#include "model/model_files.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/chat_template_source.h"
#include "tokenizer/decoders.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizers.h"
#include "tokenizer/transformers_compat.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

absl::StatusOr<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(str_cat(path.string(), ": no such file"));
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > Tokenizer::kMaxFileBytes) {
    return absl::InvalidArgumentError(str_cat(path.string(), ": ", size, " bytes is larger than the ",
                                              Tokenizer::kMaxFileBytes, "-byte limit"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(str_cat(path.string(), ": cannot open for reading"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer.json files are large (a 150k-token vocabulary object, as many merges), so the
// container and value limits are the file-size limit's worth; a repeated key keeps its last
// value, as Hugging Face's serde-based reader does.
absl::StatusOr<nlohmann::json> parse_json(const std::string& text,
                                          const std::filesystem::path& path) {
  JsonLimits limits;
  limits.max_depth = Tokenizer::kMaxJsonNestingDepth;
  limits.max_container_size = int64_t{1} << 24;
  limits.max_values = int64_t{1} << 28;
  limits.reject_duplicate_keys = false;
  return parse_json_bounded<nlohmann::json>(text, path.string(), limits);
}

// tokenizer_config.json names special tokens as strings or as {"content": ..., ...} objects.
absl::StatusOr<std::optional<std::string>> special_token_name(const nlohmann::json& config,
                                                              const JsonPath& where,
                                                              const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return std::optional<std::string>((*it)["content"].get<std::string>());
  }
  return where.child(key).error("expected a string or an object with a \"content\" string");
}

bool has_decoder_type(const nlohmann::json& j, std::string_view type) {
  if (!j.is_object()) return false;
  if (j.contains("type") && j["type"].is_string() && j["type"].get<std::string>() == type)
    return true;
  const auto it = j.find("decoders");
  if (it == j.end() || !it->is_array()) return false;
  for (const auto& d : *it)
    if (has_decoder_type(d, type)) return true;
  return false;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::shared_ptr<Tokenizer>> Tokenizer::load(const std::filesystem::path& model_dir) {
  if (gguf_model_file(model_dir)) return load_from_model_files(model_dir);
  const std::filesystem::path tokenizer_path = model_dir / "tokenizer.json";
  const std::filesystem::path config_path = model_dir / "tokenizer_config.json";
  auto text = read_file(tokenizer_path);
  if (!text.ok()) return text.status();
  std::optional<std::string> config_text;
  std::error_code ec;
  if (std::filesystem::exists(config_path, ec)) {
    auto read = read_file(config_path);
    if (!read.ok()) return read.status();
    config_text = std::move(*read);
  }
  return from_texts(model_dir, *text, tokenizer_path, config_text, config_path);
}

absl::StatusOr<std::shared_ptr<Tokenizer>> Tokenizer::load_from_model_files(
    const std::filesystem::path& model) {
  auto text = read_model_file(model, "tokenizer.json");
  if (!text.ok()) return text.status();
  if (!text->has_value()) {
    return absl::NotFoundError(str_cat(model.string(), ": the model has no tokenizer"));
  }
  auto config_text = read_model_file(model, "tokenizer_config.json");
  if (!config_text.ok()) return config_text.status();
  return from_texts(model, **text, model_file_label(model, "tokenizer.json"), *config_text,
                    model_file_label(model, "tokenizer_config.json"));
}

absl::StatusOr<std::shared_ptr<Tokenizer>> Tokenizer::from_texts(
    const std::filesystem::path& model_dir, const std::string& tokenizer_text,
    const std::filesystem::path& tokenizer_path, const std::optional<std::string>& config_text,
    const std::filesystem::path& config_path) {
  const std::string* text = &tokenizer_text;
  auto tj = parse_json(*text, tokenizer_path);
  if (!tj.ok()) return tj.status();
  if (!tj->is_object())
    return absl::InvalidArgumentError(str_cat(tokenizer_path.string(), ": expected a JSON object"));

  nlohmann::json config;
  if (config_text) {
    auto parsed = parse_json(*config_text, config_path);
    if (!parsed.ok()) return parsed.status();
    if (!parsed->is_object()) {
      return absl::InvalidArgumentError(str_cat(config_path.string(), ": expected a JSON object"));
    }
    config = std::move(*parsed);
  }
  const absl::Status compat = apply_transformers_overrides(config, *text, *tj);
  if (!compat.ok()) return compat;

  std::shared_ptr<Tokenizer> tok(new Tokenizer());
  const JsonPath root(tokenizer_path.string(), "");
  if (!tj->contains("model")) return root.child("model").error("missing");
  auto model = BpeModel::from_json((*tj)["model"], root.child("model"));
  if (!model.ok()) return model.status();
  tok->model_ = std::move(*model);
  auto normalizer =
      make_normalizer(tj->value("normalizer", nlohmann::json()), root.child("normalizer"));
  if (!normalizer.ok()) return normalizer.status();
  tok->normalizer_ = std::move(*normalizer);
  auto pre =
      make_pre_tokenizer(tj->value("pre_tokenizer", nlohmann::json()), root.child("pre_tokenizer"));
  if (!pre.ok()) return pre.status();
  tok->pre_tokenizer_ = std::move(*pre);
  auto post = make_post_processor(tj->value("post_processor", nlohmann::json()),
                                  root.child("post_processor"));
  if (!post.ok()) return post.status();
  tok->post_processor_ = std::move(*post);
  auto decoder = make_decoder(tj->value("decoder", nlohmann::json()), root.child("decoder"));
  if (!decoder.ok()) return decoder.status();
  tok->decoder_ = std::move(*decoder);
  tok->byte_fallback_decoder_ =
      has_decoder_type(tj->value("decoder", nlohmann::json()), "ByteFallback");
  if (has_decoder_type(tj->value("decoder", nlohmann::json()), "ByteLevel")) {
    tok->token_encoding_ = TokenEncoding::kByteLevel;
  } else if (tok->byte_fallback_decoder_) {
    tok->token_encoding_ = TokenEncoding::kByteFallback;
  }
  auto added = AddedVocabulary::from_json(tj->value("added_tokens", nlohmann::json()),
                                          root.child("added_tokens"), tok->normalizer_.get());
  if (!added.ok()) return added.status();
  tok->added_ = std::move(*added);

  tok->vocab_size_ = tok->model_->id_limit();
  for (const auto& t : tok->added_.tokens())
    tok->vocab_size_ = std::max(tok->vocab_size_, t.id + 1);

  if (config.is_object()) {
    const JsonPath cpath(config_path.string(), "");
    for (auto [key, field] :
         {std::pair{"bos_token", &tok->bos_token_}, std::pair{"eos_token", &tok->eos_token_},
          std::pair{"pad_token", &tok->pad_token_}, std::pair{"unk_token", &tok->unk_token_}}) {
      auto name = special_token_name(config, cpath, key);
      if (!name.ok()) return name.status();
      *field = std::move(*name);
    }
  }
  auto templates = ChatTemplateSources::load(model_dir, config, config_path);
  if (!templates.ok()) return templates.status();
  tok->chat_templates_ = *std::move(templates);
  if (auto default_template = tok->chat_templates_.select(ChatTemplateSources::kDefaultName);
      default_template.ok()) {
    tok->chat_template_ = std::move(default_template->text);
  }
  return tok;
}

void Tokenizer::encode_segment(std::string_view text, bool at_start,
                               std::vector<int32_t>& ids) const {
  std::string normalized(text);
  if (normalizer_) normalizer_->normalize(normalized);
  std::vector<Segment> parts;
  added_.split(normalized, /*normalized_pass=*/true, parts);
  std::vector<Piece> pieces;
  for (const auto& part : parts) {
    if (part.id >= 0) {
      ids.push_back(part.id);
      continue;
    }
    pieces.clear();
    pieces.push_back(
        {normalized.substr(part.start, part.end - part.start), at_start && part.start == 0});
    if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
    for (const auto& p : pieces) model_->tokenize(p.text, ids);
  }
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::encode(std::string_view text,
                                                       bool add_special_tokens) const {
  const size_t valid = utf8::valid_prefix_len(text);
  if (valid != text.size()) {
    return absl::InvalidArgumentError(
        str_cat("Tokenizer::encode: text is not valid UTF-8 (invalid byte at offset ", valid, ")"));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Segment> segments;
  added_.split(text, /*normalized_pass=*/false, segments);
  for (const auto& seg : segments) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
    } else {
      encode_segment(text.substr(seg.start, seg.end - seg.start), seg.start == 0, ids);
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->process(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (const AddedToken* t = added_.by_id(id)) {
      if (!(skip_special_tokens && t->special)) tokens.push_back(t->content);
    } else if (const std::string* s = model_->id_to_token(id)) {
      tokens.push_back(*s);
    }
  }
  if (decoder_) {
    decoder_->decode_chain(tokens);
    std::string out;
    for (const auto& t : tokens) out.append(t);
    return out;
  }
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(' ');
    out.append(tokens[i]);
  }
  return out;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (auto id = added_.token_to_id(token)) return id;
  return model_->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.by_id(id)) return t->content;
  if (const std::string* s = model_->id_to_token(id)) return *s;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::token_bytes(int32_t id) const {
  std::optional<std::string> token = id_to_token(id);
  if (!token || !decoder_) return token;
  bool fused = false;
  decoder_->decode_token_bytes(*token, fused);
  return token;
}

bool Tokenizer::is_fallback_byte(int32_t id) const {
  if (!byte_fallback_decoder_ || added_.by_id(id) != nullptr) return false;
  const std::string* s = model_->id_to_token(id);
  return s != nullptr && s->size() == 6 && s->compare(0, 3, "<0x") == 0 && (*s)[5] == '>';
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_.by_id(id);
  return t != nullptr && t->special;
}

}  // namespace weft
