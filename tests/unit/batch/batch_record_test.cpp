// OpenAI Batch lines in, records out: shape errors name the field, records follow the OpenAI
// Batch output format.
#include "batch/batch_record.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

std::string parse_error(const std::string& line, std::optional<std::string>* id = nullptr) {
  auto parsed = parse_batch_line(line, id);
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(BatchRecordTest, ParsesChatAndCompletionLines) {
  std::optional<std::string> id;
  auto chat = parse_batch_line(
      R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}})",
      &id);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->custom_id, "a");
  EXPECT_EQ(*id, "a");
  EXPECT_EQ(chat->endpoint, BatchEndpoint::kChatCompletions);
  EXPECT_EQ(chat->body["max_tokens"], 5);
  auto comp = parse_batch_line(R"({"custom_id":"b","url":"/v1/completions","body":{"prompt":[1,2,3]}})", nullptr);
  ASSERT_TRUE(comp.ok()) << comp.status();
  EXPECT_EQ(comp->endpoint, BatchEndpoint::kCompletions);
}

TEST(BatchRecordTest, ErrorsNameTheFieldAndKeepTheCustomId) {
  EXPECT_EQ(parse_error("{oops").rfind("the line: not valid JSON", 0), 0u);
  EXPECT_EQ(parse_error(std::string(150000, '[') + std::string(150000, ']')),
            "the line: arrays/objects nested deeper than 64 levels");
  EXPECT_EQ(parse_error("[1]"), "the line is not a JSON object");
  EXPECT_EQ(parse_error(R"({"url":"/v1/completions"})"), "custom_id: expected a string");
  std::optional<std::string> id;
  EXPECT_EQ(parse_error(R"({"custom_id":"x","url":"/v1/embeddings","body":{}})", &id),
            "url: \"/v1/embeddings\" is not supported (expected /v1/chat/completions or /v1/completions)");
  EXPECT_EQ(id, "x");
  EXPECT_EQ(parse_error(R"({"custom_id":"x","method":"GET","url":"/v1/completions","body":{}})"),
            "method: expected \"POST\"");
  EXPECT_EQ(parse_error(R"({"custom_id":"x","url":"/v1/completions","body":3})"), "body: expected an object");
  EXPECT_EQ(parse_error(R"({"custom_id":"x","url":"/v1/completions","body":{}})"),
            "body.prompt: expected a string or an array of token ids");
  EXPECT_EQ(parse_error(R"({"custom_id":"x","url":"/v1/chat/completions","body":{"messages":[]}})"),
            "body.messages: expected a non-empty array");
}

TEST(BatchRecordTest, OutputRecordsFollowTheOpenAiBatchFormat) {
  BatchResult r;
  r.endpoint = BatchEndpoint::kChatCompletions;
  r.custom_id = "req-1";
  r.model = "m";
  r.prompt_tokens = 7;
  r.choices = {{"Hello", {5, 6}, "stop"}, {"Hi", {9}, "length"}};
  const nlohmann::json rec = nlohmann::json::parse(record_line(output_record(r, 1234)));
  EXPECT_EQ(rec["custom_id"], "req-1");
  EXPECT_EQ(rec["id"], batch_request_id("req-1"));
  EXPECT_EQ(rec["id"].get<std::string>().rfind("batch_req_", 0), 0u);
  EXPECT_TRUE(rec["error"].is_null());
  EXPECT_EQ(rec["response"]["status_code"], 200);
  const nlohmann::json& body = rec["response"]["body"];
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["created"], 1234);
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_FALSE(body["choices"][0].contains("token_ids"));
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(body["usage"]["total_tokens"], 10);

  r.endpoint = BatchEndpoint::kCompletions;
  r.include_token_ids = true;
  const nlohmann::json comp = nlohmann::json::parse(record_line(output_record(r, 1)));
  EXPECT_EQ(comp["response"]["body"]["object"], "text_completion");
  EXPECT_EQ(comp["response"]["body"]["choices"][0]["text"], "Hello");
  EXPECT_EQ(comp["response"]["body"]["choices"][0]["token_ids"], nlohmann::json({5, 6}));
}

TEST(BatchRecordTest, PromptLogprobsGoWhereVllmPutsThem) {
  BatchResult r;
  r.endpoint = BatchEndpoint::kCompletions;
  r.custom_id = "req-2";
  r.model = "m";
  r.prompt_tokens = 2;
  r.choices = {{"a", {5}, "length"}, {"b", {6}, "length"}};
  r.prompt_logprobs = 0;
  r.prompt_logprobs_list = nlohmann::json::array({nullptr, {{"7", {{"logprob", -1.0}, {"rank", 2}}}}});
  nlohmann::json body = nlohmann::json::parse(record_line(output_record(r, 1)))["response"]["body"];
  EXPECT_EQ(body["choices"][0]["prompt_logprobs"], r.prompt_logprobs_list);
  EXPECT_EQ(body["choices"][1]["prompt_logprobs"], r.prompt_logprobs_list);
  EXPECT_FALSE(body.contains("prompt_logprobs"));
  r.endpoint = BatchEndpoint::kChatCompletions;
  body = nlohmann::json::parse(record_line(output_record(r, 1)))["response"]["body"];
  EXPECT_EQ(body["prompt_logprobs"], r.prompt_logprobs_list);
  EXPECT_FALSE(body["choices"][0].contains("prompt_logprobs"));
  // Not asked for: absent.
  r.prompt_logprobs.reset();
  body = nlohmann::json::parse(record_line(output_record(r, 1)))["response"]["body"];
  EXPECT_FALSE(body.contains("prompt_logprobs"));
}

TEST(BatchRecordTest, ErrorRecordsCarryTheLineAndNeverThrowOnBadUtf8) {
  const std::string line = record_line(error_record(std::nullopt, 12, "invalid_request", "bad \xff byte"));
  ASSERT_EQ(line.back(), '\n');
  const nlohmann::json rec = nlohmann::json::parse(line);
  EXPECT_TRUE(rec["custom_id"].is_null());
  EXPECT_EQ(rec["line"], 12);
  EXPECT_EQ(rec["error"]["code"], "invalid_request");
  EXPECT_EQ(rec["response"]["status_code"], 400);
}

}  // namespace
}  // namespace weft
