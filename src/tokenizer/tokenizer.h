// Hugging Face tokenizer loaded from a model directory (tokenizer.json + tokenizer_config.json).
//
// Contract: encode() and decode() reproduce what transformers' AutoTokenizer.from_pretrained(dir)
// gives for encode(text, add_special_tokens=...) and decode(ids, skip_special_tokens=...)
// (transformers 5.x; see transformers_compat.h for where that differs from the raw
// tokenizers.Tokenizer built from tokenizer.json alone). Pipeline: added tokens are cut out of
// the raw text, the rest is normalized, normalized added tokens are cut out, the remainder is
// pre-tokenized and BPE-encoded, then the post-processor adds special tokens.
//
// Thread-safety: a loaded Tokenizer is immutable apart from an internal, locked word cache;
// encode/decode may be called from any number of threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/chat_template_source.h"

namespace weft {

class BpeModel;
class Decoder;
class Normalizer;
class PostProcessor;
class PreTokenizer;

// How vocabulary strings encode text, as the decoder chain says: GPT-2 byte-level alphabet
// (ByteLevel decoder), sentencepiece-style with "<0xHH>" byte tokens (ByteFallback), or plain text.
enum class TokenEncoding { kRaw, kByteLevel, kByteFallback };

class Tokenizer {
 public:
  // Limits load() enforces on each file: the largest published tokenizer.json files are tens of
  // MB; JSON nesting deeper than a few levels is never needed and deep nesting overflows the
  // stack in nlohmann's recursive copy/dump.
  static constexpr size_t kMaxFileBytes = size_t{512} << 20;
  static constexpr int kMaxJsonNestingDepth = 128;

  // Loads `model_dir`/tokenizer.json (required), `model_dir`/tokenizer_config.json
  // (optional) and the directory's chat template files (ChatTemplateSources::load, whose errors
  // it returns). Errors name the file and field: missing/unreadable file, JSON that is not valid,
  // unsupported model ("unsupported tokenizer model type X in <file>"), unknown normalizer,
  // pre-tokenizer, decoder or post-processor type, invalid regex, a file larger than
  // kMaxFileBytes or nested deeper than kMaxJsonNestingDepth.
  // `model_dir` may also be a GGUF model (model/model_files.h): its tokenizer.json and
  // tokenizer_config.json are built from the file's metadata.
  static absl::StatusOr<std::shared_ptr<Tokenizer>> load(const std::filesystem::path& model_dir);

  ~Tokenizer();

  // Encodes UTF-8 `text`. add_special_tokens applies the post-processor (e.g. Llama's BOS).
  // Error: InvalidArgument when `text` is not valid UTF-8.
  absl::StatusOr<std::vector<int32_t>> encode(std::string_view text, bool add_special_tokens) const;

  // Decodes ids to UTF-8 text. Ids unknown to the vocabulary are skipped (as tokenizers does);
  // skip_special_tokens drops added tokens marked special. Byte sequences that are not valid
  // UTF-8 come out as U+FFFD.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // One past the largest id of the model vocabulary and added tokens (the embedding rows the
  // ids index).
  int32_t vocab_size() const { return vocab_size_; }
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token string of `id` (added token content or vocabulary entry), if any.
  std::optional<std::string> id_to_token(int32_t id) const;
  // True when `id` is an added token marked special.
  bool is_special(int32_t id) const;
  // True when `id` is a byte token ("<0xHH>") that the decoder turns back into a raw byte
  // (a ByteFallback decoder). Such bytes may still change meaning with the next id: a run that
  // ends up invalid UTF-8 decodes to one U+FFFD per byte.
  bool is_fallback_byte(int32_t id) const;

  TokenEncoding token_encoding() const { return token_encoding_; }
  // The raw bytes `id` contributes to decoded text in the middle of a sequence (the decoder
  // chain's per-token view, Decoder::decode_token_bytes): "Ġthe" -> " the", "<0xE2>" -> one
  // byte 0xE2, "▁the" -> " the"; not UTF-8-repaired, no start-of-text stripping. Added tokens
  // give their content through the same chain, as decode() does. nullopt for ids without a
  // token (holes in the vocabulary, ids >= vocab_size()).
  std::optional<std::string> token_bytes(int32_t id) const;

  // Special tokens named in tokenizer_config.json (bos_token, eos_token, ...), if any.
  const std::optional<std::string>& bos_token() const { return bos_token_; }
  const std::optional<std::string>& eos_token() const { return eos_token_; }
  const std::optional<std::string>& pad_token() const { return pad_token_; }
  const std::optional<std::string>& unk_token() const { return unk_token_; }
  std::optional<int32_t> bos_id() const {
    return bos_token_ ? token_to_id(*bos_token_) : std::nullopt;
  }
  std::optional<int32_t> eos_id() const {
    return eos_token_ ? token_to_id(*eos_token_) : std::nullopt;
  }

  // Every chat template the model directory holds (chat_template.jinja,
  // additional_chat_templates/, chat_template.json, tokenizer_config.json's chat_template; see
  // chat_template_source.h). Commands that render pick one with chat_templates().select(name),
  // which reports unknown names and conflicting sources.
  const ChatTemplateSources& chat_templates() const { return chat_templates_; }
  // The template named "default" when its sources agree; empty when there is none or they
  // conflict (select() says why).
  const std::string& chat_template() const { return chat_template_; }

 private:
  static absl::StatusOr<std::shared_ptr<Tokenizer>> load_from_model_files(
      const std::filesystem::path& model);
  // The rest of load(): the files' texts, and the paths their errors name.
  static absl::StatusOr<std::shared_ptr<Tokenizer>> from_texts(
      const std::filesystem::path& model_dir, const std::string& tokenizer_text,
      const std::filesystem::path& tokenizer_path, const std::optional<std::string>& config_text,
      const std::filesystem::path& config_path);

  Tokenizer();
  void encode_segment(std::string_view text, bool at_start, std::vector<int32_t>& ids) const;

  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  bool byte_fallback_decoder_ = false;
  TokenEncoding token_encoding_ = TokenEncoding::kRaw;
  AddedVocabulary added_;
  int32_t vocab_size_ = 0;
  std::optional<std::string> bos_token_;
  std::optional<std::string> eos_token_;
  std::optional<std::string> pad_token_;
  std::optional<std::string> unk_token_;
  ChatTemplateSources chat_templates_;
  std::string chat_template_;
};

}  // namespace weft
