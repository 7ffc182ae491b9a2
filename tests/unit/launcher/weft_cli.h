// Shared by the tests that drive the weft binary as a user would (cli_test.cpp,
// cli_chat_layout_test.cpp): running it, and a random model over the Qwen3 tokenizer's vocabulary.
// Each including file is its own test binary (WEFT_BINARY names the weft executable).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "model/random_model.h"

namespace weft::cli_testing {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `weft ARGS` with `input` on stdin.
inline RunResult weft(const std::string& args, const std::string& input = "") {
  const fs::path dir = fs::temp_directory_path() / ("weft-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in") << input;
  const std::string cmd = std::string(WEFT_BINARY) + " " + args + " < " + (dir / "in").string() +
                          " > " + (dir / "out").string() + " 2> " + (dir / "err").string();
  RunResult r;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  fs::remove_all(dir);  // one per test process: left behind, they pile up in /tmp run after run
  return r;
}

inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline const fs::path kSource = WEFT_SOURCE_DIR;
inline const fs::path kQwen3 = kSource / "tests/tokenizer_data/fixtures/qwen3";

// A random model over the Qwen3 tokenizer's vocabulary, so text flows end to end.
class TextGenerationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("weft-cli-model-" + std::to_string(::getpid()));
    RandomModelSpec spec;
    spec.vocab_size = 151669;
    spec.hidden_size = 16;
    spec.intermediate_size = 32;
    spec.num_layers = 1;
    spec.num_heads = 2;
    spec.num_kv_heads = 1;
    spec.dtype = DType::kBF16;
    ASSERT_TRUE(write_random_model(dir_, spec).ok());
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(kQwen3 / f, dir_ / f, fs::copy_options::overwrite_existing);
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static inline fs::path dir_;
};

}  // namespace weft::cli_testing
