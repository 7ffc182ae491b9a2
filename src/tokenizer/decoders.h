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
};

// Builds the decoder described by `j` (located at `where`). A JSON null gives nullptr.
absl::StatusOr<std::unique_ptr<Decoder>> make_decoder(const nlohmann::json& j,
                                                      const JsonPath& where);

}  // namespace weft
