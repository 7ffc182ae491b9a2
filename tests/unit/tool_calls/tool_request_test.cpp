// tools / tool_choice / parallel_tool_calls: what is accepted, and the 400s naming the field.
#include "tool_calls/tool_request.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using nlohmann::json;

json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather"},
            {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}};
}

json time_tool() { return {{"type", "function"}, {"function", {{"name", "get_time"}}}}; }

TEST(ToolRequest, DefaultsFollowOpenAi) {
  auto none = tool_request_from_body(json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->choice, ToolChoiceMode::kNone);
  EXPECT_FALSE(none->parses_calls());
  EXPECT_TRUE(none->template_tools.is_null());  // the template's tools: None
  auto empty = tool_request_from_body({{"tools", json::array()}});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->choice, ToolChoiceMode::kNone);
  EXPECT_EQ(empty->template_tools, nlohmann::ordered_json::array());  // vLLM passes [] on
  auto tools = tool_request_from_body({{"tools", {weather_tool(), time_tool()}}});
  ASSERT_TRUE(tools.ok()) << tools.status();
  EXPECT_EQ(tools->choice, ToolChoiceMode::kAuto);
  EXPECT_TRUE(tools->parses_calls());
  EXPECT_FALSE(tools->forces_calls());
  EXPECT_TRUE(tools->parallel);
  ASSERT_EQ(tools->functions.size(), 2u);
  // A function without parameters takes an empty object.
  EXPECT_EQ(tools->functions[1].parameters, (nlohmann::ordered_json{{"type", "object"}, {"properties", nlohmann::ordered_json::object()}}));
  // The template sees the tools as given.
  EXPECT_EQ(tools->template_tools.dump(), json::array({weather_tool(), time_tool()}).dump());
}

TEST(ToolRequest, Choices) {
  auto required = tool_request_from_body({{"tools", {weather_tool()}}, {"tool_choice", "required"}, {"parallel_tool_calls", false}});
  ASSERT_TRUE(required.ok());
  EXPECT_EQ(required->choice, ToolChoiceMode::kRequired);
  EXPECT_TRUE(required->forces_calls());
  EXPECT_FALSE(required->parallel);
  EXPECT_EQ(required->callable().size(), 1u);
  auto named = tool_request_from_body(
      {{"tools", {weather_tool(), time_tool()}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->choice, ToolChoiceMode::kNamed);
  ASSERT_EQ(named->callable().size(), 1u);
  EXPECT_EQ(named->callable()[0]->name, "get_time");
  auto none = tool_request_from_body({{"tools", {weather_tool()}}, {"tool_choice", "none"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->parses_calls());
  EXPECT_EQ(none->functions.size(), 1u);  // still rendered into the template
}

TEST(ToolRequest, BadFieldsNameThemselves) {
  json bad_type = weather_tool();
  bad_type["type"] = "retrieval";
  json no_name = weather_tool();
  no_name["function"].erase("name");
  json bad_name = weather_tool();
  bad_name["function"]["name"] = "get weather";
  json bad_params = weather_tool();
  bad_params["function"]["parameters"] = "object";
  json array_params = weather_tool();
  array_params["function"]["parameters"] = {{"type", "array"}};
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"tools", "x"}}, "tools: "},
      {{{"tools", {bad_type}}}, "tools[0].type: "},
      {{{"tools", {weather_tool(), no_name}}}, "tools[1].function.name: required"},
      {{{"tools", {bad_name}}}, "tools[0].function.name: "},
      {{{"tools", {weather_tool(), weather_tool()}}}, "tools[1].function.name: duplicate function name \"get_weather\""},
      {{{"tools", {bad_params}}}, "tools[0].function.parameters: "},
      {{{"tools", {array_params}}}, "tools[0].function.parameters: "},
      {{{"tools", {weather_tool()}}, {"tool_choice", "sometimes"}}, "tool_choice: "},
      {{{"tools", {weather_tool()}}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}},
       "tool_choice: function \"nope\" is not among the request's tools"},
      {{{"tool_choice", "required"}}, "tool_choice: "},
      {{{"tools", {weather_tool()}}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls: "},
  };
  for (const auto& [body, prefix] : cases) {
    auto got = tool_request_from_body(body);
    ASSERT_FALSE(got.ok()) << body;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(got.status().message()).rfind(prefix, 0), 0u) << got.status();
  }
  json many = json::array();
  for (int i = 0; i <= kMaxTools; ++i) {
    json t = time_tool();
    t["function"]["name"] = "f" + std::to_string(i);
    many.push_back(t);
  }
  EXPECT_FALSE(tool_request_from_body({{"tools", many}}).ok());
}

}  // namespace
}  // namespace weft
