// The gRPC Generate service end to end: an in-process engine and server, a real gRPC client.
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <thread>

#include "engine/local_engine.h"
#include "engine/text_detokenizer.h"
#include "gtest/gtest.h"
#include "model/random_model.h"
#include "proto/generation_service.grpc.pb.h"
#include "serving/grpc_server.h"
#include "tokenizer/chat_template/chat_template.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
namespace pb = weft::serving;

class GrpcGenerateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("weft-grpc-model-" + std::to_string(::getpid())));
    RandomModelSpec spec;
    spec.vocab_size = 151669;
    spec.hidden_size = 16;
    spec.intermediate_size = 32;
    spec.num_layers = 1;
    spec.num_heads = 2;
    spec.num_kv_heads = 1;
    ASSERT_TRUE(write_random_model(*dir_, spec).ok());
    const fs::path tok = fs::path(WEFT_SOURCE_DIR) / "tests/tokenizer_data/fixtures/qwen3";
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(tok / f, *dir_ / f, fs::copy_options::overwrite_existing);
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  void SetUp() override {
    auto tokenizer = Tokenizer::load(*dir_);
    ASSERT_TRUE(tokenizer.ok());
    tokenizer_ = *tokenizer;
    LocalEngineOptions o;
    o.model_dir = *dir_;
    o.num_threads = 1;
    o.kv.max_blocks = 64;
    auto local = LocalEngine::create(o, text_detokenizers(tokenizer_));
    ASSERT_TRUE(local.ok()) << local.status();
    owner_ = std::shared_ptr<LocalEngine>(std::move(*local));
    engine_ = std::make_unique<AsyncEngine>(owner_, owner_->engine());
    engine_->start();
    ServedModel model;
    model.name = "tiny";
    model.max_model_len = 512;
    model.vocab_size = 151669;
    model.tokenizer = tokenizer_;
    auto tmpl = ChatTemplate::parse(tokenizer_->chat_template());
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    model.chat_template = std::make_shared<ChatTemplate>(std::move(*tmpl));
    auto server = GrpcServer::start("127.0.0.1:0", *engine_, model, metrics_, "");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials());
    stub_ = pb::Generation::NewStub(channel);
  }

  void TearDown() override {
    if (server_) server_->shutdown(std::chrono::milliseconds(100));
    engine_.reset();
  }

  static fs::path* dir_;
  std::shared_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<LocalEngine> owner_;
  std::unique_ptr<AsyncEngine> engine_;
  ServingMetrics metrics_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<pb::Generation::Stub> stub_;
};
fs::path* GrpcGenerateTest::dir_ = nullptr;

TEST_F(GrpcGenerateTest, StreamsTokensWhoseTextIsTheirDecode) {
  pb::GenerateRequest req;
  req.set_text("The capital of France");
  req.mutable_sampling()->set_max_tokens(12);
  req.mutable_sampling()->set_temperature(0);
  req.mutable_sampling()->set_ignore_eos(true);
  req.mutable_sampling()->set_logprobs(2);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  pb::GenerateResponse r;
  std::vector<int32_t> ids;
  std::string text, id, finish;
  int messages = 0;
  pb::Usage usage;
  while (reader->Read(&r)) {
    ++messages;
    if (id.empty()) id = r.id();
    EXPECT_EQ(r.id(), id);
    for (const auto& c : r.choices()) {
      ids.insert(ids.end(), c.token_ids().begin(), c.token_ids().end());
      text += c.text();
      for (const auto& lp : c.logprobs()) EXPECT_EQ(lp.top_logprobs_size(), 2);
      if (!c.finish_reason().empty()) finish = c.finish_reason();
    }
    if (r.has_usage()) usage = r.usage();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_GT(messages, 1);
  ASSERT_EQ(ids.size(), 12u);
  EXPECT_EQ(text, tokenizer_->decode(ids, true));
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage.completion_tokens(), 12);
  auto prompt = tokenizer_->encode("The capital of France", true);
  EXPECT_EQ(usage.prompt_tokens(), static_cast<int64_t>(prompt->size()));
}

