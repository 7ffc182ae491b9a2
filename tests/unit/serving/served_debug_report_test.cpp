// The "weft_debug" body field and the bounded report store (the served report itself is checked
// end to end: tests/e2e/test_serve_debug_report.py).
#include "serving/served_debug_report.h"

#include <gtest/gtest.h>

#include "debug_report/report_store.h"

namespace weft {
namespace {

using nlohmann::json;

ServedModel model_of(int layers, int heads, bool records = true) {
  ServedModel m;
  m.num_layers = layers;
  m.num_attention_heads = heads;
  m.records_attention = records;
  return m;
}

using Asked = std::optional<AttentionSelection>;

TEST(WeftDebugField, AbsentIsOffAndTheBodyIsUnchanged) {
  json body = {{"prompt", "x"}};
  auto on = take_weft_debug_field(body, false, model_of(4, 8));
  ASSERT_TRUE(std::holds_alternative<Asked>(on));
  EXPECT_FALSE(std::get<Asked>(on).has_value());
  EXPECT_EQ(body, json({{"prompt", "x"}}));
}

TEST(WeftDebugField, RefusedWhileReportsAreOffEvenWhenFalse) {
  for (bool value : {true, false}) {
    json body = {{"prompt", "x"}, {"weft_debug", value}};
    auto on = take_weft_debug_field(body, false, model_of(4, 8));
    ASSERT_TRUE(std::holds_alternative<ApiError>(on));
    const ApiError& e = std::get<ApiError>(on);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "weft_debug");
    EXPECT_NE(e.message.find("--enable-debug-reports"), std::string::npos) << e.message;
  }
}

TEST(WeftDebugField, TrueRecordsTheDefaultAttentionFalseNothing) {
  json body = {{"prompt", "x"}, {"weft_debug", true}};
  auto on = take_weft_debug_field(body, true, model_of(4, 8));
  ASSERT_TRUE(std::holds_alternative<Asked>(on));
  ASSERT_TRUE(std::get<Asked>(on).has_value());
  EXPECT_EQ(std::get<Asked>(on)->layers, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(std::get<Asked>(on)->heads, (std::vector<int>{0, 1}));
  EXPECT_FALSE(body.contains("weft_debug"));
  json off = {{"weft_debug", false}};
  auto none = take_weft_debug_field(off, true, model_of(4, 8));
  ASSERT_TRUE(std::holds_alternative<Asked>(none));
  EXPECT_FALSE(std::get<Asked>(none).has_value());
  // An executor that records no attention (--device cuda): a report without it.
  json cuda = {{"weft_debug", true}};
  auto plain = take_weft_debug_field(cuda, true, model_of(4, 8, false));
  ASSERT_TRUE(std::holds_alternative<Asked>(plain));
  EXPECT_TRUE(std::get<Asked>(plain)->layers.empty());
}

TEST(WeftDebugField, AnObjectChoosesLayersAndHeads) {
  json body = {{"weft_debug", {{"attention_layers", {3, 1, 3}}, {"attention_heads", json::array()}}}};
  auto on = take_weft_debug_field(body, true, model_of(4, 8));
  ASSERT_TRUE(std::holds_alternative<Asked>(on)) << std::get<ApiError>(on).message;
  EXPECT_EQ(std::get<Asked>(on)->layers, (std::vector<int>{1, 3}));  // sorted, once each
  EXPECT_TRUE(std::get<Asked>(on)->heads.empty());
  json heads_only = {{"weft_debug", {{"attention_heads", {7}}}}};
  auto defaulted = take_weft_debug_field(heads_only, true, model_of(4, 8));
  ASSERT_TRUE(std::holds_alternative<Asked>(defaulted));
  EXPECT_EQ(std::get<Asked>(defaulted)->layers, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(std::get<Asked>(defaulted)->heads, (std::vector<int>{7}));
}

TEST(WeftDebugField, BadValuesAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> cases = {
      {"yes", "expected true, false or an object"},
      {{{"attention_layers", "all"}}, "weft_debug.attention_layers: expected an array"},
      {{{"attention_layers", {4}}}, "weft_debug.attention_layers: 4 is not an index in [0, 4)"},
      {{{"attention_heads", {-1}}}, "weft_debug.attention_heads: -1 is not an index in [0, 8)"},
      {{{"attention_heads", {0.5}}}, "weft_debug.attention_heads: 0.5 is not an index"},
      {{{"layers", {0}}}, "weft_debug.layers: unknown member"},
  };
  for (const auto& [value, words] : cases) {
    json body = {{"weft_debug", value}};
    auto refused = take_weft_debug_field(body, true, model_of(4, 8));
    ASSERT_TRUE(std::holds_alternative<ApiError>(refused)) << value.dump();
    EXPECT_EQ(std::get<ApiError>(refused).param, "weft_debug");
    EXPECT_NE(std::get<ApiError>(refused).message.find(words), std::string::npos)
        << std::get<ApiError>(refused).message;
  }
  json cuda = {{"weft_debug", {{"attention_layers", {0}}}}};
  auto refused = take_weft_debug_field(cuda, true, model_of(4, 8, false));
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_NE(std::get<ApiError>(refused).message.find("--device cuda"), std::string::npos);
}

TEST(PrepareDebugRequest, OneSequenceGetsDiagnosticsAndItsAttention) {
  const AttentionSelection attention = {{1}, {0, 2}};
  GenerationRequest req;
  req.prompts.resize(1);
  EXPECT_FALSE(prepare_debug_request(req, attention).has_value());
  const Request& r = req.prompts[0].engine_request;
  EXPECT_TRUE(r.params.diagnostics);
  EXPECT_EQ(r.params.logprobs, 5);
  ASSERT_TRUE(r.record_attention.has_value());
  EXPECT_EQ(r.record_attention->heads, (std::vector<int>{0, 2}));

  GenerationRequest kept;
  kept.prompts.resize(1);
  kept.prompts[0].engine_request.params.logprobs = 2;
  EXPECT_FALSE(prepare_debug_request(kept, AttentionSelection{{1}, {}}).has_value());
  EXPECT_EQ(kept.prompts[0].engine_request.params.logprobs, 2);  // the response's N stays
  EXPECT_FALSE(kept.prompts[0].engine_request.record_attention.has_value());  // no heads: none

  GenerationRequest streamed;
  streamed.prompts.resize(1);
  streamed.stream = true;
  EXPECT_FALSE(prepare_debug_request(streamed, attention).has_value());
  GenerationRequest two;
  two.prompts.resize(1);
  two.prompts[0].engine_request.params.n = 2;
  ASSERT_TRUE(prepare_debug_request(two, attention).has_value());
  GenerationRequest prompts;
  prompts.prompts.resize(2);
  auto e = prepare_debug_request(prompts, attention);
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
