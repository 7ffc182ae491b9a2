// Where chat templates are found (tokenizer/chat_template_source.h): every layout of
// data/chat_template_layouts/reference.json (built and loaded by transformers 5), the
// conflicts transformers resolves silently, and malformed template files named in the error.
#include "tokenizer/chat_template_source.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/unit/tokenizer/chat_template_layouts.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using testing::chat_layout;
using testing::chat_layouts;
using testing::layout_template;
using testing::write_chat_layout;

class ChatTemplateSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weft_chat_source_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  absl::StatusOr<ChatTemplateSources> load() const {
    nlohmann::json config;
    const fs::path config_path = dir_ / "tokenizer_config.json";
    if (fs::exists(config_path))
      config = nlohmann::json::parse(testing::read_text_file(config_path));
    return ChatTemplateSources::load(dir_, config, config_path);
  }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  fs::path dir_;
};

// The template (by reference name) that `name` resolves to in case `c`, taken from the layout
// itself, highest precedence first.
std::string expected_template(const nlohmann::ordered_json& c, const std::string& name) {
  for (const auto& [file, ref] : c["files"].items()) {
    const bool is_default = file == "chat_template.jinja" || file == "chat_template.json";
    if ((is_default && name == "default") ||
        file == "additional_chat_templates/" + name + ".jinja") {
      return layout_template(ref);
    }
  }
  if (c["config_template"].is_string() && name == "default")
    return layout_template(c["config_template"]);
  if (c["config_template"].is_array()) {
    for (const auto& pair : c["config_template"]) {
      if (pair[0] == name) return layout_template(pair[1]);
    }
  }
  return "";
}

TEST_F(ChatTemplateSourceTest, EveryReferenceLayoutSelectsWhatTransformersRenders) {
  int checked = 0;
  for (const auto& c : chat_layouts()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    write_chat_layout(c, dir_, /*with_tokenizer_json=*/false);
    auto sources = load();
    ASSERT_TRUE(sources.ok()) << sources.status();
    // transformers' tokenizer never reads chat_template.json; weft does (as its processors do).
    std::vector<std::string> names = c["transformers_names"];
    if (c["files"].contains("chat_template.json")) names = {"default"};
    EXPECT_EQ(sources->names(), names);
    const std::string name =
        c["template_name"].is_null() ? "default" : c["template_name"].get<std::string>();
    auto chosen = sources->select(name);
    if (c.contains("weft_error")) {
      ASSERT_FALSE(chosen.ok());
      for (const auto& fragment : c["weft_error"]) {
        EXPECT_NE(chosen.status().message().find(fragment.get<std::string>()), std::string::npos)
            << fragment << " not in: " << chosen.status().message();
      }
    } else {
      ASSERT_TRUE(chosen.ok()) << chosen.status();
      EXPECT_EQ(chosen->text, expected_template(c, name));
      EXPECT_EQ(chosen->name, name);
    }
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST_F(ChatTemplateSourceTest, ConflictNamesBothFilesAndTheLine) {
  write_chat_layout(chat_layout("jinja_conflicts_with_config"), dir_, false);
  auto sources = load();
  ASSERT_TRUE(sources.ok()) << sources.status();
  auto chosen = sources->select("default");
  ASSERT_EQ(chosen.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string msg(chosen.status().message());
  EXPECT_NE(msg.find("conflicting template sources for chat template 'default': " +
                     (dir_ / "chat_template.jinja").string() + " and " +
                     (dir_ / "tokenizer_config.json").string() +
                     " field chat_template differ (first at line 1)"),
            std::string::npos)
      << msg;
}

TEST_F(ChatTemplateSourceTest, ConflictIsPerName) {
  // tokenizer_config.json's list agrees with chat_template.jinja on "default"; "brief" exists only
  // in the list and is still selectable; a different additional "brief" conflicts with it.
  write("chat_template.jinja", "A");
  write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "default", "template": "A"}, {"name": "brief", "template": "B"}]})");
  auto sources = load();
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_EQ(sources->select("default")->origin, (dir_ / "chat_template.jinja").string());
  EXPECT_EQ(sources->select("brief")->text, "B");
  EXPECT_EQ(sources->select("brief")->origin,
            (dir_ / "tokenizer_config.json").string() + " field chat_template[1]");
  write("additional_chat_templates/brief.jinja", "B2\nx");
  write("additional_chat_templates/notes.txt", "not a template");
  sources = load();
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_EQ(sources->names(), (std::vector<std::string>{"brief", "default"}));
  EXPECT_TRUE(sources->select("default").ok());
  auto brief = sources->select("brief");
  ASSERT_FALSE(brief.ok());
  EXPECT_NE(brief.status().message().find("additional_chat_templates/brief.jinja and "),
            std::string::npos)
      << brief.status();
}

