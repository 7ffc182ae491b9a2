#include "launcher/default_model.h"

#include <unistd.h>

#include <cstdlib>
#include <system_error>
#include <vector>

namespace weft {
namespace {

std::filesystem::path executable_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::filesystem::path default_model_dir() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("WEFT_DEFAULT_MODEL"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  if (const std::filesystem::path exe = executable_dir(); !exe.empty()) {
    candidates.push_back(exe / ".." / "share" / "weft" / "default-model");
  }
  candidates.push_back(std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-model");
  for (const std::filesystem::path& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "config.json", ec)) return dir.lexically_normal();
  }
  return {};
}

}  // namespace weft
