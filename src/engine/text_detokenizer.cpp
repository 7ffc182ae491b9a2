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
  }
  std::string append(int32_t token) override { return stream_.push(token); }
  std::string finish() override { return stream_.finish(); }

 private:
  StreamingDetokenizer stream_;
};

}  // namespace

DetokenizerFactory text_detokenizers(std::shared_ptr<const Tokenizer> tokenizer) {
  return [tokenizer](std::span<const int32_t> prompt, bool skip_special_tokens) {
    return std::make_unique<TextDetokenizer>(tokenizer, prompt, skip_special_tokens);
  };
}

}  // namespace weft
