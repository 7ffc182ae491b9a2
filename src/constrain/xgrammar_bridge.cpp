#include "constrain/xgrammar_bridge.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace weft {

std::string xgrammar_message(const std::exception& e) {
  std::string_view m = e.what();
  // LogFatalError: "[HH:MM:SS] path/file.cc:LINE: message\n".
  if (!m.empty() && m.front() == '[') {
    const size_t close = m.find("] ");
    if (close != std::string_view::npos) {
      size_t pos = close + 2;
      const size_t colon = m.find(':', pos);
      if (colon != std::string_view::npos) {
        size_t digits = colon + 1;
        while (digits < m.size() && std::isdigit(static_cast<unsigned char>(m[digits]))) ++digits;
        if (digits > colon + 1 && m.substr(digits, 2) == ": ") m.remove_prefix(digits + 2);
      }
    }
  }
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.remove_suffix(1);
  return std::string(m);
}

absl::Status xgrammar_error(std::string_view parameter, std::string_view what,
                            const std::exception& e) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(parameter), ": ", std::string(what), ": ", xgrammar_message(e)));
}

}  // namespace weft
