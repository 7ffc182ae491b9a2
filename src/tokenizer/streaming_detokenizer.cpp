#include "tokenizer/streaming_detokenizer.h"

#include <span>

#include "tokenizer/utf8.h"

namespace weft {

StreamingDetokenizer::StreamingDetokenizer(std::shared_ptr<const Tokenizer> tokenizer,
                                           bool skip_special_tokens)
    : tokenizer_(std::move(tokenizer)), skip_special_tokens_(skip_special_tokens) {}

void StreamingDetokenizer::truncate(size_t num_ids) {
  if (num_ids >= ids_.size()) return;
  ids_.resize(num_ids);
  history_.resize(num_ids);
  const Offsets at = num_ids == 0 ? Offsets{} : history_.back();
  prefix_offset_ = at.prefix;
  read_offset_ = at.read;
  open_byte_run_ = at.open_byte_run;
}

std::string StreamingDetokenizer::push(int32_t id) {
  std::string delta = push_id(id);
  history_.push_back({prefix_offset_, read_offset_, open_byte_run_});
  return delta;
}

std::string StreamingDetokenizer::push_id(int32_t id) {
  ids_.push_back(id);
  const bool hidden =
      (skip_special_tokens_ && tokenizer_->is_special(id)) || !tokenizer_->id_to_token(id);
  if (!hidden) open_byte_run_ = tokenizer_->is_fallback_byte(id);
  if (open_byte_run_) return std::string();
  const std::span<const int32_t> all(ids_);
  const std::string prefix_text = tokenizer_->decode(
      all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
  const std::string new_text =
      tokenizer_->decode(all.subspan(prefix_offset_), skip_special_tokens_);
  // Hold back while the window ends in a replacement character: the next id may complete it.
  const bool incomplete =
      new_text.size() >= utf8::kReplacementUtf8.size() &&
      new_text.compare(new_text.size() - utf8::kReplacementUtf8.size(),
                       utf8::kReplacementUtf8.size(), utf8::kReplacementUtf8) == 0;
  if (incomplete || new_text.size() <= prefix_text.size() ||
      new_text.compare(0, prefix_text.size(), prefix_text) != 0) {
    return std::string();
  }
  std::string delta = new_text.substr(prefix_text.size());
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return delta;
}

std::string StreamingDetokenizer::finish() {
  const std::span<const int32_t> all(ids_);
  const std::string prefix_text = tokenizer_->decode(
      all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
  const std::string new_text =
      tokenizer_->decode(all.subspan(prefix_offset_), skip_special_tokens_);
  prefix_offset_ = read_offset_ = ids_.size();
  if (new_text.size() <= prefix_text.size() ||
      new_text.compare(0, prefix_text.size(), prefix_text) != 0) {
    return std::string();
  }
  return new_text.substr(prefix_text.size());
}

}  // namespace weft
