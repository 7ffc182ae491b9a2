// Where a model's files come from. `--model` names either a Hugging Face directory (config.json,
// tokenizer.json, ... beside the safetensors) or a GGUF file — given directly, or as a directory
// that holds exactly one *.gguf file and no config.json. For a GGUF model the Hugging Face files
// are built from the file's metadata (model/gguf_model_files.h), so every reader of config.json,
// generation_config.json, tokenizer.json and tokenizer_config.json sees one picture either way.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace weft {

// The GGUF file `model` stands for, or nullopt for a Hugging Face directory (or a path that is
// neither: the readers then report what is missing).
std::optional<std::filesystem::path> gguf_model_file(const std::filesystem::path& model);

// The text of the model's file `name` ("config.json", "tokenizer.json", ...), or nullopt when the
// model has none. Errors: the file exists but cannot be read; a GGUF file that fails to open or
// whose metadata cannot be expressed as that file (naming the key).
absl::StatusOr<std::optional<std::string>> read_model_file(const std::filesystem::path& model,
                                                           const std::string& name);

// Whether the model has file `name` (cheap for directories; opens a GGUF file's metadata).
bool model_has_file(const std::filesystem::path& model, const std::string& name);

// How to name the model's file `name` in messages: "DIR/name", or "FILE.gguf (name from its
// metadata)".
std::string model_file_label(const std::filesystem::path& model, const std::string& name);

}  // namespace weft
