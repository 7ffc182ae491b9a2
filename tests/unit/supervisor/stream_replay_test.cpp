#include "supervisor/stream_replay.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using json = nlohmann::json;

json chunk_json(const std::string& id, int64_t created, int index, const std::string& text) {
  return json{{"id", id}, {"object", "text_completion"}, {"created", created},
              {"choices", json::array({json{{"index", index}, {"text", text}, {"finish_reason", nullptr}}})}};
}
std::string chunk(const std::string& id, int64_t created, int index, const std::string& text) {
  return chunk_json(id, created, index, text).dump();
}
// The payload StreamReplay sends, parsed back.
json sent(const absl::StatusOr<std::optional<std::string>>& out) {
  EXPECT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out.ok() && out->has_value());
  return out.ok() && out->has_value() ? json::parse(**out) : json();
}

TEST(StreamReplayTest, TheFirstAttemptPassesThroughUnchanged) {
  StreamReplay replay;
  auto out = replay.on_event(chunk("cmpl-a", 10, 0, "Hel"));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->has_value());
  EXPECT_EQ(**out, chunk("cmpl-a", 10, 0, "Hel"));  // byte for byte: not even re-dumped
  EXPECT_EQ(replay.num_sent(), 1u);
}

TEST(StreamReplayTest, AReplayDropsWhatWasSentAndContinuesUnderTheFirstId) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_event(chunk("cmpl-a", 10, 0, "Hel")).ok());
  ASSERT_TRUE(replay.on_event(chunk("cmpl-a", 10, 0, "lo")).ok());
  replay.begin_attempt();
  EXPECT_EQ(replay.attempt(), 2);
  // The restarted engine regenerates both events under a new id, then goes on.
  for (const char* text : {"Hel", "lo"}) {
    auto repeated = replay.on_event(chunk("cmpl-b", 20, 0, text));
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    EXPECT_FALSE(repeated->has_value()) << text;
  }
  EXPECT_EQ(sent(replay.on_event(chunk("cmpl-b", 20, 0, " world"))), chunk_json("cmpl-a", 10, 0, " world"));
  EXPECT_EQ(replay.num_sent(), 3u);
}

TEST(StreamReplayTest, AReplayThatDiffersFromWhatWasSentIsAnError) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_event(chunk("a", 1, 0, "Hel")).ok());
  replay.begin_attempt();
  auto diverged = replay.on_event(chunk("b", 2, 0, "Hello"));
  ASSERT_FALSE(diverged.ok());
  EXPECT_EQ(diverged.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(diverged.status().message().find("differs"), std::string::npos);
}

TEST(StreamReplayTest, ChoicesAreTrackedEachOnTheirOwn) {
  // n = 2: the two choices' events interleave differently in the replay; each choice is compared
  // with its own history, and a chunk keeps only its new choices.
  StreamReplay replay;
  ASSERT_TRUE(replay.on_event(chunk("a", 1, 0, "x")).ok());
  ASSERT_TRUE(replay.on_event(chunk("a", 1, 1, "p")).ok());
  ASSERT_TRUE(replay.on_event(chunk("a", 1, 0, "y")).ok());
  replay.begin_attempt();
  json both = chunk_json("b", 2, 0, "x");
  both["choices"].push_back(json{{"index", 1}, {"text", "p"}, {"finish_reason", nullptr}});
  auto out = replay.on_event(both.dump());
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
  json mixed = chunk_json("b", 2, 1, "q");  // new for choice 1
  mixed["choices"].push_back(json{{"index", 0}, {"text", "y"}, {"finish_reason", nullptr}});  // repeated
  const json forwarded = sent(replay.on_event(mixed.dump()));
  ASSERT_EQ(forwarded["choices"].size(), 1u);
  EXPECT_EQ(forwarded["choices"][0]["index"], 1);
  EXPECT_EQ(forwarded["choices"][0]["text"], "q");
}

TEST(StreamReplayTest, TheUsageChunkPassesAndMalformedChunksAreErrors) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_event(chunk("a", 1, 0, "x")).ok());
  replay.begin_attempt();
  json usage = {{"id", "b"}, {"created", 2}, {"choices", json::array()}, {"usage", {{"completion_tokens", 3}}}};
  const json out = sent(replay.on_event(usage.dump()));
  EXPECT_EQ(out["id"], "a");
  EXPECT_EQ(out["usage"]["completion_tokens"], 3);
  EXPECT_FALSE(replay.on_event("[]").ok());
  EXPECT_FALSE(replay.on_event("not json").ok());
  EXPECT_FALSE(replay.on_event(json{{"choices", json::array({json{{"text", "no index"}}})}}.dump()).ok());
}

}  // namespace
}  // namespace weft
