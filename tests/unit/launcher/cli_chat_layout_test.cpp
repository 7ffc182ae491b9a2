// The weft binary on chat templates kept in today's file layouts (issue 16): chat_template.jinja,
// chat_template.json, named template lists, --chat-template FILE and --chat-template-name, through
// chat-template, generate --chat, batch and serve. References: transformers 5's
// apply_chat_template (tests/unit/tokenizer/data/chat_template_layouts/reference.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/unit/launcher/weft_cli.h"
#include "tests/unit/tokenizer/chat_template_layouts.h"

namespace weft {
namespace {

using namespace cli_testing;

// Chat templates from today's file layouts (issue 16): the directories of
// tests/unit/tokenizer/data/chat_template_layouts/reference.json rendered as transformers 5's
// apply_chat_template renders them.
class ChatLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("weft-cli-layouts-" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  // The case's directory, with the qwen3 tokenizer.json.
  fs::path layout(const std::string& name) {
    const fs::path dir = root_ / name;
    testing::write_chat_layout(testing::chat_layout(name), dir, /*with_tokenizer_json=*/true);
    return dir;
  }
  static std::string request(const nlohmann::ordered_json& c) {
    return nlohmann::ordered_json{{"messages", testing::chat_layouts()["conversations"][c["conversation"].get<std::string>()]},
                                  {"add_generation_prompt", true}}
        .dump();
  }
  fs::path root_;
};

TEST_F(ChatLayoutTest, ChatTemplateRendersEveryLayoutAsTransformers) {
  int compared = 0;
  for (const auto& c : testing::chat_layouts()["cases"]) {
    if (!c.contains("output")) continue;
    const std::string name = c["name"];
    std::string flags = " --model " + layout(name).string();
    if (!c["template_name"].is_null()) flags += " --chat-template-name " + c["template_name"].get<std::string>();
    RunResult r = weft("chat-template" + flags, request(c));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, c["output"].get<std::string>()) << name;
    ++compared;
  }
  EXPECT_GE(compared, 7);
}

TEST_F(ChatLayoutTest, ConflictingSourcesAreRefusedUntilOneIsChosen) {
  const auto& c = testing::chat_layout("jinja_conflicts_with_config");
  const fs::path dir = layout("jinja_conflicts_with_config");
  RunResult r = weft("chat-template --model " + dir.string(), request(c));
  EXPECT_EQ(r.exit_code, 2);
  for (const std::string fragment :
       {std::string("conflicting template sources for chat template 'default'"), (dir / "chat_template.jinja").string(),
        (dir / "tokenizer_config.json").string() + " field chat_template", std::string("--chat-template FILE")}) {
    EXPECT_NE(r.err.find(fragment), std::string::npos) << fragment << " not in: " << r.err;
  }
  // Choosing the file transformers silently prefers renders what transformers renders.
  RunResult chosen = weft("chat-template --model " + dir.string() + " --chat-template " +
                              (dir / "chat_template.jinja").string(), request(c));
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(chosen.out, c["transformers_picks"].get<std::string>());
  // Tokenization does not render: it still works.
  RunResult tokenize = weft("tokenize --model " + dir.string(), R"({"text": "hi"})");
  EXPECT_EQ(tokenize.exit_code, 0) << tokenize.err;
}

TEST_F(ChatLayoutTest, UnknownTemplateNameListsTheNames) {
  const auto& c = testing::chat_layout("unknown_name");
  const fs::path dir = layout("unknown_name");
  RunResult r = weft("chat-template --model " + dir.string() + " --chat-template-name tool_use", request(c));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--chat-template-name tool_use: no chat template named 'tool_use'; " + dir.string() +
                       " has: brief (" + (dir / "tokenizer_config.json").string() + " field chat_template[1]), default ("),
            std::string::npos)
      << r.err;
}

TEST_F(ChatLayoutTest, ChatTemplateFileOverridesTheModels) {
  const fs::path dir = layout("jinja_file");
  const fs::path file = root_ / "brief.jinja";
  std::ofstream(file) << testing::layout_template("brief");
  const auto& named = testing::chat_layout("config_list_named");  // the brief template's render
  RunResult r = weft("chat-template --model " + dir.string() + " --chat-template " + file.string(), request(named));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, named["output"].get<std::string>());
  RunResult both = weft("chat-template --model " + dir.string() + " --chat-template " + file.string() +
                        " --chat-template-name brief", request(named));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("does not apply with --chat-template FILE"), std::string::npos) << both.err;
  RunResult missing = weft("chat-template --model " + dir.string() + " --chat-template " + (root_ / "nope").string(),
                           request(named));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--chat-template: " + (root_ / "nope").string() + ": no such file"), std::string::npos)
      << missing.err;
}

