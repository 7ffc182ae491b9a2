#include "launcher/install_paths.h"

#include <system_error>

namespace weft {

std::vector<std::filesystem::path> shipped_file_candidates(const std::string& installed,
                                                           const std::string& in_source) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(exe.parent_path() / ".." / "share" / "weft" / installed);
  out.push_back(std::filesystem::path(WEFT_SOURCE_DIR) / in_source);
  return out;
}

}  // namespace weft