TEST_F(ChatTemplateSourceTest, JsonFileAgreeingWithJinjaIsNoConflict) {
  write("chat_template.jinja", "T");
  write("chat_template.json", R"({"chat_template": "T"})");
  auto sources = load();
  ASSERT_TRUE(sources.ok()) << sources.status();
  ASSERT_TRUE(sources->select("default").ok());
  write("chat_template.json", R"({"chat_template": "U"})");
  sources = load();
  ASSERT_TRUE(sources.ok());
  auto chosen = sources->select("default");
  ASSERT_FALSE(chosen.ok());
  EXPECT_NE(chosen.status().message().find("chat_template.json field chat_template differ"),
            std::string::npos)
      << chosen.status();
}

TEST_F(ChatTemplateSourceTest, UnknownNameListsTheNamesAndWhereTheyLive) {
  write("additional_chat_templates/tool_use.jinja", "T");
  write("additional_chat_templates/rag.jinja", "R");
  auto sources = load();
  ASSERT_TRUE(sources.ok()) << sources.status();
  auto chosen = sources->select("default");
  ASSERT_EQ(chosen.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(chosen.status().message().find(
                "no chat template named 'default'; " + dir_.string() + " has: rag (" +
                (dir_ / "additional_chat_templates/rag.jinja").string() + "), tool_use ("),
            std::string::npos)
      << chosen.status();
}

TEST_F(ChatTemplateSourceTest, NoTemplateAtAllIsNotFound) {
  write("tokenizer_config.json", R"({"eos_token": "x"})");
  auto sources = load();
  ASSERT_TRUE(sources.ok());
  EXPECT_TRUE(sources->empty());
  auto chosen = sources->select("default");
  ASSERT_EQ(chosen.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(chosen.status().message().find("has no chat template (looked for chat_template.jinja"),
            std::string::npos);
}

TEST_F(ChatTemplateSourceTest, MalformedSourcesNameTheFileAndField) {
  struct Bad {
    std::string file, text, fragment;
  };
  const std::string config = (dir_ / "tokenizer_config.json").string();
  const std::string json = (dir_ / "chat_template.json").string();
  for (
      const Bad& bad : std::vector<Bad>{
          {"chat_template.json", "{not json", json + ": "},
          {"chat_template.json", "[1]", json + ": expected a JSON object"},
          {"chat_template.json", R"({"template": "x"})", json + ": field chat_template: missing"},
          {"chat_template.json", R"({"chat_template": 3})",
           json + ": field chat_template: expected a string"},
          {"tokenizer_config.json", R"({"chat_template": 3})",
           config + ": field chat_template: expected a string or a list"},
          {"tokenizer_config.json", R"({"chat_template": [{"name": "a"}]})",
           config + ": field chat_template[0].template: missing"},
          {"tokenizer_config.json", R"({"chat_template": ["x"]})",
           config + ": field chat_template[0]: expected an object"},
          {"tokenizer_config.json",
           R"({"chat_template": [{"name": "a", "template": "1"}, {"name": "a", "template": "2"}]})",
           config + ": field chat_template[1]: names template 'a' again with a different text"},
          {"chat_template.jinja", "ok \xC3(",
           (dir_ / "chat_template.jinja").string() + ": not valid UTF-8"},
      }) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write(bad.file, bad.text);
    auto sources = load();
    ASSERT_FALSE(sources.ok()) << bad.file << " " << bad.text;
    EXPECT_NE(sources.status().message().find(bad.fragment), std::string::npos)
        << bad.fragment << " not in: " << sources.status().message();
  }
  // The same name twice with the same text is harmless (transformers keeps the last).
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  write("tokenizer_config.json",
        R"({"chat_template": [{"name": "a", "template": "1"}, {"name": "a", "template": "1"}]})");
  EXPECT_TRUE(load().ok());
}

TEST_F(ChatTemplateSourceTest, FromFileIsTheDefault) {
  write("mine.jinja", "{{ messages }}");
  auto sources = ChatTemplateSources::from_file(dir_ / "mine.jinja");
  ASSERT_TRUE(sources.ok());
  EXPECT_EQ(sources->select("default")->text, "{{ messages }}");
  auto missing = ChatTemplateSources::from_file(dir_ / "nope.jinja");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find((dir_ / "nope.jinja").string() + ": no such file"),
            std::string::npos);
}

// Tokenizer::load keeps every source; chat_template() is the default only when it is unambiguous,
// and a conflict never stops tokenization.
TEST_F(ChatTemplateSourceTest, TokenizerLoadsTheTemplateFiles) {
  write_chat_layout(chat_layout("jinja_file"), dir_, /*with_tokenizer_json=*/true);
  auto tok = Tokenizer::load(dir_);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->chat_template(), layout_template("qwen3"));
  EXPECT_EQ((*tok)->eos_token(), "<|im_end|>");

  write("chat_template.jinja", layout_template("brief"));
  write("tokenizer_config.json", R"({"eos_token": "<|im_end|>", "chat_template": "other"})");
  tok = Tokenizer::load(dir_);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_TRUE((*tok)->chat_template().empty());
  EXPECT_EQ((*tok)->chat_templates().select("default").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*tok)->encode("hello", false).ok());

  write("chat_template.json", "{broken");
  tok = Tokenizer::load(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("chat_template.json"), std::string::npos) << tok.status();
}

}  // namespace
}  // namespace weft
