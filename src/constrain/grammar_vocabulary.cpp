#include "constrain/grammar_vocabulary.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "constrain/xgrammar_bridge.h"

namespace weft {

GrammarVocabulary::GrammarVocabulary(std::unique_ptr<Impl> impl, TokenEncoding encoding)
    : impl_(std::move(impl)), encoding_(encoding) {
  const auto& decoded = impl_->info.GetDecodedVocab();
  kinds_.assign(impl_->info.GetVocabSize(), kNever);
  for (size_t id = 0; id < decoded.size(); ++id)
    if (!decoded[id].empty()) kinds_[id] = kText;
  for (const int32_t id : impl_->info.GetStopTokenIds()) kinds_[id] = kStop;
}

GrammarVocabulary::~GrammarVocabulary() = default;

absl::StatusOr<std::shared_ptr<const GrammarVocabulary>> GrammarVocabulary::from_tokenizer(
    const Tokenizer& tokenizer, const GrammarVocabularyOptions& options) {
  if (options.model_vocab_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("grammar vocabulary: model_vocab_size ",
                                                   options.model_vocab_size, " is negative"));
  }
  const int32_t vocab_size =
      options.model_vocab_size > 0 ? options.model_vocab_size : tokenizer.vocab_size();
  std::vector<int32_t> stop_ids = options.stop_token_ids;
  if (stop_ids.empty()) {
    if (const auto eos = tokenizer.eos_id()) stop_ids.push_back(*eos);
  }
  std::vector<std::string> bytes(std::min(vocab_size, tokenizer.vocab_size()));
  for (int32_t id = 0; id < static_cast<int32_t>(bytes.size()); ++id) {
    // Special tokens (chat markers, EOS) are never text a grammar can produce.
    if (tokenizer.is_special(id)) continue;
    if (auto b = tokenizer.token_bytes(id)) bytes[id] = std::move(*b);
  }
  return from_token_bytes(std::move(bytes), tokenizer.token_encoding(), vocab_size,
                          std::move(stop_ids));
}

absl::StatusOr<std::shared_ptr<const GrammarVocabulary>> GrammarVocabulary::from_token_bytes(
    std::vector<std::string> token_bytes, TokenEncoding encoding, int32_t vocab_size,
    std::vector<int32_t> stop_token_ids) {
  if (vocab_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("grammar vocabulary: vocab_size ", vocab_size, " is below 1"));
  }
  if (static_cast<int64_t>(token_bytes.size()) > vocab_size) token_bytes.resize(vocab_size);
  if (stop_token_ids.empty()) {
    return absl::InvalidArgumentError(
        "grammar vocabulary: no stop token id (the tokenizer names no eos_token; pass "
        "stop_token_ids)");
  }
  std::sort(stop_token_ids.begin(), stop_token_ids.end());
  stop_token_ids.erase(std::unique(stop_token_ids.begin(), stop_token_ids.end()),
                       stop_token_ids.end());
  for (const int32_t id : stop_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("grammar vocabulary: stop token id ", id,
                                                     " is outside [0, ", vocab_size, ")"));
    }
  }
  // The bytes go in as VocabType::RAW: weft has already decoded them (xgrammar's own
  // byte-level / byte-fallback decoding would apply a second time). Empty strings are
  // xgrammar's "special token": never allowed.
  try {
    xgrammar::TokenizerInfo info(token_bytes, xgrammar::VocabType::RAW, vocab_size, stop_token_ids,
                                 /*add_prefix_space=*/false);
    return std::shared_ptr<const GrammarVocabulary>(
        new GrammarVocabulary(std::make_unique<Impl>(std::move(info)), encoding));
  } catch (const std::exception& e) {
    return xgrammar_error("grammar vocabulary", "xgrammar refused the vocabulary", e);
  }
}

int32_t GrammarVocabulary::vocab_size() const { return impl_->info.GetVocabSize(); }

const std::vector<int32_t>& GrammarVocabulary::stop_token_ids() const {
  return impl_->info.GetStopTokenIds();
}

std::string_view GrammarVocabulary::token_bytes(int32_t id) const {
  if (!may_be_allowed(id) || kinds_[id] == kStop) return {};
  return impl_->info.GetDecodedVocab()[id];
}

}  // namespace weft
