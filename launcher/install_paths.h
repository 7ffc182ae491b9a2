// Where weft finds the files it ships beside the binary: an installed weft's share/weft/, else
// the source tree it was built from (the path is fixed at compile time).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace weft {

// <directory of the weft binary>/../share/weft/<installed>, then <source tree>/<in_source>: the
// places a shipped file may be, in the order they are tried.
std::vector<std::filesystem::path> shipped_file_candidates(const std::string& installed,
                                                           const std::string& in_source);

}  // namespace weft
