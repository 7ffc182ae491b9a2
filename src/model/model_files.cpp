#include "model/model_files.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "model/gguf_file.h"
#include "model/gguf_model_files.h"

namespace weft {

std::optional<std::filesystem::path> gguf_model_file(const std::filesystem::path& model) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(model, ec)) {
    if (is_gguf_file(model)) return model;
    return std::nullopt;
  }
  if (!std::filesystem::is_directory(model, ec) ||
      std::filesystem::exists(model / "config.json", ec)) {
    return std::nullopt;
  }
  std::optional<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(model, ec)) {
    if (entry.path().extension() != ".gguf") continue;
    if (found) return std::nullopt;  // several: ambiguous, treated as no model (config.json missing)
    found = entry.path();
  }
  return found;
}

absl::StatusOr<std::optional<std::string>> read_model_file(const std::filesystem::path& model,
                                                           const std::string& name) {
  if (auto gguf = gguf_model_file(model)) {
    WEFT_ASSIGN_OR_RETURN(std::shared_ptr<GgufFile> file, GgufFile::open(*gguf));
    if (name == "config.json") {
      WEFT_ASSIGN_OR_RETURN(nlohmann::json j, gguf_config_json(*file));
      return j.dump();
    }
    if (name == "generation_config.json") return gguf_generation_config_json(*file).dump();
    if (name == "tokenizer.json") {
      if (file->find("tokenizer.ggml.model") == nullptr) return std::nullopt;
      WEFT_ASSIGN_OR_RETURN(nlohmann::json j, gguf_tokenizer_json(*file));
      return j.dump();
    }
    if (name == "tokenizer_config.json") {
      WEFT_ASSIGN_OR_RETURN(nlohmann::json j, gguf_tokenizer_config_json(*file));
      return j.dump();
    }
    return std::nullopt;
  }
  const std::filesystem::path path = model / name;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  }
  return text.str();
}

bool model_has_file(const std::filesystem::path& model, const std::string& name) {
  if (gguf_model_file(model)) {
    auto text = read_model_file(model, name);
    return text.ok() && text->has_value();
  }
  std::error_code ec;
  return std::filesystem::is_regular_file(model / name, ec);
}

std::string model_file_label(const std::filesystem::path& model, const std::string& name) {
  if (auto gguf = gguf_model_file(model)) {
    return absl::StrCat(gguf->string(), " (", name, " from its metadata)");
  }
  return (model / name).string();
}

}  // namespace weft
