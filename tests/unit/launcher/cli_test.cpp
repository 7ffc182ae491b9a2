// The weft binary driven as a user would: subcommands, their JSON, their errors. References are
// the committed Hugging Face dumps (tokenizers, jinja2 + transformers, transformers logits).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "launcher/command_specs.h"
#include "model/random_model.h"
#include "nlohmann/json.hpp"
#include "tests/unit/launcher/weft_cli.h"

namespace weft {
namespace {

using namespace cli_testing;

TEST(CliTest, TokenizeAndDetokenizeMatchTokenizersDumps) {
  const auto ref = nlohmann::json::parse(read_file(kSource / "tests/tokenizer_data/reference.json"));
  const auto& cases = ref["tokenizers"]["qwen3"]["cases"];
  std::string input;
  for (int i = 0; i < 40; ++i) {
    input += nlohmann::json{{"text", cases[i]["text"]}, {"add_special_tokens", false}}.dump() + "\n";
  }
  RunResult r = weft("tokenize --model " + kQwen3.string(), input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line, detok_input;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto got = nlohmann::json::parse(line);
    EXPECT_EQ(got["ids"], cases[i]["ids_plain"]) << cases[i]["text"];
    detok_input += nlohmann::json{{"ids", cases[i]["ids_plain"]}}.dump() + "\n";
  }
  RunResult d = weft("detokenize --model " + kQwen3.string(), detok_input);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  std::istringstream dlines(d.out);
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(std::getline(dlines, line));
    EXPECT_EQ(nlohmann::json::parse(line)["text"], cases[i]["decode"]);
  }
}

TEST(CliTest, TokenizeReportsBadLinesAndKeepsGoing) {
  RunResult r = weft("tokenize --model " + kQwen3.string(), "not json\n{\"text\": 5}\n{\"text\": \"a\"}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos);
  EXPECT_NE(r.out.find("text: expected a string"), std::string::npos);
  EXPECT_NE(r.out.find("{\"ids\":[64]}"), std::string::npos);
}

TEST(CliTest, ChatTemplateMatchesJinja2) {
  // ordered_json: tojson in templates prints keys in the order the conversation gives them.
  const auto ref = nlohmann::ordered_json::parse(read_file(kSource / "tests/unit/chat_template/data/reference.json"));
  int compared = 0;
  for (const auto& c : ref["cases"]) {
    if (c["template"] != "qwen3" || !c.contains("output")) continue;
    const auto& conversation = ref["conversations"][c["conversation"].get<std::string>()];
    nlohmann::ordered_json request = {{"messages", conversation["messages"]},
                                      {"add_generation_prompt", c["add_generation_prompt"]}};
    for (const auto& [key, value] : conversation["extra"].items()) request[key] = value;
    RunResult r = weft("chat-template --model " + kQwen3.string(), request.dump());
    ASSERT_EQ(r.exit_code, 0) << r.err << " conversation " << c["conversation"];
    EXPECT_EQ(r.out, c["output"].get<std::string>()) << c["conversation"];
    ++compared;
  }
  EXPECT_GE(compared, 8);
}

TEST_F(TextGenerationTest, StreamedTextEqualsTheDecodeOfTheIds) {
  RunResult r = weft("generate --model " + dir_.string() +
                     " --prompt 'The capital of France' --max-tokens 24 --json --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  ASSERT_EQ(out["output_ids"].size(), 24u);
  RunResult d = weft("detokenize --model " + dir_.string(),
                     nlohmann::json{{"ids", out["output_ids"]}, {"skip_special_tokens", true}}.dump());
  EXPECT_EQ(nlohmann::json::parse(d.out)["text"], out["text"]);
  EXPECT_EQ(out["finish_reason"], "length");
}

TEST_F(TextGenerationTest, ChatPromptIsTheTemplateTokenizedWithoutSpecialTokens) {
  RunResult r = weft("generate --model " + dir_.string() +
                     " --prompt 'Hi there' --system 'Be brief.' --chat --max-tokens 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunResult t = weft("chat-template --model " + dir_.string(),
                     R"({"messages": [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "Hi there"}],
                         "add_generation_prompt": true})");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  RunResult ids = weft("tokenize --model " + dir_.string(),
                       nlohmann::json{{"text", t.out}, {"add_special_tokens", false}}.dump());
  EXPECT_EQ(nlohmann::json::parse(r.out)["prompt_ids"], nlohmann::json::parse(ids.out)["ids"]);
}

TEST_F(TextGenerationTest, StopStringCutsTheTextAndEndsTheSequence) {
  RunResult full = weft("generate --model " + dir_.string() + " --prompt 'Once upon' --max-tokens 40 --json");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::string text = nlohmann::json::parse(full.out)["text"];
  ASSERT_GT(text.size(), 12u);
  // A stop string from the middle of the greedy text (whole characters: ASCII bytes): the output
  // is the text before its first occurrence, and the sequence stops there.
  size_t pos = text.size() / 3;
  while (pos + 2 < text.size() && (static_cast<unsigned char>(text[pos]) >= 0x80 ||
                                    static_cast<unsigned char>(text[pos + 1]) >= 0x80)) {
    ++pos;
  }
  ASSERT_LT(pos + 2, text.size()) << "no ASCII pair in " << text;
  const std::string stop = text.substr(pos, 2);
  RunResult cut = weft("generate --model " + dir_.string() + " --prompt 'Once upon' --max-tokens 40 --json --stop " +
                       quote(stop));
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  const auto out = nlohmann::json::parse(cut.out);
  EXPECT_EQ(out["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(out["finish_reason"], "stop");
}

TEST(CliErrorTest, TruncatedModelFileIsNamed) {
  const fs::path dir = fs::temp_directory_path() / ("weft-cli-truncated-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path golden = kSource / "tests/golden/models/llama_gqa";
  fs::copy_file(golden / "config.json", dir / "config.json", fs::copy_options::overwrite_existing);
  const std::string bytes = read_file(golden / "model.safetensors");
  std::ofstream(dir / "model.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  RunResult r = weft("generate --model " + dir.string() + " --prompt-ids 1,2,3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// --quantize-lm-head on a file whose head is already block-quantized (a GGUF Q8_0 file, its head
// tied to the Q8_0 embedding): refused by name, not quantized twice; on a dense GGUF file it runs.
TEST(CliErrorTest, QuantizeLmHeadRefusesAnAlreadyQuantizedHead) {
  const fs::path gguf = kSource / "tests/golden/gguf";
  RunResult r = weft("generate --model " + (gguf / "tiny_llama.q8_0.gguf").string() +
                     " --quantize-lm-head --prompt-ids 1,2 --max-tokens 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--quantize-lm-head: the LM head (tied to model.embed_tokens) is already q8_0"),
            std::string::npos) << r.err;
  r = weft("generate --model " + (gguf / "tiny_llama.f16.gguf").string() +
           " --quantize-lm-head --prompt-ids 1,2 --max-tokens 2");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliErrorTest, UnknownFlagAndBadSamplingParameterAreNamed) {
  const std::string model = (kSource / "tests/golden/models/llama_gqa").string();
  RunResult r = weft("generate --model " + model + " --prompt-ids 1 --bogus 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  RunResult p = weft("generate --model " + model + " --prompt-ids 1 --top-p 1.5");
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("top_p"), std::string::npos) << p.err;
  RunResult v = weft("generate --model " + model + " --prompt-ids 1,99999");
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("99999"), std::string::npos) << v.err;
  RunResult m = weft("generate --model " + model + " --prompt-ids 1 --constraint-masks sometimes");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("--constraint-masks: expected overlap or after-forward, got 'sometimes'"), std::string::npos)
      << m.err;
}

// weft info says which layers attend through a sliding window (and whether KV is freed), and
// what Gemma computes differently (norms, GeGLU, soft-capping, per-layer RoPE).
TEST(CliTest, InfoShowsAttentionWindows) {
  const auto info = [](const char* model) {
    RunResult r = weft("info --model " + (kSource / "tests/golden/models" / model).string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_NE(info("mistral_window").find("attention: sliding window 12 on every layer (KV blocks behind it are freed)"),
            std::string::npos);
  EXPECT_NE(info("qwen2_window").find("attention: sliding window 10 on 2 of 3 layers (1,2), full causal on the others"),
            std::string::npos);
  EXPECT_NE(info("llama_gqa").find("attention: full causal on every layer"), std::string::npos);
  EXPECT_EQ(info("llama_gqa").find("soft-capping"), std::string::npos);
  const std::string gemma2 = info("gemma2_softcap");
  EXPECT_NE(
      gemma2.find("attention: sliding window 8 on 2 of 3 layers (0,2), full causal on the others"),
      std::string::npos);
  EXPECT_NE(gemma2.find("mlp: GeGLU (gelu_pytorch_tanh), embeddings x 8"), std::string::npos);
  EXPECT_NE(gemma2.find("soft-capping: attention 5, final logits 20"), std::string::npos);
  EXPECT_NE(info("gemma3_text")
                .find("rope: full-attention layers theta 1e+06, linear x4; sliding-window layers "
                      "theta 10000"),
            std::string::npos);
}

TEST(CliTest, GenerateJsonMatchesTransformersGreedy) {
  // llama_gqa prompt 0 (ids from tests/golden/models/llama_gqa/reference.safetensors).
  const std::string model = (kSource / "tests/golden/models/llama_gqa").string();
  RunResult r = weft("generate --model " + model + " --prompt-ids 1,2,3 --max-tokens 8 --json --ignore-eos");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["output_ids"].size(), 8u);
  EXPECT_EQ(out["steps"][0]["top_logprobs"].size(), 5u);
  EXPECT_EQ(out["steps"][0]["token"], out["output_ids"][0]);
}

// generation_config.json's sampling values are the defaults of a request that does not set them
// (vLLM's --generation-config auto); --generation-config none restores weft's (greedy for generate).
TEST(CliTest, GenerationConfigSamplingDefaultsApply) {
  const fs::path model = fs::temp_directory_path() / ("weft-cli-genconfig-" + std::to_string(::getpid()));
  fs::create_directories(model);
  const fs::path golden = kSource / "tests/golden/models/llama_gqa";
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(golden / f, model / f, fs::copy_options::overwrite_existing);
  }
  std::ofstream(model / "generation_config.json")
      << R"({"eos_token_id": 2, "do_sample": true, "temperature": 1.5, "top_k": 5, "max_new_tokens": 20})";
  const std::string base = "generate --threads 1 --model " + model.string() +
                           " --prompt-ids 1,2,3 --json --ignore-eos --request-seed 7";
  auto ids = [](const RunResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["output_ids"] : nlohmann::json();
  };
  const nlohmann::json from_file = ids(weft(base));
  EXPECT_EQ(from_file.size(), 20u) << "max_new_tokens is the default max_tokens";
  EXPECT_EQ(from_file, ids(weft(base + " --generation-config none --temperature 1.5 --top-k 5 --max-tokens 20")));
  const nlohmann::json greedy = ids(weft(base + " --generation-config none --max-tokens 20"));
  EXPECT_EQ(greedy, ids(weft(base + " --temperature 0")));
  EXPECT_NE(greedy, from_file) << "the file's temperature was not applied";

  RunResult bad_flag = weft(base + " --generation-config vllm");
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_NE(bad_flag.err.find("--generation-config: expected auto or none, got 'vllm'"), std::string::npos) << bad_flag.err;
  std::ofstream(model / "generation_config.json") << R"({"eos_token_id": 2, "top_p": 1.5})";
  RunResult bad_file = weft(base);
  EXPECT_NE(bad_file.exit_code, 0);
  EXPECT_NE(bad_file.err.find("generation_config.json: top_p"), std::string::npos) << bad_file.err;
  fs::remove_all(model);
}

// weft batch on hostile or unusual lines (issue 18): every line gets a record naming what was
// wrong, the good lines complete, and the job never crashes. A 150,000-deep line used to overflow
// the stack on every rerun; body.model naming another model was ignored; content given as text
// parts was refused though serve accepts it; tools were silently ignored.
TEST_F(TextGenerationTest, BatchRecordsEveryBadLineAndCompletesTheRest) {
  const fs::path work = dir_ / "batch";
  fs::create_directories(work);
  const std::string deep = std::string(150000, '[') + std::string(150000, ']');
  const std::string chat = R"("url":"/v1/chat/completions","body":{"max_tokens":3,"temperature":0,)";
  {
    std::ofstream f(work / "in.jsonl");
    f << R"({"custom_id":"deep","url":"/v1/completions","body":{"prompt":"x","max_tokens":2,"extra":)" << deep << "}}\n";
    f << R"({"custom_id":"parts",)" << chat
      << R"("messages":[{"role":"user","content":[{"type":"text","text":"Hello "},{"type":"text","text":"there"}]}]}})" << "\n";
    f << R"({"custom_id":"plain",)" << chat << R"("messages":[{"role":"user","content":"Hello \nthere"}]}})" << "\n";
    f << R"({"custom_id":"other-model","url":"/v1/completions","body":{"model":"gpt-9","prompt":"x","max_tokens":2}})" << "\n";
    f << R"({"custom_id":"tools",)" << chat
      << R"("messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}})" << "\n";
    // Assistant prefill is honoured; echo (which serve implements) is refused by name, not ignored.
    f << R"({"custom_id":"prefill",)" << chat
      << R"("continue_final_message":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Hel"}]}})"
      << "\n";
    f << R"({"custom_id":"echo",)" << chat << R"("echo":true,"messages":[{"role":"user","content":"hi"}]}})" << "\n";
    f << R"({"custom_id":"debug",)" << chat << R"("weft_debug":true,"messages":[{"role":"user","content":"hi"}]}})"
      << "\n";
    f << R"({"custom_id":"both-ends",)" << chat
      << R"("continue_final_message":true,"add_generation_prompt":true,"messages":[{"role":"user","content":"hi"}]}})"
      << "\n";
    f << R"({"custom_id":"image",)" << chat
      << R"("messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}})" << "\n";
  }
  const std::string base = "batch --threads 1 --model " + dir_.string() + " --served-model-name m --input " +
                           (work / "in.jsonl").string() + " --output " + (work / "out.jsonl").string() +
                           " --errors " + (work / "err.jsonl").string();
  RunResult r = weft(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, nlohmann::json> out, err;
  std::vector<nlohmann::json> anonymous_errors;
  for (auto [file, into] : {std::pair{"out.jsonl", &out}, std::pair{"err.jsonl", &err}}) {
    std::istringstream lines(read_file(work / file));
    for (std::string line; std::getline(lines, line);) {
      nlohmann::json record = nlohmann::json::parse(line);
      if (record["custom_id"].is_string()) {
        (*into)[record["custom_id"].get<std::string>()] = record;
      } else {
        anonymous_errors.push_back(record);
      }
    }
  }
  ASSERT_EQ(out.count("parts"), 1u) << read_file(work / "err.jsonl");
  ASSERT_EQ(out.count("plain"), 1u);
  EXPECT_EQ(out["parts"]["response"]["body"]["choices"][0]["message"],
            out["plain"]["response"]["body"]["choices"][0]["message"]) << "text parts render joined with \\n (as vLLM)";
  ASSERT_EQ(anonymous_errors.size(), 1u);
  EXPECT_NE(anonymous_errors[0].dump().find("nested deeper than 64"), std::string::npos) << anonymous_errors[0];
  EXPECT_EQ(err["other-model"]["error"]["code"], "model_not_found") << err["other-model"];
  EXPECT_NE(err["other-model"]["error"]["message"].get<std::string>().find("gpt-9"), std::string::npos);
  // Tools are read as weft serve reads them (tool_choice auto: the model may answer in text);
  // e2e_tool_calling checks batch's tool calls against the server's.
  ASSERT_EQ(out.count("tools"), 1u) << err["tools"];
  EXPECT_EQ(out["tools"]["response"]["status_code"], 200) << out["tools"];
  EXPECT_NE(err["image"]["error"]["message"].get<std::string>().find("body.messages[0].content[0]"),
            std::string::npos) << err["image"];
  EXPECT_EQ(out.count("prefill"), 1u) << err["prefill"];
  EXPECT_NE(err["echo"]["error"]["message"].get<std::string>().find("body.echo"), std::string::npos) << err["echo"];
  EXPECT_NE(err["debug"]["error"]["message"].get<std::string>().find("body.weft_debug"), std::string::npos)
      << err["debug"];
  EXPECT_NE(err["both-ends"]["error"]["message"].get<std::string>().find("body.continue_final_message"),
            std::string::npos) << err["both-ends"];

  // Rerun: nothing is redone, nothing crashes.
  RunResult again = weft(base);
  EXPECT_EQ(again.exit_code, 0) << again.err;

  // An input that is a directory is an error, not "done: 0 lines".
  RunResult directory = weft("batch --threads 1 --model " + dir_.string() + " --input " + work.string() +
                             " --output " + (work / "d.jsonl").string());
  EXPECT_NE(directory.exit_code, 0);
  EXPECT_NE(directory.err.find("is a directory"), std::string::npos) << directory.err;
  fs::remove_all(work);
}

