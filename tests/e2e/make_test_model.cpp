// Writes the e2e tests' model: a tiny random Llama (one layer, hidden 16) whose vocabulary is the
// Qwen3 tokenizer's, with that tokenizer (and its chat template) beside it.
//   make_test_model DIR
#include <filesystem>
#include <iostream>

#include "model/random_model.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::cerr << "usage: make_test_model DIR\n";
    return 2;
  }
  const fs::path dir = argv[1];
  weft::RandomModelSpec spec;
  spec.vocab_size = 151669;
  spec.hidden_size = 16;
  spec.intermediate_size = 32;
  spec.num_layers = 1;
  spec.num_heads = 2;
  spec.num_kv_heads = 1;
  spec.max_position_embeddings = 4096;
  spec.dtype = weft::DType::kBF16;
  if (auto s = weft::write_random_model(dir, spec); !s.ok()) {
    std::cerr << "make_test_model: " << s.message() << "\n";
    return 1;
  }
  const fs::path tokenizer = fs::path(WEFT_SOURCE_DIR) / "tests/tokenizer_data/fixtures/qwen3";
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    std::error_code ec;
    fs::copy_file(tokenizer / f, dir / f, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      std::cerr << "make_test_model: copying " << (tokenizer / f) << ": " << ec.message() << "\n";
      return 1;
    }
  }
  return 0;
}
