// tokenizer.json decoders: turn the token strings of an id sequence back into text. Supported
// types: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence. Each works on the
// whole token list ("decode_chain"), exactly as Hugging Face tokenizers chains them; the
// final text is the concatenation of the resulting list.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token list in place. Output strings are valid UTF-8 once a byte-producing
  // decoder (ByteLevel, ByteFallback) has run; invalid byte runs become U+FFFD.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;

  // Rewrites one token into the raw bytes it contributes in the middle of a decoded sequence:
  // no UTF-8 repair (a lone byte of a multi-byte character stays that byte) and no handling of
  // the text's first or last token (Strip after a fusing step, Metaspace's dropped prefix).
  // `fused` says whether an earlier step of the chain has joined the tokens into one text
  // (ByteLevel, Fuse); steps that then act only on the ends of that text do nothing. This is the
  // byte string a grammar matches a token against (constrain/grammar_vocabulary.h).
  virtual void decode_token_bytes(std::string& token, bool& fused) const = 0;
};

// Builds the decoder described by `j` (located at `where`). A JSON null gives nullptr.
absl::StatusOr<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& j,
                                                      const JsonPath& where);

}  // namespace weft
