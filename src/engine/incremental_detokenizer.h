// Text of a token stream, one token at a time. The engine holds one per sequence so stop
// strings can be matched and text streamed; the tokenizer module provides the implementation
// (an adapter over its StreamingDetokenizer). Without a tokenizer (token-id mode) the engine
// produces no text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace weft {

class IncrementalDetokenizer {
 public:
  virtual ~IncrementalDetokenizer() = default;
  // The new text that `token` completes (possibly empty while a UTF-8 character is incomplete).
  virtual std::string append(int32_t token) = 0;
  // Text still held back when the sequence ends (e.g. an incomplete character).
  virtual std::string finish() = 0;
  // Forgets the tokens appended after the first `num_appended`: the state right after the
  // num_appended-th append (a banned phrase rolled the sequence back). Before finish() only.
  virtual void truncate(size_t num_appended) = 0;
};

// Makes a detokenizer for a sequence whose prompt is `prompt_ids` (used as context so the first
// tokens decode as they would in the middle of the text).
using DetokenizerFactory = std::function<std::unique_ptr<IncrementalDetokenizer>(
    std::span<const int32_t> prompt_ids, bool skip_special_tokens)>;

}  // namespace weft
