// The chat-template layouts of tests/unit/tokenizer/data/chat_template_layouts/reference.json,
// rebuilt as model directories exactly as its generate_reference.py built them for transformers:
// the qwen3 fixture's tokenizer_config.json without its chat_template, then the case's
// "config_template" and "files". Shared by the tokenizer tests and the CLI tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "nlohmann/json.hpp"

namespace weft::testing {

inline std::filesystem::path chat_layout_source_dir() {
  return std::filesystem::path(WEFT_SOURCE_DIR);
}

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline const nlohmann::ordered_json& chat_layouts() {
  static const nlohmann::ordered_json ref = nlohmann::ordered_json::parse(read_text_file(
      chat_layout_source_dir() / "tests/unit/tokenizer/data/chat_template_layouts/reference.json"));
  return ref;
}

inline const nlohmann::ordered_json& chat_layout(const std::string& name) {
  for (const auto& c : chat_layouts()["cases"]) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no chat layout case " + name);
}

// The template text a reference name ("qwen3", "brief") stands for.
inline std::string layout_template(const std::string& ref) {
  return chat_layouts()["templates"][ref].get<std::string>();
}

// Writes case `c` into `dir` (created); with `with_tokenizer_json` also the qwen3 tokenizer.json.
inline void write_chat_layout(const nlohmann::ordered_json& c, const std::filesystem::path& dir,
                              bool with_tokenizer_json) {
  namespace fs = std::filesystem;
  const fs::path fixture = chat_layout_source_dir() / "tests/tokenizer_data/fixtures/qwen3";
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (with_tokenizer_json) fs::copy_file(fixture / "tokenizer.json", dir / "tokenizer.json");
  auto config = nlohmann::ordered_json::parse(read_text_file(fixture / "tokenizer_config.json"));
  config.erase("chat_template");
  const auto& ct = c["config_template"];
  if (ct.is_string()) {
    config["chat_template"] = layout_template(ct);
  } else if (ct.is_array()) {
    config["chat_template"] = nlohmann::ordered_json::array();
    for (const auto& pair : ct) {
      config["chat_template"].push_back(
          {{"name", pair[0]}, {"template", layout_template(pair[1])}});
    }
  }
  std::ofstream(dir / "tokenizer_config.json") << config.dump(2);
  for (const auto& [name, ref] : c["files"].items()) {
    const fs::path path = dir / name;
    fs::create_directories(path.parent_path());
    if (name == "chat_template.json") {
      std::ofstream(path) << nlohmann::ordered_json{{"chat_template", layout_template(ref)}}.dump(
          2);
    } else {
      std::ofstream(path, std::ios::binary) << layout_template(ref);
    }
  }
}

}  // namespace weft::testing
