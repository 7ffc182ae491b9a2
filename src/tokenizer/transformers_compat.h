// Where transformers' AutoTokenizer does not use tokenizer.json as written, and how weft
// mirrors it (transformers 5.x behaviour, checked against the fixtures' reference dumps):
//
// - tokenizer_class LlamaTokenizer[Fast] whose tokenizer.json is not byte-level: transformers
//   rebuilds the pipeline from the vocabulary and merges: no normalizer, pre-tokenizer
//   Metaspace("▁", prepend_scheme = add_prefix_space (default true) ? (legacy ? always : first)
//   : never, split=false), decoder Replace("▁"," ") + ByteFallback + Fuse (+ Strip(" ", 1, 0)
//   when add_prefix_space), BPE with byte_fallback, fuse_unk and no unk token. This differs
//   from the file's Prepend/Replace normalizer on text after an added token and on leading
//   spaces (" Hello" gives [▁Hello], not [▁, ▁Hello]).
// - Qwen2Tokenizer: rebuilt as NFC + Split(Qwen regex, Isolated) + ByteLevel(add_prefix_space,
//   use_regex=false), decoder ByteLevel; equal to what Qwen's files contain.
// - The post-processor always comes from tokenizer.json: add_bos_token / add_eos_token in
//   tokenizer_config.json do not change it (transformers 4.x did apply them for Llama-style
//   classes, e.g. DeepSeek-V3 then got a BOS; 5.x does not).
// - A LlamaTokenizer[Fast] config whose tokenizer.json is byte-level is loaded as written.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace weft {

// Rewrites `tokenizer_json` (parsed tokenizer.json; `raw_text` its bytes) in place to the
// pipeline AutoTokenizer builds for `config` (parsed tokenizer_config.json, or null).
absl::Status apply_transformers_overrides(const nlohmann::json& config, std::string_view raw_text,
                                          nlohmann::json& tokenizer_json);

}  // namespace weft
