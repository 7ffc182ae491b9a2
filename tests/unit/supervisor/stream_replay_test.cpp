#include "supervisor/stream_replay.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using json = nlohmann::json;

json chunk(const std::string& id, int64_t created, int index, const std::string& text) {
  return json{{"id", id}, {"object", "text_completion"}, {"created", created},
              {"choices", json::array({json{{"index", index}, {"text", text}, {"finish_reason", nullptr}}})}};
}

TEST(StreamReplayTest, TheFirstAttemptPassesThroughUnchanged) {
  StreamReplay replay;
  auto out = replay.on_chunk(chunk("cmpl-a", 10, 0, "Hel"));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->has_value());
  EXPECT_EQ(**out, chunk("cmpl-a", 10, 0, "Hel"));
  EXPECT_EQ(replay.num_sent(), 1u);
}

TEST(StreamReplayTest, AReplayDropsWhatWasSentAndContinuesUnderTheFirstId) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_chunk(chunk("cmpl-a", 10, 0, "Hel")).ok());
  ASSERT_TRUE(replay.on_chunk(chunk("cmpl-a", 10, 0, "lo")).ok());
  replay.begin_attempt();
  EXPECT_EQ(replay.attempt(), 2);
  // The restarted engine regenerates both events under a new id, then goes on.
  for (const char* text : {"Hel", "lo"}) {
    auto repeated = replay.on_chunk(chunk("cmpl-b", 20, 0, text));
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    EXPECT_FALSE(repeated->has_value()) << text;
  }
  auto fresh = replay.on_chunk(chunk("cmpl-b", 20, 0, " world"));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(fresh->has_value());
  EXPECT_EQ(**fresh, chunk("cmpl-a", 10, 0, " world"));
  EXPECT_EQ(replay.num_sent(), 3u);
}

TEST(StreamReplayTest, AReplayThatDiffersFromWhatWasSentIsAnError) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_chunk(chunk("a", 1, 0, "Hel")).ok());
  replay.begin_attempt();
  auto diverged = replay.on_chunk(chunk("b", 2, 0, "Hello"));
  ASSERT_FALSE(diverged.ok());
  EXPECT_EQ(diverged.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(diverged.status().message().find("differs"), std::string::npos);
}

TEST(StreamReplayTest, ChoicesAreTrackedEachOnTheirOwn) {
  // n = 2: the two choices' events interleave differently in the replay; each choice is compared
  // with its own history, and a chunk keeps only its new choices.
  StreamReplay replay;
  ASSERT_TRUE(replay.on_chunk(chunk("a", 1, 0, "x")).ok());
  ASSERT_TRUE(replay.on_chunk(chunk("a", 1, 1, "p")).ok());
  ASSERT_TRUE(replay.on_chunk(chunk("a", 1, 0, "y")).ok());
  replay.begin_attempt();
  json both = chunk("b", 2, 0, "x");
  both["choices"].push_back(json{{"index", 1}, {"text", "p"}, {"finish_reason", nullptr}});
  auto out = replay.on_chunk(both);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->has_value());
  json mixed = chunk("b", 2, 1, "q");  // new for choice 1
  mixed["choices"].push_back(json{{"index", 0}, {"text", "y"}, {"finish_reason", nullptr}});  // repeated
  out = replay.on_chunk(mixed);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->has_value());
  ASSERT_EQ((**out)["choices"].size(), 1u);
  EXPECT_EQ((**out)["choices"][0]["index"], 1);
  EXPECT_EQ((**out)["choices"][0]["text"], "q");
}

TEST(StreamReplayTest, TheUsageChunkPassesAndMalformedChunksAreErrors) {
  StreamReplay replay;
  ASSERT_TRUE(replay.on_chunk(chunk("a", 1, 0, "x")).ok());
  replay.begin_attempt();
  json usage = {{"id", "b"}, {"created", 2}, {"choices", json::array()}, {"usage", {{"completion_tokens", 3}}}};
  auto out = replay.on_chunk(usage);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->has_value());
  EXPECT_EQ((**out)["id"], "a");
  EXPECT_EQ((**out)["usage"]["completion_tokens"], 3);
  EXPECT_FALSE(replay.on_chunk(json::array()).ok());
  EXPECT_FALSE(replay.on_chunk(json{{"choices", json::array({json{{"text", "no index"}}})}}).ok());
}

}  // namespace
}  // namespace weft
