// Shared helpers for the tokenizer tests: fixture paths, cached tokenizers, the reference dump.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace weft::testing {

inline std::filesystem::path tokenizer_data_dir() {
  return std::filesystem::path(WEFT_SOURCE_DIR) / "tests" / "tokenizer_data";
}

// Loads fixtures/<name> once per process.
inline std::shared_ptr<Tokenizer> fixture_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto tok = Tokenizer::load(tokenizer_data_dir() / "fixtures" / name);
  EXPECT_TRUE(tok.ok()) << tok.status();
  std::shared_ptr<Tokenizer> result = tok.ok() ? *tok : nullptr;
  cache[name] = result;
  return result;
}

// reference.json written by tests/tokenizer_data/generate_reference.py (Hugging Face output).
inline const nlohmann::json& reference() {
  static const nlohmann::json ref = [] {
    std::ifstream in(tokenizer_data_dir() / "reference.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
  }();
  return ref;
}

inline std::string escape(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
  return out;
}

}  // namespace weft::testing
