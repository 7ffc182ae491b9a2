// Bad tokenizer files must fail to load with an error naming the file and the field.
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

using nlohmann::json;

json tiny_tokenizer() {
  return json::parse(R"({
    "version": "1.0",
    "added_tokens": [{"id": 5, "content": "<s>", "special": true, "normalized": false,
                      "lstrip": false, "rstrip": false, "single_word": false}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "post_processor": null,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
              "merges": ["a b", ["Ġ", "ab"]]}
  })");
}

class LoadErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_tokenizer_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& text) { std::ofstream(dir_ / "tokenizer.json") << text; }
  // Loads and expects failure whose message contains every fragment.
  void expect_error(std::initializer_list<std::string> fragments) {
    auto tok = Tokenizer::load(dir_);
    ASSERT_FALSE(tok.ok());
    const std::string msg(tok.status().message());
    EXPECT_NE(msg.find((dir_ / "tokenizer.json").string()), std::string::npos) << msg;
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "missing \"" << f << "\" in: " << msg;
  }
  std::filesystem::path dir_;
};

TEST_F(LoadErrorTest, TinyTokenizerLoadsAndEncodes) {
  write(tiny_tokenizer().dump());
  auto tok = Tokenizer::load(dir_);
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto ids = (*tok)->encode("ab ab<s>", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{2, 4, 5}));
  EXPECT_EQ((*tok)->decode(*ids, true), "ab ab");
  EXPECT_EQ((*tok)->vocab_size(), 6);
}

// Regression: nlohmann's copy and dump recurse, so a deeply nested tokenizer.json used to crash
// load() with a stack overflow; nesting is now limited before parsing.
TEST_F(LoadErrorTest, DeeplyNestedJson) {
  json t = tiny_tokenizer();
  const int depth = 200000;
  std::string text = t.dump();
  text.insert(text.size() - 1, ",\"x\":" + std::string(depth, '[') + std::string(depth, ']'));
  write(text);
  expect_error({"nested deeper than 128"});
}

// Regressions (tests/fuzz tokenizer_load): each of these used to throw out of load() (number
// overflow, dropout of the wrong type) or ask for a table of 2^31 entries.
TEST_F(LoadErrorTest, HostileValues) {
  write(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "x": 1e999})");
  expect_error({"not valid JSON"});
  write(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": "x"}})");
  expect_error({"dropout"});
  write(R"({"model": {"type": "BPE", "vocab": {"a": 2147483647}, "merges": []}})");
  expect_error({"vocab", "16777215"});
  write(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
            "added_tokens": [{"id": 4294967296, "content": "x"}]})");
  expect_error({"added_tokens", "16777215"});
}

TEST_F(LoadErrorTest, MissingFile) {
  auto tok = Tokenizer::load(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string_view::npos);
}

TEST_F(LoadErrorTest, MalformedJson) {
  write("{\"model\": {\"type\": \"BPE\", ");
  expect_error({"not valid JSON"});
}

TEST_F(LoadErrorTest, UnknownModelType) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    json j = tiny_tokenizer();
    j["model"]["type"] = type;
    write(j.dump());
    expect_error({std::string("unsupported tokenizer model type ") + type, "model.type"});
  }
}

TEST_F(LoadErrorTest, UnknownPreTokenizer) {
  json j = tiny_tokenizer();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}}}};
  write(j.dump());
  expect_error(
      {"pre_tokenizer.pretokenizers[0].type", "unsupported pre-tokenizer type \"Whitespace\""});
}

TEST_F(LoadErrorTest, UnknownNormalizer) {
  json j = tiny_tokenizer();
  j["normalizer"] = {{"type", "BertNormalizer"}};
  write(j.dump());
  expect_error({"normalizer.type", "unsupported normalizer type \"BertNormalizer\""});
}

TEST_F(LoadErrorTest, UnknownDecoder) {
  json j = tiny_tokenizer();
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", {{{"type", "Fuse"}}, {{"type", "WordPiece"}}}}};
  write(j.dump());
  expect_error({"decoder.decoders[1].type", "unsupported decoder type \"WordPiece\""});
}

TEST_F(LoadErrorTest, InvalidRegex) {
  json j = tiny_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "(unclosed[a-"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  write(j.dump());
  expect_error({"pre_tokenizer.pattern.Regex", "invalid regex"});
}

TEST_F(LoadErrorTest, BadSplitBehavior) {
  json j = tiny_tokenizer();
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"String", " "}}},
                        {"behavior", "Sideways"},
                        {"invert", false}};
  write(j.dump());
  expect_error({"pre_tokenizer.behavior", "Sideways"});
}

TEST_F(LoadErrorTest, MergeWithUnknownToken) {
  json j = tiny_tokenizer();
  j["model"]["merges"].push_back("a zz");
  write(j.dump());
  expect_error({"model.merges[2]", "\"zz\" is not in the vocabulary"});
}

TEST_F(LoadErrorTest, VocabNotAnObject) {
  json j = tiny_tokenizer();
  j["model"]["vocab"] = json::array();
  write(j.dump());
  expect_error({"model.vocab"});
}

TEST_F(LoadErrorTest, MalformedConfig) {
  write(tiny_tokenizer().dump());
  std::ofstream(dir_ / "tokenizer_config.json") << "{not json";
  auto tok = Tokenizer::load(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("tokenizer_config.json: not valid JSON"),
            std::string_view::npos)
      << tok.status();
}

}  // namespace
}  // namespace weft