TEST_F(GrpcGenerateTest, AChatRequestIsRenderedWithTheTemplate) {
  // Regression: the request kind was read before the request was converted, so every chat
  // request failed with "prompt: required".
  pb::GenerateRequest req;
  pb::ChatMessage* m = req.mutable_chat()->add_messages();
  m->set_role("user");
  m->set_content("Hello");
  req.mutable_sampling()->set_max_tokens(3);
  req.mutable_sampling()->set_temperature(0);
  req.mutable_sampling()->set_ignore_eos(true);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  pb::GenerateResponse r;
  pb::Usage usage;
  while (reader->Read(&r)) {
    if (r.has_usage()) usage = r.usage();
  }
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(usage.completion_tokens(), 3);
  // The prompt is the rendered conversation, longer than the message's own tokens.
  EXPECT_GT(usage.prompt_tokens(), static_cast<int64_t>(tokenizer_->encode("Hello", false)->size()));
}

TEST_F(GrpcGenerateTest, ErrorsMapToStatusCodes) {
  pb::GenerateRequest req;
  req.set_text("x");
  req.set_model("nope");
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  pb::GenerateResponse r;
  while (reader->Read(&r)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);

  pb::GenerateRequest bad;
  bad.set_text("x");
  bad.mutable_sampling()->set_top_p(3.0f);
  grpc::ClientContext ctx2;
  auto reader2 = stub_->Generate(&ctx2, bad);
  while (reader2->Read(&r)) {
  }
  const grpc::Status s = reader2->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("top_p"), std::string::npos) << s.error_message();
}

// Fields of another weft.serving proto (tool calling, say) arrive as unknown fields: refused by
// number and place, never dropped.
TEST_F(GrpcGenerateTest, UnknownFieldsAreRefusedNotIgnored) {
  auto expect_refused = [&](const pb::GenerateRequest& req, const std::string& where) {
    grpc::ClientContext ctx;
    auto reader = stub_->Generate(&ctx, req);
    pb::GenerateResponse r;
    while (reader->Read(&r)) {
    }
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message().rfind(where + ": not a field", 0), 0u) << s.error_message();
  };
  pb::GenerateRequest tools;  // as a client might send a "tools" JSON string as field 6
  pb::ChatMessage* m = tools.mutable_chat()->add_messages();
  m->set_role("user");
  m->set_content("Hello");
  tools.GetReflection()->MutableUnknownFields(&tools)->AddLengthDelimited(6, R"([{"type": "function"}])");
  expect_refused(tools, "GenerateRequest field 6");
  pb::GenerateRequest nested;
  nested.set_text("x");
  nested.mutable_sampling()->GetReflection()->MutableUnknownFields(nested.mutable_sampling())->AddVarint(40, 1);
  expect_refused(nested, "GenerateRequest.sampling field 40");
  pb::GenerateRequest message;
  pb::ChatMessage* call = message.mutable_chat()->add_messages();
  call->set_role("assistant");
  call->GetReflection()->MutableUnknownFields(call)->AddLengthDelimited(3, "call_1");  // tool_call_id
  expect_refused(message, "GenerateRequest.chat.messages[0] field 3");
}

TEST_F(GrpcGenerateTest, CancelledCallAbortsAndFreesBlocks) {
  pb::GenerateRequest req;
  req.set_text("Go on");
  req.mutable_sampling()->set_max_tokens(400);
  req.mutable_sampling()->set_ignore_eos(true);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  pb::GenerateResponse r;
  ASSERT_TRUE(reader->Read(&r));
  ctx.TryCancel();
  while (reader->Read(&r)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 2000 && engine_->gauges().num_active_requests != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(engine_->gauges().num_active_requests, 0);
  EXPECT_EQ(engine_->gauges().num_free_kv_blocks, engine_->gauges().num_kv_blocks);
}

}  // namespace
}  // namespace weft
