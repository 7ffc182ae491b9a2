// The vocabulary a grammar is compiled against: for every id of the model's logits row, the raw
// bytes that token adds to the output, plus the ids that end generation. Built once per model
// and shared (immutable, thread-safe) by the compiler and every matcher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenizer/tokenizer.h"

namespace weft {

struct GrammarVocabularyOptions {
  // Width of the model's logits row (config.json's vocab_size), which may exceed the tokenizer's
  // (padded embeddings) or fall short of it (added tokens without an embedding row). Ids past
  // the tokenizer's are never allowed; tokenizer ids past it are dropped. 0: the tokenizer's.
  int32_t model_vocab_size = 0;
  // Ids that end generation (generation_config.json's eos_token_id list, the tokenizer's EOS,
  // ...). A grammar allows them exactly where its output is complete. Empty: the tokenizer's
  // eos_id(). At least one is needed.
  std::vector<int32_t> stop_token_ids;
};

class GrammarVocabulary {
 public:
  // Takes each id's Tokenizer::token_bytes (the decoder chain's per-token bytes, so the grammar
  // sees the text weft's detokenizer emits). Special added tokens and holes get no bytes: a
  // grammar never allows them (except the stop ids). Errors: InvalidArgument for a model vocab
  // size below 1, a stop id outside [0, vocab size), no stop id.
  static absl::StatusOr<std::shared_ptr<const GrammarVocabulary>> from_tokenizer(
      const Tokenizer& tokenizer, const GrammarVocabularyOptions& options = {});

  // From decoded bytes directly: token_bytes[id] (empty = never allowed), padded with
  // never-allowed ids up to vocab_size. `encoding` records where the bytes came from.
  static absl::StatusOr<std::shared_ptr<const GrammarVocabulary>> from_token_bytes(
      std::vector<std::string> token_bytes, TokenEncoding encoding, int32_t vocab_size,
      std::vector<int32_t> stop_token_ids);

  ~GrammarVocabulary();
  GrammarVocabulary(const GrammarVocabulary&) = delete;
  GrammarVocabulary& operator=(const GrammarVocabulary&) = delete;

  // The logits row width: every bitmask and logits row built for this vocabulary has it.
  int32_t vocab_size() const;
  // How the tokenizer's vocabulary strings encoded the bytes.
  TokenEncoding encoding() const { return encoding_; }
  const std::vector<int32_t>& stop_token_ids() const;
  bool is_stop_token(int32_t id) const {
    return id >= 0 && id < static_cast<int32_t>(kinds_.size()) && kinds_[id] == kStop;
  }
  // True when some grammar state can allow `id`: a non-empty byte string or a stop id.
  bool may_be_allowed(int32_t id) const {
    return id >= 0 && id < static_cast<int32_t>(kinds_.size()) && kinds_[id] != kNever;
  }
  // The bytes of `id` as the grammar sees them (empty for never-allowed ids and stop ids).
  std::string_view token_bytes(int32_t id) const;

  class Impl;
  const Impl& impl() const { return *impl_; }

 private:
  enum Kind : uint8_t { kNever, kText, kStop };
  GrammarVocabulary(std::unique_ptr<Impl> impl, TokenEncoding encoding);
  std::unique_ptr<Impl> impl_;
  TokenEncoding encoding_;
  std::vector<uint8_t> kinds_;  // per id
};

}  // namespace weft