// generate --chat, batch and serve with templates kept only in chat_template.jinja, or chosen by
// flag: a random model over the qwen3 vocabulary under each layout.
TEST_F(TextGenerationTest, ChatTemplateLayoutsDriveGenerateBatchAndServe) {
  const fs::path root = dir_ / "layouts";
  auto model_with = [&](const std::string& name) {
    const fs::path dir = root / name;
    testing::write_chat_layout(testing::chat_layout(name), dir, /*with_tokenizer_json=*/true);
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string f = entry.path().filename().string();
      if (entry.is_regular_file() && f.rfind("tokenizer", 0) != 0) fs::copy_file(entry.path(), dir / f);
    }
    return dir;
  };
  const auto& generate_case = testing::chat_layout("jinja_file_generate");
  const fs::path jinja_model = model_with("jinja_file_generate");
  const std::string chat = " --prompt 'Hi there' --system 'Be brief.' --chat --max-tokens 1 --json --threads 1";
  RunResult r = weft("generate --model " + jinja_model.string() + chat);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt_ids"], generate_case["ids"]);

  // --chat-template FILE: the prompt is the file's render.
  const fs::path brief = root / "brief.jinja";
  std::ofstream(brief) << testing::layout_template("brief");
  RunResult overridden = weft("generate --model " + jinja_model.string() + chat + " --chat-template " + brief.string());
  ASSERT_EQ(overridden.exit_code, 0) << overridden.err;
  RunResult rendered = weft("chat-template --model " + jinja_model.string() + " --chat-template " + brief.string(),
                            R"({"messages": [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "Hi there"}], "add_generation_prompt": true})");
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  RunResult ids = weft("tokenize --model " + jinja_model.string(),
                       nlohmann::json{{"text", rendered.out}, {"add_special_tokens", false}}.dump());
  EXPECT_EQ(nlohmann::json::parse(overridden.out)["prompt_ids"], nlohmann::json::parse(ids.out)["ids"]);
  RunResult without_chat = weft("generate --model " + jinja_model.string() + " --prompt hi --chat-template " + brief.string());
  EXPECT_EQ(without_chat.exit_code, 2);
  EXPECT_NE(without_chat.err.find("apply only with --chat"), std::string::npos) << without_chat.err;

  // A named template from tokenizer_config.json's list.
  const auto& named = testing::chat_layout("config_list_named");
  const fs::path list_model = model_with("config_list_named");
  RunResult by_name = weft("generate --model " + list_model.string() + chat + " --chat-template-name brief");
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  RunResult unknown = weft("generate --model " + list_model.string() + chat + " --chat-template-name tool_use");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("has: brief ("), std::string::npos) << unknown.err;

  // batch: the chat line's prompt is the chosen template's render (its usage counts its tokens).
  const fs::path conflict_model = model_with("jinja_conflicts_with_config");
  const fs::path in = root / "in.jsonl";
  std::ofstream(in) << nlohmann::json{{"custom_id", "c"}, {"method", "POST"}, {"url", "/v1/chat/completions"},
                                      {"body", {{"max_tokens", 1}, {"temperature", 0},
                                                {"messages", testing::chat_layouts()["conversations"]["multi_turn"]}}}}
                           .dump()
                    << "\n";
  const std::string batch = "batch --threads 1 --input " + in.string() + " --model ";
  RunResult refused = weft(batch + conflict_model.string() + " --output " + (root / "a.jsonl").string());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("conflicting template sources"), std::string::npos) << refused.err;
  RunResult batched = weft(batch + conflict_model.string() + " --output " + (root / "b.jsonl").string() +
                           " --chat-template " + brief.string());
  ASSERT_EQ(batched.exit_code, 0) << batched.err;
  const auto record = nlohmann::json::parse(read_file(root / "b.jsonl"));
  EXPECT_EQ(record["response"]["body"]["usage"]["prompt_tokens"], named["ids"].size()) << record;

  // serve refuses to start on conflicting sources rather than serve without a chat endpoint.
  RunResult serve = weft("serve --threads 1 --port 0 --model " + conflict_model.string());
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_NE(serve.err.find("conflicting template sources"), std::string::npos) << serve.err;
  fs::remove_all(root);
}

}  // namespace
}  // namespace weft
