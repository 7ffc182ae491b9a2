#include "launcher/default_model.h"

#include <cstdlib>
#include <system_error>
#include <vector>

#include "launcher/install_paths.h"

namespace weft {

std::filesystem::path default_model_dir() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("WEFT_DEFAULT_MODEL"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  for (std::filesystem::path& dir : shipped_file_candidates("default-model", "configs/default-model")) {
    candidates.push_back(std::move(dir));
  }
  for (const std::filesystem::path& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "config.json", ec)) return dir.lexically_normal();
  }
  return {};
}

}  // namespace weft
