// Shared helpers for the chat template tests.
#pragma once

#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"

namespace weft::testing {

inline std::string data_path(const std::string& rel) {
  return std::string(WEFT_SOURCE_DIR) + "/tests/unit/chat_template/data/" + rel;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The clock generate_reference.py pins strftime_now to: 2024-07-26 14:05:09.
inline std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 14;
  tm.tm_min = 5;
  tm.tm_sec = 9;
  std::time_t t = timegm(&tm);
  std::tm out{};
  gmtime_r(&t, &out);
  return out;
}

}  // namespace weft::testing
