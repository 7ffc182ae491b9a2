// What a GGUF file's metadata says in the Hugging Face files weft otherwise reads from a model
// directory: config.json, generation_config.json, tokenizer.json and tokenizer_config.json (with
// the chat template). Each follows what transformers builds when it opens the same file
// (`from_pretrained(..., gguf_file=...)`), so weft and transformers agree on the model and on the
// token ids.
//
// Supported: general.architecture llama (also Mistral files, which llama.cpp writes as llama),
// qwen2 and qwen3; tokenizer.ggml.model gpt2 (byte-level BPE: Llama 3, Qwen, SmolLM, GPT-2 style
// vocabularies). Anything the file states that weft would otherwise have to ignore (an unknown
// key under the architecture's prefix, rope scaling, a mixture of experts, a SentencePiece
// vocabulary) is an error naming the key.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model/gguf_file.h"
#include "nlohmann/json.hpp"

namespace weft {

absl::StatusOr<nlohmann::json> gguf_config_json(const GgufFile& file);
nlohmann::json gguf_generation_config_json(const GgufFile& file);
absl::StatusOr<nlohmann::json> gguf_tokenizer_json(const GgufFile& file);
absl::StatusOr<nlohmann::json> gguf_tokenizer_config_json(const GgufFile& file);

// The Hugging Face name of a GGUF tensor ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.
// q_proj.weight"), or nullopt for a name weft does not know.
std::optional<std::string> gguf_to_hf_tensor_name(const std::string& gguf_name);

// llama.cpp's converter reorders the rows of q_proj and k_proj of llama-architecture models so
// that its rotary embedding pairs adjacent elements; weft (like transformers) rotates halves. The
// rows of head h come back to Hugging Face order by this permutation of row indices: HF row
// h*d + j*(d/2) + i is GGUF row h*d + 2*i + j (d = head_dim, i < d/2, j in {0, 1}).
bool gguf_rows_are_rope_permuted(const GgufFile& file, const std::string& hf_name);
// The number of heads whose rows `hf_name` holds (q: attention heads, k: key/value heads).
absl::StatusOr<int64_t> gguf_permuted_heads(const GgufFile& file, const std::string& hf_name);

}  // namespace weft
