// Incremental detokenization for streaming output: feed sampled ids one at a time, get back
// only the new text. Uses the prefix-offset / read-offset method: the delta is
// decode(ids[prefix:]) minus decode(ids[prefix:read]), emitted only once it does not end in an
// incomplete character (U+FFFD from a partial UTF-8 sequence), so every delta is valid UTF-8
// and never splits a character. With a ByteFallback decoder, text is also held back while the
// last decoded token is a byte token, because a later byte can turn the whole run into U+FFFDs. The
// concatenation of all deltas plus finish() equals Tokenizer::decode(all ids) for the tokenizers
// weft supports.
//
// Not thread-safe (one instance per sequence); holds a shared reference to the tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace weft {

class StreamingDetokenizer {
 public:
  StreamingDetokenizer(std::shared_ptr<const Tokenizer> tokenizer, bool skip_special_tokens);

  // Appends `id` and returns the text it completes (possibly empty while bytes are pending).
  std::string push(int32_t id);

  // Returns whatever is still held back (e.g. a trailing incomplete character, which comes out
  // as U+FFFD exactly as the full decode shows it). Call once at the end of the stream.
  std::string finish();

  // Forgets every id after the first `num_ids`: the detokenizer is as it was right after the
  // num_ids-th push (banned-phrase rollback). Ids past the end are a no-op; before finish() only.
  void truncate(size_t num_ids);

  const std::vector<int32_t>& ids() const { return ids_; }

 private:
  std::string push_id(int32_t id);

  struct Offsets {
    size_t prefix = 0;
    size_t read = 0;
    bool open_byte_run = false;
  };
  std::shared_ptr<const Tokenizer> tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
  bool open_byte_run_ = false;  // the last token the decode shows is a fallback byte
  std::vector<Offsets> history_;  // [i]: the offsets after push i + 1 (for truncate)
};

}  // namespace weft
