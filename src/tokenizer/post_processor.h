// tokenizer.json post-processors: add special tokens around an encoded sequence when
// add_special_tokens is true. Supported: TemplateProcessing (single-sequence template),
// ByteLevel (offsets only, so ids are unchanged), Sequence; null means none.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites `ids` (the encoded sequence) to the final id list for add_special_tokens=true.
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

absl::StatusOr<std::unique_ptr<PostProcessor>> make_post_processor(const nlohmann::json& j,
                                                                   const JsonPath& where);

}  // namespace weft
