// The "weft_debug" body field and the bounded report store (the served report itself is checked
// end to end: tests/e2e/test_serve_debug_report.py).
#include "serving/served_debug_report.h"

#include <gtest/gtest.h>

#include "debug_report/report_store.h"

namespace weft {
namespace {

using nlohmann::json;

TEST(WeftDebugField, AbsentIsOffAndTheBodyIsUnchanged) {
  json body = {{"prompt", "x"}};
  auto on = take_weft_debug_field(body, false);
  ASSERT_TRUE(std::holds_alternative<bool>(on));
  EXPECT_FALSE(std::get<bool>(on));
  EXPECT_EQ(body, json({{"prompt", "x"}}));
}

TEST(WeftDebugField, RefusedWhileReportsAreOffEvenWhenFalse) {
  for (bool value : {true, false}) {
    json body = {{"prompt", "x"}, {"weft_debug", value}};
    auto on = take_weft_debug_field(body, false);
    ASSERT_TRUE(std::holds_alternative<ApiError>(on));
    const ApiError& e = std::get<ApiError>(on);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "weft_debug");
    EXPECT_NE(e.message.find("--enable-debug-reports"), std::string::npos) << e.message;
  }
}

TEST(WeftDebugField, EnabledReadsAndRemovesABoolean) {
  json body = {{"prompt", "x"}, {"weft_debug", true}};
  auto on = take_weft_debug_field(body, true);
  ASSERT_TRUE(std::holds_alternative<bool>(on));
  EXPECT_TRUE(std::get<bool>(on));
  EXPECT_FALSE(body.contains("weft_debug"));
  json options = {{"weft_debug", {{"attention_layers", "all"}}}};
  auto refused = take_weft_debug_field(options, true);
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).param, "weft_debug");
}

TEST(PrepareDebugRequest, OneSequenceNotStreamedGetsDiagnostics) {
  GenerationRequest req;
  req.prompts.resize(1);
  EXPECT_FALSE(prepare_debug_request(req).has_value());
  const SamplingParams& p = req.prompts[0].engine_request.params;
  EXPECT_TRUE(p.diagnostics);
  EXPECT_EQ(p.logprobs, 5);

  GenerationRequest kept;
  kept.prompts.resize(1);
  kept.prompts[0].engine_request.params.logprobs = 2;
  EXPECT_FALSE(prepare_debug_request(kept).has_value());
  EXPECT_EQ(kept.prompts[0].engine_request.params.logprobs, 2);  // the response's N stays

  GenerationRequest streamed;
  streamed.prompts.resize(1);
  streamed.stream = true;
  ASSERT_TRUE(prepare_debug_request(streamed).has_value());
  GenerationRequest two;
  two.prompts.resize(1);
  two.prompts[0].engine_request.params.n = 2;
  ASSERT_TRUE(prepare_debug_request(two).has_value());
  GenerationRequest prompts;
  prompts.prompts.resize(2);
  auto e = prepare_debug_request(prompts);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "weft_debug");
}

TEST(DebugReportStore, KeepsTheNewestUpToCapacity) {
  DebugReportStore store(2);
  store.put("a", {"{\"a\":1}", "<p>a</p>"});
  store.put("b", {"{}", "b"});
  ASSERT_TRUE(store.get("a").has_value());
  EXPECT_EQ(store.get("a")->html, "<p>a</p>");
  store.put("c", {"{}", "c"});
  EXPECT_FALSE(store.get("a").has_value());
  EXPECT_TRUE(store.get("b").has_value());
  EXPECT_TRUE(store.get("c").has_value());
  store.put("b", {"{}", "b2"});  // a replacement is not a new entry
  EXPECT_EQ(store.get("b")->html, "b2");
  EXPECT_TRUE(store.get("c").has_value());
  EXPECT_FALSE(store.get("missing").has_value());
}

}  // namespace
}  // namespace weft
