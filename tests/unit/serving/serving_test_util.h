// What the serving tests share: the real qwen3 tokenizer of tests/tokenizer_data/fixtures,
// loaded once per process.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "tokenizer/tokenizer.h"

namespace weft::testing {

inline std::shared_ptr<const Tokenizer> qwen_tokenizer() {
  static std::shared_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::load(std::filesystem::path(WEFT_SOURCE_DIR) / "tests/tokenizer_data/fixtures/qwen3");
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : nullptr;
  }();
  return tok;
}

}  // namespace weft::testing
