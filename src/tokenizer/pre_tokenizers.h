// tokenizer.json pre-tokenizers: split normalized text into pieces that the model encodes
// independently. Supported types: ByteLevel, Split, Digits, Metaspace, Sequence; null means
// the whole segment is one piece.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

// One pre-tokenized piece. `at_start` is true when the piece begins at offset 0 of the
// original input (Metaspace's prepend_scheme "first" prepends only there).
struct Piece {
  std::string text;
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` with its refinement; pieces that end up empty are dropped.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// Builds the pre-tokenizer described by `j` (located at `where`). A JSON null gives nullptr.
absl::StatusOr<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const nlohmann::json& j,
                                                                 const JsonPath& where);

}  // namespace weft
