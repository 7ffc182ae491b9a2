// tokenizer.json normalizers: rewrite the text of each non-added-token segment before
// pre-tokenization. Supported types: NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace,
// Lowercase, Strip, Sequence; null means no normalizer.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8) in place; the result is valid UTF-8.
  virtual void normalize(std::string& text) const = 0;
};

// Builds the normalizer described by `j` (located at `where`). A JSON null gives nullptr.
// Unknown types and malformed fields give InvalidArgument naming the file and field.
absl::StatusOr<std::unique_ptr<Normalizer>> make_normalizer(const nlohmann::json& j,
                                                            const JsonPath& where);

}  // namespace weft