// weft chat-template on a message nested 300,000 deep: an error naming the limit, no crash.
TEST(CliTest, ChatTemplateRefusesDeepNesting) {
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  RunResult r = weft("chat-template --model " + kQwen3.string(),
                     R"({"messages":[{"role":"user","content":"hi","x":)" + deep + "}]}");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("nested deeper than 64"), std::string::npos) << r.err;
}

// weft perplexity: bad input ends with exit 2 and a message naming the flag; a good run prints
// one JSON object whose numbers agree with each other.
TEST_F(TextGenerationTest, PerplexityNamesBadInputAndReportsConsistentNumbers) {
  const fs::path text = dir_ / "perplexity.txt";
  {
    std::ofstream f(text);
    f << "The capital of France is Paris. The capital of Italy is Rome. ";
    f << "The capital of Spain is Madrid, and the capital of Portugal is Lisbon.";
  }
  const std::string base = "perplexity --threads 1 --model " + dir_.string();
  struct Bad {
    std::string flags;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{{"", "--text FILE is required"},
                                         {" --text /nonexistent/x.txt", "--text /nonexistent/x.txt: cannot open"},
                                         {" --text " + text.string() + " --context 1", "--context 1: must be in [2, "},
                                         {" --text " + text.string() + " --context 8 --stride 9",
                                          "--stride 9: must be in [1, --context 8]"}}) {
    RunResult r = weft(base + bad.flags);
    EXPECT_EQ(r.exit_code, 2) << bad.flags;
    EXPECT_NE(r.err.find(bad.message), std::string::npos) << bad.flags << ": " << r.err;
  }
  RunResult r = weft(base + " --text " + text.string() + " --context 8 --stride 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["context"], 8);
  EXPECT_EQ(out["stride"], 4);
  EXPECT_GT(out["tokens"].get<int>(), 8);
  EXPECT_GT(out["windows"].get<int>(), 1);
  EXPECT_NEAR(std::log(out["perplexity"].get<double>()), out["nll_per_token"].get<double>(), 1e-9);
}

// weft perplexity --save-logprobs / --kl-reference: the same model against its own saved rows
// diverges by nothing and agrees on every top token; the int8-quantized model diverges a little;
// a reference of another run shape or another file is refused by name.
TEST_F(TextGenerationTest, PerplexityKlDivergenceAgainstSavedDistributions) {
  const fs::path text = dir_ / "kl.txt";
  {
    std::ofstream f(text);
    f << "The capital of France is Paris. The capital of Italy is Rome. ";
    f << "The capital of Spain is Madrid, and the capital of Portugal is Lisbon.";
  }
  const fs::path saved = dir_ / "reference.logprobs";
  const std::string base = "perplexity --threads 1 --model " + dir_.string() + " --text " + text.string();
  RunResult r = weft(base + " --context 8 --stride 4 --save-logprobs " + saved.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plain = nlohmann::json::parse(r.out);
  ASSERT_GT(plain["tokens"].get<int64_t>(), 8);
  // Header (8 + 5 x 8 bytes) and one float32 row of the vocabulary per scored token.
  EXPECT_GT(fs::file_size(saved), 48u);
  EXPECT_EQ((fs::file_size(saved) - 48) % (4 * plain["tokens"].get<uint64_t>()), 0u);

  r = weft(base + " --context 8 --stride 4 --kl-reference " + saved.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto kl = nlohmann::json::parse(r.out)["kl_divergence"];
  EXPECT_EQ(kl["tokens"], plain["tokens"]);
  EXPECT_LT(kl["max"].get<double>(), 1e-6);
  EXPECT_EQ(kl["top1_agreement"].get<double>(), 1.0);

  r = weft(base + " --context 8 --stride 4 --quantize int8 --kl-reference " + saved.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  kl = nlohmann::json::parse(r.out)["kl_divergence"];
  EXPECT_GT(kl["mean"].get<double>(), 1e-6);
  EXPECT_LT(kl["mean"].get<double>(), 0.5);
  EXPECT_GE(kl["max"].get<double>(), kl["p99"].get<double>());
  EXPECT_GE(kl["p99"].get<double>(), 0.0);

  r = weft(base + " --context 8 --stride 2 --kl-reference " + saved.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("saved with --stride 4, this run has 2"), std::string::npos) << r.err;
  r = weft(base + " --context 8 --stride 4 --kl-reference " + text.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a file written by weft perplexity --save-logprobs"), std::string::npos) << r.err;
}

// --help and -h on every subcommand: exit 0, the usage, and every flag of the table its parser
// uses (command_specs.h), so help and parser cannot drift apart. Every listed flag is accepted.
TEST(CliHelpTest, EverySubcommandListsEveryFlagItAccepts) {
  RunResult top = weft("--help");
  ASSERT_EQ(top.exit_code, 0);
  ASSERT_FALSE(command_specs().empty());
  for (const CommandSpec& spec : command_specs()) {
    SCOPED_TRACE(spec.name);
    EXPECT_NE(top.out.find("  " + spec.name + " "), std::string::npos) << top.out;
    RunResult help = weft(spec.name + " --help");
    ASSERT_EQ(help.exit_code, 0) << help.err;
    EXPECT_EQ(help.out.rfind(spec.usage, 0), 0u) << help.out;
    std::set<std::string> seen;
    std::string every_flag;
    for (const FlagSpec& f : spec.flags.flags()) {
      EXPECT_TRUE(seen.insert(f.name).second) << "--" << f.name << " is in the table twice";
      EXPECT_FALSE(f.help.empty()) << "--" << f.name;
      const std::string label = "\n  --" + f.name + (f.name == "help" ? ", -h" : "") + (f.is_bool() ? "" : " " + f.value);
      const size_t at = help.out.find(label);
      ASSERT_NE(at, std::string::npos) << label << " not in:\n" << help.out;
      const size_t eol = help.out.find('\n', at + 1);
      EXPECT_NE(help.out.substr(at, eol - at).find(f.help), std::string::npos) << "--" << f.name;
      if (f.name != "help") every_flag += " --" + f.name + (f.is_bool() ? "" : " 1");
    }
    EXPECT_TRUE(seen.count("help"));
    RunResult short_help = weft(spec.name + " -h");
    EXPECT_EQ(short_help.exit_code, 0) << short_help.err;
    EXPECT_EQ(short_help.out, help.out);
    // The parser takes every flag the help lists (values are not read before --help answers).
    RunResult all = weft(spec.name + every_flag + " --help");
    EXPECT_EQ(all.exit_code, 0) << all.err;
    RunResult unknown = weft(spec.name + " --no-such-flag");
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("unknown flag --no-such-flag"), std::string::npos) << unknown.err;
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Speculative decoding's start-up errors: a draft that cannot propose for the target, K out of
// range, flags that need --speculative; each names what is wrong.
TEST(CliErrorTest, SpeculativeDecodingRefusesDraftsAndFlagsItCannotUse) {
  const std::string target = (kSource / "configs/default-model").string();
  const std::string draft = (kSource / "configs/default-draft").string();
  const std::string golden = (kSource / "tests/golden/models/llama_gqa").string();
  // A draft without the target's tokenizer.
  RunResult r = weft("generate --model " + target + " --prompt hi --draft-model " + golden);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--draft-model " + golden), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokenizer"), std::string::npos) << r.err;
  // A draft whose tokenizer maps one id to another token.
  const fs::path edited = fs::temp_directory_path() / ("weft-cli-draft-" + std::to_string(::getpid()));
  fs::create_directories(edited);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer_config.json"}) {
    fs::copy_file(fs::path(draft) / f, edited / f, fs::copy_options::overwrite_existing);
  }
  nlohmann::json tok = nlohmann::json::parse(read_file(fs::path(draft) / "tokenizer.json"));
  auto& vocab = tok["model"]["vocab"];
  std::string a, b;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (it.value() == 300) a = it.key();
    if (it.value() == 301) b = it.key();
  }
  ASSERT_FALSE(a.empty() || b.empty());
  vocab[a] = 301;
  vocab[b] = 300;
  std::ofstream(edited / "tokenizer.json") << tok.dump();
  r = weft("generate --model " + target + " --prompt hi --draft-model " + edited.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("token 300"), std::string::npos) << r.err;
  fs::remove_all(edited);
  // A draft with a larger vocabulary than the target's (token-id models, no tokenizer.json).
  const fs::path big = fs::temp_directory_path() / ("weft-cli-bigdraft-" + std::to_string(::getpid()));
  RandomModelSpec spec;
  spec.vocab_size = 1024;
  spec.hidden_size = 64;
  spec.intermediate_size = 128;
  spec.num_layers = 1;
  spec.num_heads = 4;
  spec.num_kv_heads = 2;
  ASSERT_TRUE(write_random_model(big, spec).ok());
  r = weft("generate --model " + golden + " --prompt-ids 1,2 --draft-model " + big.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("1024 tokens, more than the target's 512"), std::string::npos) << r.err;
  fs::remove_all(big);
  // K out of range, and flags without --speculative.
  r = weft("generate --model " + target + " --prompt hi --speculative ngram --num-speculative-tokens 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--num-speculative-tokens: must be in [1, 16], got 0"), std::string::npos) << r.err;
  r = weft("generate --model " + target + " --prompt hi --speculative ngram --num-speculative-tokens 17");
  EXPECT_NE(r.err.find("got 17"), std::string::npos) << r.err;
  r = weft("generate --model " + target + " --prompt hi --num-speculative-tokens 3");
  EXPECT_NE(r.err.find("--num-speculative-tokens: needs --speculative"), std::string::npos) << r.err;
  r = weft("generate --model " + golden + " --prompt-ids 1 --speculative draft");
  EXPECT_NE(r.err.find("--draft-model DIR is required"), std::string::npos) << r.err;
  r = weft("generate --model " + target + " --prompt hi --speculative eagle");
  EXPECT_NE(r.err.find("--speculative: expected none, ngram or draft, got 'eagle'"), std::string::npos) << r.err;
  // The default model's draft needs no flag beyond --speculative draft.
  r = weft("generate --model " + target + " --prompt hi --max-tokens 4 --speculative draft");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace weft
