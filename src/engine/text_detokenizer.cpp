#include "engine/text_detokenizer.h"

#include <algorithm>

#include "tokenizer/streaming_detokenizer.h"

namespace weft {
namespace {

// Prompt tokens replayed as context: enough to cover a multi-token UTF-8 character.
constexpr size_t kContextTokens = 6;

class TextDetokenizer final : public IncrementalDetokenizer {
 public:
  TextDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, std::span<const int32_t> prompt,
                  bool skip_special_tokens)
      : stream_(std::move(tokenizer), skip_special_tokens) {
    const size_t context = std::min(prompt.size(), kContextTokens);
    for (int32_t id : prompt.subspan(prompt.size() - context)) stream_.push(id);
    num_context_ = context;
  }
  std::string append(int32_t token) override { return stream_.push(token); }
  std::string finish() override { return stream_.finish(); }
  void truncate(size_t num_appended) override { stream_.truncate(num_context_ + num_appended); }

 private:
  StreamingDetokenizer stream_;
  size_t num_context_ = 0;  // prompt tokens pushed as context
};

}  // namespace

DetokenizerFactory text_detokenizers(std::shared_ptr<const Tokenizer> tokenizer) {
  return [tokenizer](std::span<const int32_t> prompt, bool skip_special_tokens) {
    return std::make_unique<TextDetokenizer>(tokenizer, prompt, skip_special_tokens);
  };
}

}  // namespace weft
